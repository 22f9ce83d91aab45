"""Explore's section "Is each head doing its job?": each head of the open layer, its strongest role over the head
finder's corpus against what it does on the typed sentence, and a one-click edit where a role cannot show."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.links import open_page
from app.runtime.request import TraceRequest
from app.state import K, current_text
from app.ui.clicks import once
from app.views.explore.keys import Explore
from app.views.head_finder import data
from app.views.head_finder.keys import METRICS, Finder

#: the roles a head may be known for (its share of a row on such keys), in the order ties are read
ROLES = ("induction", "previous_token", "duplicate_token", "self", "first_token")
NOTABLE = 0.3  # a corpus average below this names no role
IDLE = 0.5  # on the sentence, below this share of its corpus average: idle here
REPEATS = ("induction", "duplicate_token")  # need a token that repeats in the sentence


def role_of(row: dict, means: dict[str, float]) -> str | None:
    """The role a head stands out for: its largest corpus average over the model's mean for that role."""
    scores = {r: row[r] / means[r] for r in ROLES if row.get(r) is not None and row[r] >= NOTABLE and means[r] > 0}
    return max(scores, key=scores.get) if scores else None


def repeat_sentence() -> None:
    """The one-click edit: the sentence twice, so a head that reads repeats has one to read."""
    st.session_state[K.text] = f"{current_text()} {current_text()}"


def show_jobs(request: TraceRequest, layer: int) -> None:
    doc = data.table(request.model_id)
    if doc is None:
        st.info("This model has no head-finder table yet: the **Head finder** page measures every head over a corpus.")
        open_page("head_finder.py", "Measure its heads in the Head finder", {Finder.model: request.model_id})
        return
    heads = [h for h in doc["heads"] if h.get("block", "self") == "self"]
    means = {r: float(np.nanmean([h[r] for h in heads if h.get(r) is not None] or [np.nan])) for r in ROLES}
    now = data.sentence_metrics(request, layer)
    rows, idle_repeats = [], False
    for h in (h for h in heads if h["layer"] == layer):
        role = role_of(h, means)
        if role is None:
            continue
        here = float(now[role][h["head"]])
        verdict = "no repeated token here" if np.isnan(here) else "doing it" if here >= IDLE * h[role] else "idle here"
        idle_repeats |= role in REPEATS and np.isnan(here)
        rows.append(
            {"head": f"{layer}.{h['head']}", "role": METRICS[role], "corpus": h[role], "here": here, "verdict": verdict}
        )
    if not rows:
        st.caption(f"No head of layer {layer} stands out for one role over the corpus (each below {NOTABLE}).")
        return
    frame = pd.DataFrame(rows).rename(columns={"corpus": "over the corpus", "here": "on your sentence"})
    st.dataframe(frame, hide_index=True)
    st.caption(
        f"Each head of layer {layer} known for one role over the head finder's corpus ({len(doc['corpus']['texts'])} "
        f'texts), its average share there and on your sentence; "idle here": below {IDLE:.0%} of its corpus '
        "average. A role is each row's share on some keys: the token just before (previous token), the token after "
        "an earlier copy of this one (induction), earlier copies of itself (duplicate token), itself, the first token."
    )
    if idle_repeats:
        st.button(
            "Repeat the sentence: induction and duplicate-token heads need a token that came before",
            key=Explore.repeat,
            on_click=once(repeat_sentence),
        )
