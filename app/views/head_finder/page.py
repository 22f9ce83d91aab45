"""Head finder: every head of a model as a point, placed by two of its metrics over a whole corpus and coloured by a
third (``engine.analysis.head_finder``: shipped in assets/heads, measured on the long-work lane for any other model);
the chosen head's top snippets from the corpus, its pattern on the typed sentence and a link to Explore."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.controls.long_job import run_job
from app.controls.pickers import load_model, text_box, token_limit, typed_model_field, use_text
from app.links import open_page
from app.runtime.long_work import HEAD_FINDER
from app.runtime.maps import head_view
from app.runtime.models import list_models, session_models
from app.runtime.request import TraceRequest
from app.state import PERSIST, K, choose, current_text, hidden, settle
from app.ui.charts import clicked_points, set_source, show_chart
from app.ui.clicks import once
from app.ui.guard import attempt
from app.ui.heatmap import map_spec
from app.ui.map_data import MapView
from app.ui.safe_text import md, quoted
from app.views.explore.keys import Explore
from app.views.head_finder import data
from app.views.head_finder.figures import BOTH, KEY, QUERY, head_label, plotted, scatter, snippet_lines
from app.views.head_finder.keys import DEFAULT_MODEL, METRICS, Finder, head_id
from engine.families import text_families


@dataclass(frozen=True)
class Preset:
    """A view worth opening: a model, the axes and colour (x, y, colour), the head strongest on ``pick``, and a
    sentence that shows it at work (None: the sentence is kept)."""

    label: str
    model: str
    axes: tuple[str, str, str]
    pick: str
    text: str | None = None


INDUCTION = ("previous_token", "induction", "duplicate_token")
PRESETS = (
    Preset(
        "Induction heads: induction-2l-attn-only",
        "induction-2l-attn-only",
        INDUCTION,
        "induction",
        "qwhkzpmtrvqwhkzpmtrv",
    ),
    Preset("Previous-token heads: the stories model", "tiny-gpt-stories", INDUCTION, "previous_token"),
    Preset("Sink heads: MiniLM", "minilm", ("sink", "entropy", "mean_distance"), "sink"),
)


def strongest(rows: list[dict], metric: str) -> int:
    """The row with the largest ``metric`` (the first row when no head has it)."""
    have = plotted(rows, (metric,))
    return max(have, key=lambda i: rows[i][metric]) if have else 0


def use_preset(i: int) -> None:
    """on_click of a preset: its model, axes, colour and head (and its sentence, if it has one)."""
    preset = PRESETS[i]
    rows = data.shipped(preset.model)["heads"]
    row = rows[strongest(rows, preset.pick)]
    state = st.session_state
    state[Finder.model], state[Finder.hub] = preset.model, ""
    state[Finder.x], state[Finder.y], state[Finder.colour] = preset.axes
    state[Finder.head] = head_id(row["block"], row["layer"], row["head"])
    if preset.text is not None:
        use_text(preset.text)


def forget_head() -> None:
    """on_change of the model: the new model opens on its own strongest head."""
    st.session_state.pop(Finder.head, None)


def pick_model() -> str:
    """The model box (models with a shipped table first) and a field for any other model; returns the id."""
    shipped = data.shipped_models()
    specs = sorted(
        (s for s in (*session_models(), *list_models()) if s.family in text_families()),
        key=lambda s: s.id not in shipped,
    )
    labels = {s.id: s.label + ("" if s.id in shipped else " — measured when asked") for s in specs}
    choose(Finder.model, labels, DEFAULT_MODEL if DEFAULT_MODEL in labels else next(iter(labels)))
    if not hidden("model"):
        st.selectbox(
            "Model",
            list(labels),
            format_func=labels.get,
            key=Finder.model,
            on_change=forget_head,
            help="The first models come with their table; any other is measured on this server when you ask.",
            **PERSIST,
        )
    typed = typed_model_field(Finder.hub, "Another model", "e.g. gpt2", "Any text model.", hide=hidden("model"))
    return typed or st.session_state[Finder.model]


def measure(model_id: str) -> dict | None:
    """A model without a shipped table: measure it on the long-work lane (a progress bar); its table once done."""
    st.info(
        f"No table ships for {quoted(model_id)}. Measuring runs it over 200 generated stories and a few dozen "
        "runs of repeated random tokens on this server: seconds for a small model, minutes for a large one.",
        icon=":material/travel_explore:",
    )
    pressed = st.button("Measure every head", icon=":material/play_arrow:", key=Finder.measure)
    start = (lambda: data.measure_start(model_id)) if pressed else None
    return run_job(HEAD_FINDER, "Measuring every head", start, match=model_id)


def pick_clicked() -> None:
    """on_select of the scatter: the clicked point's head becomes the chosen one."""
    for point in clicked_points(Finder.scatter):
        custom = point.get("customdata")
        custom = custom.get("0") if isinstance(custom, dict) else custom[0] if isinstance(custom, list) else None
        if isinstance(custom, str):
            st.session_state[Finder.head] = custom
            return


