"""The shared causal-mask toggle starts at the model's own setting (``Model.default_causal``)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from apptest_helpers import ROOT, assert_clean  # noqa: E402  (tests/app is on sys.path)


def _script() -> None:
    import sys

    import streamlit as st

    sys.path.insert(0, st.session_state["root"])
    from app.controls.pickers import causal_toggle

    st.session_state["shown"] = causal_toggle(st.session_state["model_id"], st.session_state["default"])


def _run(at: AppTest, model_id: str, default: bool) -> bool:
    at.session_state["model_id"] = model_id
    at.session_state["default"] = default
    at.run()
    assert_clean(at)
    return at.session_state["shown"]


def test_toggle_starts_at_the_models_own_setting_and_resets_per_model() -> None:
    at = AppTest.from_function(_script, default_timeout=30)
    at.session_state["root"] = str(ROOT)
    # a BERT-family model configured as a decoder: spec.family is "encoder", but it masks by itself
    assert _run(at, "bert-decoder-folder", True) is True
    assert "own setting: on" in at.toggle[0].help
    at.toggle[0].set_value(False).run()
    assert at.session_state["shown"] is False  # the user's choice stays while the model stays
    assert _run(at, "bert-decoder-folder", True) is False
    assert _run(at, "minilm", False) is False  # a new model starts at its own setting
    assert "own setting: off" in at.toggle[0].help
    assert _run(at, "tiny-random-gpt2", True) is True
