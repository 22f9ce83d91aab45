"""Display settings of the pages that draw one head large (colour scale, what a cell shows, hidden sinks) and, for
a long input, a zoom: a range slider per axis with number boxes. :func:`map_controls` returns a ``MapView``."""

from __future__ import annotations

import streamlit as st

from app.state import PERSIST, settle
from app.ui.clicks import once
from app.ui.export import download
from app.ui.heatmap import SCALES
from app.ui.map_data import CSV_MAX_SIDE, OVERVIEW_SIZE, MapView, csv_region, head_csv

SCALE_HELP = (
    "Linear: colour follows the weight. Log: weak weights (0.001, 0.01) get visible shades too; hover "
    "still shows the true weight. Per-row max: each row divided by its own largest weight, so every query's strongest key is darkest."
)
SHOW = {"attention": "weights α", "contribution": "contribution ‖α·f(x)‖", "value": "α·‖v‖"}  # value: its length only
SHOW_HELP = (
    "α: how much each query looks at each key (rows sum to 1). ‖α·f(x)‖: the length of what the key "
    "actually adds to the query's output through this head, α times ‖v·W_O‖, the key's value vector "
    "carried through the head's part of the output projection (Kobayashi et al. 2020, 'Attention is "
    "Not Only a Weight: Analyzing Transformers with Vector Norms'). α·‖v‖: the weight times the value "
    "vector's length only, without the output projection (close to the contribution, not equal)."
)
#: what the colour is, under each weighting
COLOUR_SAYS = {
    "attention": "Colour is the softmax weight: every row sums to 1.",
    "contribution": "Colour: **‖α·f(x)‖**, each weight times ‖v·W_O‖, the length of the vector that key adds to this "
    "query's output through this head (Kobayashi et al. 2020, 'Attention is Not Only a Weight'; the output "
    "projection's bias is shared by all heads and keys and left out), so rows no longer sum to 1. A token can get a "
    "lot of attention and still contribute little: what it adds is short (sinks like [CLS] and [SEP] often are).",
    "value": "Colour: **α·‖v‖**, each weight times the length of that key's value vector only, so rows no longer sum "
    "to 1. It leaves out the output projection, so it only approximates how much the key adds to the output; "
    "**contribution** shows the exact measure.",
}
SCALE_SAYS = {
    "log": ["Colour: log scale, so weights down to 1/10,000 of the largest get a shade."],
    "row": ["Colour: each row divided by its own largest weight (hover shows that share, not the weight)."],
}
HIDE_HELP = (
    "Special tokens ([CLS], [SEP], <bos>) and the first token often soak up most of the weight (an "
    "'attention sink'). Hiding their columns lets the colour scale show the rest; weights are not "
    "renormalised. An unknown word's [UNK] is part of your text and stays."
)


def _mark_chosen(key: str) -> None:
    st.session_state[key] = True


def map_controls(trace, key_prefix: str, layer: int, head: int) -> tuple[MapView, str]:
    """The display options and zoom of head ``(layer, head)``'s map: the view they choose and a caption."""
    scale, weighting, hide, caption = display_options(trace, key_prefix)
    q_range, k_range = zoom_controls(trace, key_prefix)
    return MapView(layer, head, q_range, k_range, hide, scale, weighting), caption


def display_options(trace, key_prefix: str) -> tuple[str, str, bool, str]:
    """Colour scale, weighting and "hide sink columns" widgets: their values and a caption saying what colour shows."""
    scale_key, hide_key, show_key = f"{key_prefix}_scale", f"{key_prefix}_hide_sinks", f"{key_prefix}_weighting"
    chosen_key = f"{scale_key}_chosen"
    if not st.session_state.get(chosen_key) or st.session_state.get(scale_key) not in SCALES:
        # until the user picks one: linear for a sentence, log for a long input (linear looks empty there)
        settle(scale_key, "log" if trace.n_keys > OVERVIEW_SIZE else "linear")
    shows = [w for w in SHOW if w != "contribution" or trace.has_contributions]
    if st.session_state.get(show_key) not in shows:
        settle(show_key, "attention")
    with st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
        scale = (
            st.segmented_control(
                "Colour scale",
                list(SCALES),
                format_func=SCALES.get,
                key=scale_key,
                help=SCALE_HELP,
                on_change=_mark_chosen,
                args=(chosen_key,),
                **PERSIST,
            )
            or "linear"
        )
        weighting = (
            st.segmented_control("Show", shows, format_func=SHOW.get, key=show_key, help=SHOW_HELP, **PERSIST)
            or "attention"
        )
        hide = bool(st.toggle("Hide sink columns", key=hide_key, help=HIDE_HELP, **PERSIST))
    notes = [COLOUR_SAYS.get(weighting, COLOUR_SAYS["attention"]), *SCALE_SAYS.get(scale, ())]
    if hide:
        notes.append("Special-token and first-token columns are hidden, so rows no longer sum to 1.")
    if scale == "log" and not st.session_state.get(chosen_key):
        notes.append("(Log is the default for long inputs: on a linear scale most of the map would look empty.)")
    if trace.n_keys > 128 and scale == "linear" and not hide:
        notes.append(
            "Long input: if the map looks empty but for one column, try the log colour scale or hide the sink columns."
        )
    return scale, weighting, hide, " ".join(notes)


