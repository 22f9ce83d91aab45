"""The server's model policy as a student meets it: Explore's and the ViT page's model fields (AppTest).

A typed folder outside the allowed directories gets one message whether it exists or not; a folder
inside them loads; ``AP_HUB=off`` removes the Hub models and the Hub field; and a 10,000-character
input comes back in no message longer than ~200 characters, with no server folder named anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import assert_clean, assert_head_and_grid, messages, open_page, run_app
from engine.policy import FOLDER_REFUSED, FOLDERS_OFF, HUB_OFF
from engine.registry import HUB_SUGGESTIONS

pytestmark = pytest.mark.reliability

ROOT = str(Path(__file__).resolve().parents[2])
HOME = str(Path.home())
HUGE = 10_000
ALERTS = ("error", "warning", "info", "success", "exception", "toast")
TEXTS = ("markdown", "caption", "title", "subheader", "header", "text", "code", "expander")


def alerts(at: AppTest) -> list[str]:
    return [str(getattr(e, "value", "")) + str(getattr(e, "message", "")) for kind in ALERTS for e in at.get(kind)]


def page_texts(at: AppTest) -> list[str]:
    out = []
    for kind in TEXTS:
        for element in at.get(kind):
            out.append(str(getattr(element, "value", None) or getattr(element, "label", None) or ""))
    return out


def type_model(at: AppTest, key: str, text: str) -> AppTest:
    at.text_input(key=key).input(text).run()
    assert_clean(at)
    return at


def reason(message: str) -> str:
    """The part of "Could not load 'X': why" after the model's name."""
    assert message.startswith("Could not load "), message
    return message.split(": ", 1)[1]


def test_explore_refuses_typed_folders_with_one_message(folders):
    seen = []
    for typed in (str(folders.outside), str(folders.missing), "~/.ssh"):
        at = type_model(run_app(), "hub_id", typed)
        [error] = messages(at.error)
        seen.append(reason(error))
        assert not at.get("plotly_chart")
        assert HOME not in error and ROOT not in error
    assert seen == [FOLDERS_OFF] * 3


def test_explore_loads_a_folder_only_inside_the_allowed_dir(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    at = type_model(run_app(), "hub_id", str(folders.inside))
    assert not at.error, messages(at.error)
    assert_head_and_grid(at)
    assert "folder" in at.text_input(key="hub_id").label.lower()

    refused = []
    for typed in (str(folders.outside), str(folders.missing), "~/.ssh", str(folders.link), folders.dotdot):
        type_model(at, "hub_id", typed)
        refused.append(reason(messages(at.error)[0]))
        assert not at.get("plotly_chart")
    assert refused == [FOLDER_REFUSED] * 5

    # the model stays cached, but it is only served under the rules that admitted it
    monkeypatch.delenv("AP_MODEL_DIRS")
    at = run_app(hub_id=str(folders.inside))
    assert reason(messages(at.error)[0]) == FOLDERS_OFF


def test_the_vit_page_refuses_typed_folders_too(folders):
    for typed in (str(folders.outside), str(folders.missing)):
        at = open_page("vit", vit_hub_id=typed)
        assert_clean(at)
        assert [reason(e) for e in messages(at.error)] == [FOLDERS_OFF]
        assert not at.get("plotly_chart")


def test_hub_off_removes_hub_models_and_the_field(monkeypatch):
    monkeypatch.setenv("AP_HUB", "off")
    at = run_app(hub_id="gpt2")  # typed earlier: there is no field now, so it is not used
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert not at.text_input  # neither Hub ids nor folders: no field
    options = at.selectbox(key="model").options
    assert options and not any(s.label in option for s in HUB_SUGGESTIONS for option in options), options
    assert_head_and_grid(at)

    at = open_page("vit", vit_hub_id="google/vit-base-patch16-224")
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert not any("(Hub)" in option for option in at.selectbox(key="vit_model").options)


def test_hub_off_with_folders_on_refuses_hub_ids(folders, monkeypatch):
    monkeypatch.setenv("AP_HUB", "off")
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    at = run_app()
    assert at.text_input(key="hub_id").label == "Folder"
    type_model(at, "hub_id", "gpt2")
    assert [reason(e) for e in messages(at.error)] == [HUB_OFF]


LONG = {"letters": "a" * HUGE, "path": "/" + "a" * HUGE, "home": "~/" + "a" * HUGE, "hub": "org/" + "a" * HUGE}


@pytest.mark.parametrize("setting", ["defaults", "dirs"])
@pytest.mark.parametrize("page, key", [("explore", "hub_id"), ("vit", "vit_hub_id")])
def test_a_huge_typed_id_comes_back_short(page, key, setting, folders, monkeypatch):
    if setting == "dirs":
        monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    for name, text in LONG.items():
        at = open_page(page, **{key: text}) if page != "explore" else run_app(**{key: text})
        assert_clean(at)
        shown = alerts(at)
        assert shown, name
        for message in shown:
            assert len(message) <= 200, (name, len(message), message[:300])
            assert ROOT not in message and HOME not in message, message
        for text_on_page in page_texts(at):
            assert "a" * 81 not in text_on_page, (name, text_on_page[:120])


def test_a_huge_unknown_word_comes_back_short():
    """Our word-level model names words it never saw: a 10,000-character word is cut."""
    at = run_app(text="the " + "x" * HUGE + " cat", model="tiny-gpt-stories")
    assert_clean(at)
    assert any("never saw" in m for m in alerts(at)), alerts(at)
    for message in alerts(at):
        assert len(message) <= 200, message[:300]
