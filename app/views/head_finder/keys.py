"""The Head finder page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

import re

import streamlit as st

from app.url_params import Param, catalog_model, model_ref, one_of
from engine.families import text_families

#: every metric of ``engine.analysis.head_finder.METRICS``, as HeadVis and Neuronpedia's Head Finder name them
METRICS = {
    "previous_token": "Previous token",
    "induction": "Induction",
    "duplicate_token": "Duplicate token",
    "self": "Self (current token)",
    "first_token": "Sink (first token)",
    "sink": "Sink (first token and markers)",
    "entropy": "Entropy",
    "mean_distance": "Mean distance",
}
DEFAULT_MODEL = "tiny-gpt-stories"
HEAD_ID = re.compile(r"^(?:(encoder|decoder|cross)\.)?(\d{1,4})\.(\d{1,4})$")  # "1.2", "cross.0.1"


class Finder:
    """The page's keys; the model, the typed model, the three metrics and the chosen head are also its URL
    parameters (``head``'s default: the strongest head on the y axis, :data:`head_default`)."""

    model, hub, x, y, colour, head = (
        "finder_model",
        "finder_hub",
        "finder_x",
        "finder_y",
        "finder_colour",
        "finder_head",
    )
    head_default = "_finder_head_default"  # the head shown before one is picked (left out of links)
    scatter, pattern, measure = "finder_scatter", "finder_pattern", "finder_measure"
    preset = "finder_preset_"  # + a preset's number: its button


def head_id(block: str, layer: int, head: int) -> str:
    """A head's id in the picker and the link: ``"1.2"``, or ``"cross.0.1"`` for a model with several blocks."""
    return f"{layer}.{head}" if block == "self" else f"{block}.{layer}.{head}"


def read_head(raw: str) -> str:
    """A link's head id (whether the model has that head is checked by the page)."""
    if not HEAD_ID.match(raw.strip()):
        raise ValueError(f"{raw!r} is not a head (layer.head, e.g. 1.2)")
    return raw.strip()


PAGE = frozenset({"head_finder"})
PARAMS = (
    Param(Finder.model, catalog_model(set(text_families())), DEFAULT_MODEL, PAGE, hide="model"),
    Param(Finder.hub, model_ref, "", PAGE, hide="model"),
    Param(Finder.x, one_of(METRICS), "previous_token", PAGE),
    Param(Finder.y, one_of(METRICS), "induction", PAGE),
    Param(Finder.colour, one_of(METRICS), "entropy", PAGE),
    Param(Finder.head, read_head, lambda: st.session_state.get(Finder.head_default), PAGE, hide="head"),
)