def _range_in(value, n: int) -> tuple[int, int] | None:
    """``value`` as a range ``(start, stop)`` of ``0 … n`` with start < stop, or None."""
    ok = isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value)
    return (int(value[0]), int(value[1])) if ok and 0 <= value[0] < value[1] <= n else None


def _typed(key: str, n: int) -> None:
    """on_change of a range's number boxes: the typed ends become the slider's value."""
    start = min(max(int(st.session_state.get(f"{key}_from") or 0), 0), n - 1)
    stop = min(max(int(st.session_state.get(f"{key}_to") or n), start + 1), n)
    st.session_state[key] = (start, stop)


def _range_control(label: str, key: str, n: int) -> tuple[int, int]:
    """A range slider with "from" and "to" number boxes under it; the slider's key holds the range."""
    if _range_in(st.session_state.get(key), n) is None:
        settle(key, (0, n))
    elif f"{key}_from" not in st.session_state:  # drawn again (the panel reopened): the browser forgot the value
        st.session_state[key] = tuple(st.session_state[key])
    start, stop = st.slider(label, 0, n, key=key, help="Positions from … to (the end is excluded).", **PERSIST)
    start, stop = int(start), int(stop)
    settle(f"{key}_from", start)
    settle(f"{key}_to", stop)
    boxes = (
        ("from", 0, n - 1, "_from", f"First position of the {label.split()[0].lower()} range (0 to {n - 1})."),
        ("to (excluded)", 1, n, "_to", f"Position after the last one (up to {n})."),
    )
    for column, (name, low, high, end, help_box) in zip(st.columns(2), boxes):
        with column:
            st.number_input(name, low, high, step=1, key=key + end, on_change=_typed, args=(key, n), help=help_box)
    return (start, stop) if stop > start else (start, min(n, start + 1))


ZOOM_LABEL = f"Zoom: pick a region of ≤ {OVERVIEW_SIZE} tokens a side to see its exact weights"


def _reset(*ranges: tuple[str, int]) -> None:
    for key, n in ranges:
        st.session_state[key] = (0, n)


def _forget_boxes(key_prefix: str, drawn: tuple[str, ...]) -> None:
    """Drop the number boxes' values of every zoom not drawn in this run: the browser forgets a vanished box, and
    would show its minimum when it comes back."""
    listed = f"{key_prefix}_zoom_boxes"
    for key in set(st.session_state.get(listed, ())) - set(drawn):
        for box in (f"{key}_from", f"{key}_to"):
            if box in st.session_state:
                del st.session_state[box]
    st.session_state[listed] = tuple(drawn)


def zoom_controls(trace, key_prefix: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """Query and key ranges to draw (None: everything), from a zoom panel when the input is longer than the overview
    (drawn while open; the label never changes, or Streamlit would close it)."""
    n_q, n_k = trace.n_queries, trace.n_keys
    if max(n_q, n_k) <= OVERVIEW_SIZE:
        _forget_boxes(key_prefix, ())
        return None, None
    sides = {f"{key_prefix}_zoom_q_{n_q}": n_q, f"{key_prefix}_zoom_k_{n_k}": n_k}  # rows, columns
    ranges = [_range_in(st.session_state.get(key), n) or (0, n) for key, n in sides.items()]
    panel = st.expander(ZOOM_LABEL, key=f"{key_prefix}_zoom_open", on_change="rerun")
    _forget_boxes(key_prefix, tuple(sides) if panel.open else ())
    if panel.open:
        with panel:
            labels = ("Query tokens (rows)", "Key tokens (columns)")
            for i, (column, label, (key, n)) in enumerate(zip(st.columns(2), labels, sides.items())):
                with column:
                    ranges[i] = _range_control(label, key, n)
            st.button(
                "Show everything",
                key=f"{key_prefix}_zoom_reset",
                icon=":material/zoom_out_map:",
                on_click=once(_reset),
                args=tuple(sides.items()),
            )
    q_range, k_range = (None if r == (0, n) else r for r, n in zip(ranges, sides.values()))
    return q_range, k_range


def csv_button(att, view: MapView, file_name: str, load, key: str | None = None) -> None:
    """A CSV download of the exact weights in ``view``, built on click from ``load()`` (the button holds no trace)."""
    region = csv_region(att, view.q_range, view.k_range)
    if region is None:
        st.caption(f"To download exact weights as CSV, zoom to at most {CSV_MAX_SIDE:,} tokens a side.")
        return
    (q0, q1), (k0, k1) = region
    whole = (q0, q1, k0, k1) == (0, att.n_queries, 0, att.n_keys)
    region_csv = f"region as CSV (queries {q0}–{q1 - 1}, keys {k0}–{k1 - 1})"
    label = f"Download this {'head as CSV' if whole else region_csv}"
    download(label, lambda: head_csv(load(), view.layer, view.head, (q0, q1), (k0, k1)), file_name, "text/csv", key)