def metric_pickers(rows: list[dict]) -> tuple[str, str, str]:
    """The three metric boxes (across, up, colour) over the metrics some head of ``rows`` has (an encoder-decoder
    has no induction); a metric the table lacks gives way to the first one not on another box."""
    names = [m for m in METRICS if plotted(rows, (m,))]
    starts = {Finder.x: "previous_token", Finder.y: "induction", Finder.colour: "entropy"}
    for key, start in starts.items():
        if st.session_state.get(key, start) not in names:
            taken = {st.session_state.get(other, starts[other]) for other in starts if other != key}
            st.session_state[key] = next((m for m in names if m not in taken), names[0])
        choose(key, names, start)
    boxes = zip(st.columns(3), ("Across (x axis)", "Up (y axis)", "Colour"), starts)
    return tuple(
        column.selectbox(label, names, key=key, format_func=METRICS.get, **PERSIST) for column, label, key in boxes
    )


def show_snippets(model_id: str, doc: dict, row: dict) -> None:
    """The head's top cells in the corpus, each text's tokens with the query and the key marked."""
    found = attempt(lambda: data.snippets(model_id, doc, row), "Reading the corpus texts…")
    if not found:
        st.caption("This head puts no weight on a key other than the first token or a marker in any text.")
        return
    st.markdown(f"**Where {head_label(row).lower()} looks hardest in the corpus**")
    for n, snippet in enumerate(found, 1):
        lines = snippet_lines(snippet, row["block"] != "cross")
        head = (
            f"{n}. Text {snippet.text}, weight **{snippet.weight:.2f}** from position {snippet.query} to {snippet.key}:"
        )
        st.markdown("  \n".join([head, *lines]))
    st.caption(
        f":{QUERY}-background[Query]: the token that looks; :{KEY}-background[key]: the token it looks at "
        f"(:{BOTH}-background[both] when it looks at itself). Positions count the model's tokens, the first token "
        "included. Each text is the one where this head puts its largest weight on a key that is not the first "
        "token or a marker; the three strongest texts are shown."
    )


def show_pattern(model_id: str, row: dict) -> None:
    """The head's pattern on the shared sentence (the box writes the sentence every text page shows)."""
    st.subheader("On your sentence")
    text_box()
    request = TraceRequest(model_id, current_text(), None, token_limit(512), block=row["block"])
    view = attempt(lambda: head_view(request, MapView(row["layer"], row["head"])), "Tracing your sentence…")
    if view is None:
        return
    show_chart(map_spec(view, title=f"{head_label(row)} on your sentence"), key=Finder.pattern, text=current_text())
    st.caption(
        "Each row is a token of your sentence, each column a token it can look at; dark cells carry most weight. "
        "A previous-token head draws the line just below the diagonal; an induction head lights up only on a "
        "repeat: type a phrase twice and watch each token of the second copy look at the token after its first copy."
    )


