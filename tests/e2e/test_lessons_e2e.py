"""The Lessons page in a real browser: walk from the first step to the last with Next, answer a knowledge
check, and follow a step's link to the page it names, opened on the step's sentence.

Waits are on selectors or conditions, never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.views.lessons.lesson_file import Predict
from app.views.lessons.plan import STEPS, STORY
from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view  # noqa: E402

pytestmark = pytest.mark.e2e

LOAD_MS = 90_000  # a step's check may load a model (MiniLM, the stories GPT, the RNN translator)
N = len(STEPS)


def expect_step(page: Page, k: int) -> None:
    expect(page.get_by_text(f"Step {k} of {N}")).to_be_visible(timeout=LOAD_MS)
    expect(page.get_by_role("heading", name=f"{k}. {STEPS[k - 1].title}", level=2)).to_be_visible(timeout=LOAD_MS)
    expect_idle(page, LOAD_MS)
    expect_no_exception(page)


def test_walk_the_lesson_answer_a_check_and_open_a_step(page: Page, app_url: str, artifacts: Path):
    page.goto(f"{app_url}/lessons")
    expect(page.get_by_role("heading", name="Lessons", level=1)).to_be_visible(timeout=LOAD_MS)
    expect_step(page, 1)

    # a multiple-choice check: answer it, the explanation and the score appear
    first = STEPS[0].check
    page.get_by_text(first.options[first.answer], exact=True).click()
    expect(page.get_by_text(first.explain)).to_be_visible(timeout=LOAD_MS)
    expect(page.get_by_text(f"1 of {N} answered, 1 right")).to_be_visible()

    for k in range(2, N + 1):
        page.get_by_role("button", name=re.compile("Next")).first.click()
        expect_step(page, k)
        expect(page).to_have_url(re.compile(rf"lesson_step={k}\b"))
    expect(page.get_by_role("button", name=re.compile("Next")).first).to_be_disabled()
    page.screenshot(path=str(artifacts / "lessons_last_step.png"))

    # a predict check: click a token, the real head's weights are drawn
    k, step = next(
        (i, s)
        for i, s in enumerate(STEPS, start=1)
        if isinstance(s.check, Predict) and s.check.model == "tiny-gpt-stories"
    )
    page.goto(f"{app_url}/lessons?lesson_step={k}")
    expect_step(page, k)
    page.locator('[data-testid="stButtonGroup"]').get_by_text("tom", exact=True).click()
    expect(page.locator(PLOT).first.locator(".gtitle")).to_have_text("Where “she” looks", timeout=LOAD_MS)
    expect(page.get_by_text(re.compile(r"You picked tom \(weight 0\.000\)"))).to_be_visible()
    page.screenshot(path=str(artifacts / "lessons_reveal.png"))

    # the step's link opens Explore on the step's story, with the step's model, layer and head
    link = next(each for each in step.links if each.params.get("text") == STORY)
    page.get_by_role("link", name=link.label).click()
    expect(page.get_by_role("heading", name="Explore attention", level=1)).to_be_visible(timeout=LOAD_MS)
    expect(page.locator('[data-testid="stTextArea"] textarea').first).to_have_value(STORY, timeout=LOAD_MS)
    expect(page.get_by_role("combobox", name="Model")).to_have_value(
        re.compile("GPT trained on stories", re.I), timeout=LOAD_MS
    )
    expect(page.get_by_role("combobox", name="Layer")).to_have_value(link.params["layer"])
    layer, head = link.params["layer"], link.params["head"]  # the view opens on the step's head
    expect_view(page, f"Layer {layer}, head {head} · causal mask on", LOAD_MS)
    expect(page.get_by_role("button", name=f"Layer {layer}, head {head}")).to_have_attribute("aria-pressed", "true")
    expect_idle(page, LOAD_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "lessons_link_explore.png"))
