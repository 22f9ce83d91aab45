"""What Streamlit 1.67's own URL binding (``bind="query-params"``) and ``persist_state`` cannot do for this app, each
reproduced in Chromium on a two-page test app (``tests/e2e/apps/url_limits.py``). They are why every control keeps
its URL through the app's own table (``app/url_params.py``) and why ``app.state.init`` writes the shared keys back:
the day one of these tests fails, Streamlit lifted the limitation and the controls it concerns can move to it.
"""

from __future__ import annotations

import contextlib
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page

from conftest import running_app

pytestmark = pytest.mark.e2e
SCRIPT = "tests/e2e/apps/url_limits.py"
READ = """() => {
  const probes = [...document.querySelectorAll('[data-testid="stText"]')].filter(e => e.innerText.startsWith('PROBE '));
  return probes.length ? probes[probes.length - 1].innerText.slice(6) : null;
}"""


@pytest.fixture(scope="module")
def servers():
    """The test app's server in a ``LIMIT_MODE``, started on first use and kept for the module: mode -> its URL."""
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}

        def url(mode: str) -> str:
            if mode not in urls:
                app = running_app(f"e2e-url-limits-{mode}.log", {"LIMIT_MODE": mode}, script=SCRIPT)
                urls[mode] = stack.enter_context(app)
            return urls[mode]

        yield url


@pytest.fixture(params=["bind", "persist"])
def served(request, servers) -> tuple[str, str]:
    return request.param, servers(request.param)


@pytest.fixture
def bound(servers) -> str:
    return servers("bind")


@pytest.fixture
def own(servers) -> str:
    return servers("own")


class Probe:
    """The test app's PROBE line: :meth:`wait` returns the next full run's values."""

    def __init__(self, page: Page):
        self.page, self.runs = page, 0

    def open(self, url: str) -> dict:
        self.page.goto(url)
        self.runs = 0
        return self.wait()

    def wait(self) -> dict:
        self.page.wait_for_function(
            f"() => {{ const t = ({READ})(); return !!t && JSON.parse(t).runs > {self.runs}; }}"
        )
        self.page.wait_for_function(
            "() => !(document.querySelector('[data-testid=stStatusWidget]')?.innerText || '').includes('Running')"
        )
        data = json.loads(self.page.evaluate(READ))
        self.runs = data["runs"]
        return data

    def nav(self, title: str) -> dict:
        self.page.locator('[data-testid="stSidebarNavLink"]', has_text=title).click()
        return self.wait()

    def layer(self, value: int) -> dict:
        self.page.get_by_label("Layer").fill(str(value))
        self.page.get_by_label("Layer").press("Enter")
        return self.wait()


def query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_a_links_values_do_not_reach_the_other_page_when_the_first_click_switches_pages(served, page: Page):
    """Why ``app.state.init`` writes the shared keys back on every run (bound or persisted alike)."""
    mode, url = served
    probe = Probe(page)
    first = probe.open(url + "/?text=hello&layer=4")
    assert (first["text"], first["layer"]) == ("hello", 4)
    seen = probe.nav("b")
    assert (seen["text"], seen["layer"]) == ("default text", 0), f"{mode}: values carried over, limitation lifted"
    probe.open(url + "/?text=hello&layer=4")
    page.get_by_role("button", name="noop").click()
    probe.wait()
    seen = probe.nav("b")  # after one rerun the browser asked for, they do
    assert (seen["text"], seen["layer"]) == ("hello", 4)


def test_a_page_switch_with_bound_widgets_takes_several_back_presses(bound, page: Page):
    """Why no control is bound: Back must walk the views one press each (tests/e2e/test_history_e2e.py)."""
    probe = Probe(page)
    probe.open(bound + "/")
    probe.layer(3)
    before, entries = page.url, page.evaluate("history.length")
    assert probe.nav("b")["layer"] == 3
    assert page.evaluate("history.length") - entries > 1, "one history entry per page switch: limitation lifted"
    page.go_back()
    seen = probe.wait()
    assert page.url != before and seen["layer"] == 0  # one press later: a view the user never saw


def test_leaving_a_page_with_one_bound_widget_of_its_own_takes_several_back_presses(own, page: Page):
    """Why not even a control only one page has is bound: leaving the page drops its parameter in an entry of its
    own, so Back lands on a view the user never saw."""
    probe = Probe(page)
    probe.open(own + "/")
    page.get_by_label("Zoom").fill("5")
    page.get_by_label("Zoom").press("Enter")
    assert probe.wait()["zoom"] == 5
    before, entries = page.url, page.evaluate("history.length")
    probe.nav("b")
    assert page.evaluate("history.length") - entries > 1, "one history entry per page switch: limitation lifted"
    page.go_back()
    seen = probe.wait()
    assert page.url != before and seen["zoom"] == 0  # one press later: page a without its zoom


def test_bound_widgets_refuse_the_apps_link_spelling(bound, page: Page):
    """Why older links (``?present=1``, ``?model=minilm``) need the app's readers: Streamlit reads only its own
    spelling (``true``, a selectbox's displayed label) and drops the rest."""
    probe = Probe(page)
    seen = probe.open(bound + "/?present=1&model=gpt2")
    assert (seen["present"], seen["model"]) == (False, "minilm"), "the app's spelling is read: limitation lifted"
    seen = probe.open(bound + "/?present=true&model=GPT2")
    assert (seen["present"], seen["model"]) == (True, "gpt2")


def test_a_bound_widget_in_a_form_writes_the_url_before_the_form_is_sent(bound, page: Page):
    """Why decoding settings (a form) stay in the app's table: a link must name the request that was run."""
    probe = Probe(page)
    probe.open(bound + "/")
    page.get_by_role("slider").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('tokens=21')")
    assert json.loads(page.evaluate(READ))["tokens"] == 20, "the URL waited for the form: limitation lifted"


def test_a_page_switch_drops_the_parameters_no_widget_binds(bound, page: Page):
    """Why ``hide`` (no widget holds it) stays in the app's table."""
    probe = Probe(page)
    probe.open(bound + "/?hide=model&layer=2")
    probe.nav("b")
    assert "hide" not in query(page), "an unbound parameter survived a page switch: limitation lifted"