def explore_link(model_id: str, row: dict) -> None:
    """Open Explore on this model, layer and head (and block, for an encoder-decoder)."""
    typed = (st.session_state.get(Finder.hub) or "").strip()
    params: dict = {K.hub_id: typed} if typed else {K.model: model_id}
    params |= {K.layer: row["layer"], K.head: row["head"]}
    if row["block"] != "self":
        params[Explore.block] = row["block"]
    open_page("explore.py", f"Open {head_label(row).lower()} in Explore", params, icon=":material/grid_on:")


def scatter_caption(doc: dict, x: str, y: str, colour: str) -> str:
    """What the scatter shows: the three measures, the corpus they are averaged over (the table's own words), the
    repeated runs, and the heads left out."""
    rows, corpus, runs = doc["heads"], doc["corpus"], doc["settings"]["repeated_random_tokens"]
    if isinstance(runs, dict):
        runs = f"read on {runs['sequences']} runs of {runs['period']} random tokens, each repeated once"
    left_out = len(rows) - len(plotted(rows, (x, y, colour)))
    gone = "cross-attention has no previous token, self or distance"
    return (
        f"Each point is one of the {len(rows)} heads, placed by its **{METRICS[x]}** (across) and **{METRICS[y]}** "
        f"(up), coloured by its **{METRICS[colour]}**, each a mean over the corpus: {md(corpus['description'])}, "
        f"{len(corpus['texts'])} texts (seed {corpus['seed']}); induction and duplicate token {md(runs)}. Hover a "
        "point for its numbers; click one, or pick a head below, to see its snippets. The red ring marks the chosen "
        "head." + (f" {left_out} heads have none of these measures ({gone}) and are left out." if left_out else "")
    )


def main() -> None:
    st.title("Head finder")
    st.write(
        "A head's behaviour on one sentence rarely tells what it does in general. Here every head of a model is "
        "measured over a whole corpus, as HeadVis and Neuronpedia's Head Finder rank heads: pick two measures to "
        "place the heads and a third to colour them, then pick a head to see where it looks hardest."
    )
    for i, (column, preset) in enumerate(zip(st.columns(len(PRESETS)), PRESETS)):
        column.button(preset.label, key=f"{Finder.preset}{i}", on_click=once(use_preset), args=(i,))
    st.caption(
        "The induction model's card names head 0.1 (previous token) and head 1.2 (induction): together they "
        "complete a repeated run of letters."
    )
    model_id = pick_model()
    card = load_model(model_id)
    if card is None:
        return
    set_source(card.spec.label if card.spec.id == model_id else model_id)
    doc = data.table(model_id) or measure(model_id)
    if doc is None:
        return
    rows = doc["heads"]
    x, y, colour = metric_pickers(rows)
    ids = [head_id(r["block"], r["layer"], r["head"]) for r in rows]
    default = ids[strongest(rows, y)]
    settle(Finder.head_default, default)
    choose(Finder.head, ids, default)
    chosen = ids.index(st.session_state[Finder.head])
    show_chart(scatter(rows, x, y, colour, chosen), key=Finder.scatter, on_select=pick_clicked, selection_mode="points")
    st.caption(scatter_caption(doc, x, y, colour))
    with st.expander("What each measure means"):
        meaning = doc["settings"]["definitions"]
        st.markdown("\n".join(f"- **{METRICS[m]}**: {md(meaning[m])}" for m in METRICS if plotted(rows, (m,))))
    if not hidden("head"):
        st.selectbox("Head", ids, key=Finder.head, format_func=lambda h: head_label(rows[ids.index(h)]), **PERSIST)
    row = rows[ids.index(st.session_state[Finder.head])]
    st.markdown(" · ".join(f"{METRICS[m]} **{row[m]:.2f}**" for m in METRICS if row.get(m) is not None))
    explore_link(model_id, row)
    show_snippets(model_id, doc, row)
    show_pattern(model_id, row)


main()
