"""The rollout's discard-rule picker (``engine.analysis.rollout.DISCARD_RULES``) and the sentence saying which rule a
map used (Heads and ViT pages)."""

from __future__ import annotations

import streamlit as st

from app.state import PERSIST, choose
from engine.analysis.rollout import DISCARD_RULES

DEFAULT_RULE = "all-off-diagonal"
LABELS = {"all-off-diagonal": "All off-diagonal weights", "keep-class-token": "Keep attention to the class token"}
SHORT = {"all-off-diagonal": "all off-diagonal", "keep-class-token": "class token kept"}


def discard_rule_picker(key: str, class_token: str) -> str:
    """A radio for the discard rule; returns a valid rule. ``class_token``: how the page names position 0."""
    choose(key, DISCARD_RULES, DEFAULT_RULE)
    st.radio(
        "Discard rule",
        list(DISCARD_RULES),
        format_func=LABELS.get,
        key=key,
        horizontal=True,
        **PERSIST,
        help=(
            f"Which weights the discard ratio may drop. **All off-diagonal weights**: "
            f"{DISCARD_RULES['all-off-diagonal']}, so at high ratios most of the column of {class_token} can "
            f"go. **Keep attention to the class token** ({class_token}): {DISCARD_RULES['keep-class-token']}. "
            "A token's weight on itself is always kept. Nothing is dropped at ratio 0."
        ),
    )
    rule = st.session_state.get(key)
    return rule if rule in DISCARD_RULES else DEFAULT_RULE


def discard_sentence(ratio: float, rule: str, class_token: str) -> str:
    """One caption sentence: what the discard setting did to this map (``class_token`` names position 0)."""
    if ratio <= 0:
        return "Nothing is discarded (ratio 0), so the discard rule makes no difference here."
    if rule == "keep-class-token":
        return (
            f"Before multiplying, each layer lost its weakest {ratio:.0%} of the off-diagonal weights outside "
            f"the column of {class_token} (rule: keep attention to the class token): every token's weight on "
            f"{class_token} was kept. The other rule drops from the whole map, that column included."
        )
    return (
        f"Before multiplying, each layer lost its weakest {ratio:.0%} of all off-diagonal weights (rule: all "
        f"off-diagonal), attention to {class_token} included. The other rule keeps the column of {class_token}."
    )
