"""The offline pack's first charts of the pages that are not text pages, drawn by the pages' own builders from the
same caches; a view only the app can show raises :class:`Unchartable`, whose reason becomes a note."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go

from app.runtime.models import get_card
from app.state import K
from app.ui.charts import ReadyFigure, ready, source_line, with_source
from app.ui.heatmap import attention_heatmap, layer_mean_map
from app.views.captions import data as captions
from app.views.captions.figures import word_panels
from app.views.captions.keys import Captions
from app.views.explain import data as explain_data
from app.views.explain.figures import importance_heatmap
from app.views.explain.keys import Explain
from app.views.positional import data as positional_data
from app.views.positional.figures import bias_grid, matrix_heatmap
from app.views.positional.keys import Positional
from app.views.pretraining import data as pretraining_data
from app.views.pretraining.keys import TABS as PRETRAINING_TABS
from app.views.scaling.data import fits_with_e, scaling_curves
from app.views.scaling.figures import loss_vs_compute, loss_vs_params
from app.views.vit import data as vit_data
from app.views.vit.figures import overlay, overlay_grid, probability_bars, window_overlay
from app.views.vit.keys import Vit
from engine import EngineError

OPEN_IN_APP = "open the link in the app"
SIN_OPENS = (64, 64)  # positions and d_model the Sinusoidal tab opens with (app/views/positional/page.py)
LEARNED_OPENS = 128  # positions the Learned tab shows first
ALIBI_OPENS = (8, 12, (0, 3, 7))  # ALiBi's heads, length and heads drawn when the tab opens
Figures = list[tuple[ReadyFigure, str]]  # (figure, caption without the link's label)


class Unchartable(Exception):
    """This view has no chart the pack can hold; the message says why and what to do instead."""


class Drawn(SimpleNamespace):
    """A view's figures (``drawn``: :data:`Figures`) and, by name, the numbers they were drawn from."""


def chart(fig: go.Figure | dict, source: str, says: str) -> tuple[ReadyFigure, str]:
    """A builder's figure in the pack: ready, ``source`` as its subtitle, ``says`` as its caption."""
    return with_source(ready(fig), source), says


def link_model(values: dict[str, object], hub: str = K.hub_id, model: str = K.model) -> str:
    """The link's model: a typed Hub id or folder, else the picked one."""
    return str(values.get(hub) or "").strip() or str(values[model])


def _live(what: str) -> Unchartable:  # a view only the app can show
    return Unchartable(f"{what}: {OPEN_IN_APP}.")


def within(value: object, count: int) -> int:  # a link's index kept inside ``count`` items, as the page keeps it
    return min(max(int(value), 0), count - 1)


# ---------------------------------------------------------------- Positional encodings


def _tables(table: np.ndarray, sim: np.ndarray, source: str, titles, names, says, bound: float = 0.0) -> Drawn:
    """A position table and its positions' similarity as the Positional page draws them (``bound``: the similarity's
    symmetric colour range, else its 99.5th percentile); ``titles``, ``names`` and ``says``: (table's, similarity's)."""
    line = source_line(source)
    table_fig = matrix_heatmap(table, x_title="dimension", y_title="position", title=titles[0], value_name=names[0])
    sim_fig = matrix_heatmap(
        sim, x_title="position q", y_title="position p", title=titles[1], value_name=names[1], bound=bound
    )
    return Drawn(drawn=[chart(table_fig, line, says[0]), chart(sim_fig, line, says[1])])


def positional(values: dict[str, object]) -> Drawn:
    """The open tab's first charts (``pos_tab``; the model of the Learned tab: ``model`` or ``hub_id``)."""
    tab = str(values[Positional.tab])
    if tab == "Sinusoidal":
        n_pos, d = SIN_OPENS
        table, sim, spread = positional_data.pos_sinusoidal(n_pos, d)
        says = (
            "The vector added at each position (rows), one column per dimension: left columns wave fast.",
            f"The dot product of two position vectors: largest on the diagonal (d/2 = {d // 2}) and the same along "
            f"every diagonal, it depends only on |p − q| (largest spread along a diagonal: {spread:.1e}).",
        )
        titles = (f"PE table: {n_pos} positions × {d} dimensions", "Similarity PE(p)·PE(q)")
        return _tables(table, sim, f"sinusoidal, d = {d}", titles, ("PE", "PE(p)·PE(q)"), says)
    if tab == "Learned":
        model_id = link_model(values)
        table, cos_sim = positional_data.pos_learned_table(model_id)
        n = min(LEARNED_OPENS, table.values.shape[0], cos_sim.shape[0])
        says = (
            "The learned table, one row per position (colours clipped at the 99.5th percentile of |value|).",
            "The cosine similarity of every pair of learned position vectors: bright along the diagonal, training "
            "gave neighbouring positions similar vectors.",
        )
        titles = (
            f"{table.source} ({n} of {table.values.shape[0]} positions × {table.values.shape[1]})",
            "Learned: cosine similarity",
        )
        return _tables(table.values[:n], cos_sim[:n, :n], model_id, titles, ("value", "cosine"), says, 1)
    if tab == "ALiBi":
        n_heads, n_pos, heads = ALIBI_OPENS
        slopes, bias = positional_data.pos_alibi(n_heads, n_pos)
        says = (
            "What each head adds to its scores before the softmax: 0 on the diagonal, −m_h·|i − j| farther away "
            "(grey: blocked by the causal mask). A steep head looks almost only at nearby tokens."
        )
        fig = bias_grid(bias, list(heads), slopes, causal=True)
        return Drawn(drawn=[chart(fig, f"ALiBi, {n_heads} heads, {n_pos} positions", says)], bias=bias, heads=heads)
    if tab == "RoPE":
        raise _live("RoPE's tab turns a query and a key with sliders (pair, positions, offset)")
    raise _live("The order-blindness demo runs two fresh copies of our decoder on a sentence you shuffle in the app")


# ---------------------------------------------------------------- Vision Transformer


def vision(values: dict[str, object]) -> Drawn:
    """[CLS]'s attention in the link's layer over its sample image, or a Swin's query patch in its window."""
    model_id = link_model(values, Vit.hub_id, Vit.model)
    source = str(values[Vit.source])
    if source == "digit":
        index = int(values[Vit.digit])
        image = vit_data.vit_sample("digit", str(index))
        described = f"digit sample {index} (true label {vit_data.vit_digit_label(index)})"
    elif source in ("shape", "photo"):
        name = str(values[Vit.shape if source == "shape" else Vit.photo])
        image = vit_data.vit_sample(source, name)
        described = f"a drawn {name}" if source == "shape" else f"the photo '{name}'"
    else:
        raise Unchartable(f"An uploaded image is not part of a link: {OPEN_IN_APP} and upload it there.")
    card = get_card(model_id)
    if card.family != "vit":
        raise EngineError(f"{model_id} is not a Vision Transformer (it is a {card.family} model).")
    trace = vit_data.get_vision_trace(model_id, image)
    line = source_line(model_id, described)
    if vit_data.vit_windowed(trace):  # a Swin: the query patch's weights over its window
        stage = within(values[Vit.swin_stage], trace.n_stages)
        blocks = trace.stage_blocks(stage)
        block = within(values[Vit.swin_block], len(blocks))
        head = within(values[Vit.swin_head], blocks[block].n_heads)
        rows, cols = blocks[block].grid
        patch = within(values[Vit.swin_patch], rows * cols)
        row = vit_data.swin_window_row(trace, stage, block, head, patch)
        title = f"Patch {patch} → its window, stage {stage}, block {block}, head {head}"
        fig = window_overlay(trace.image, row, trace.cell_size(stage), patch, title=title)
        says = "A Swin attends inside windows only: the query patch's weights over the patches of its window."
        return Drawn(drawn=[chart(fig, line, says)], stage=stage, block=block, head=head, patch=patch)
    layer = within(values[Vit.layer], trace.attention.n_layers)
    head = within(values[Vit.head], trace.attention.n_heads)
    maps = vit_data.vit_cls_maps(trace, layer)
    answer = f" The model's answer: {trace.prediction} ({float(trace.probs.max()):.0%})." if len(trace.labels) else ""
    title = f"[CLS] → patches, layer {layer}, head {head}"
    one = overlay(trace.image, maps[head], trace.patch_size, title=title)
    every = overlay_grid(trace.image, maps, trace.patch_size, selected=head)
    looks = f"Where the [CLS] token looks: the brighter a patch, the more weight it gets (hover a patch).{answer}"
    every_says = f"All {maps.shape[0]} heads of layer {layer}, each coloured from 0 to its own maximum."
    drawn = [chart(one, line, looks), chart(every, line, every_says)]
    return Drawn(drawn=drawn, layer=layer, maps=maps, described=described)


# ---------------------------------------------------------------- Captions


def caption(values: dict[str, object]) -> Drawn:
    """The caption of the link's picture (a held-out scene, or the page's first drawing) with one map per word."""
    if values[Captions.view] == "mistakes":
        raise _live(f"The mistakes view captions all {captions.HELD_OUT_SCENES} held-out scenes and lets you pick one")
    source = str(values[Captions.source])
    if source == "upload":
        raise Unchartable(f"An uploaded picture is not part of a link: {OPEN_IN_APP} and upload it there.")
    model_id = link_model(values, Captions.hub_id, Captions.model)
    beam = int(values[Captions.beam]) if values[Captions.search] == "beam" else 1
    if source == "draw":
        drawing = Captions.DRAWING[: int(Captions.DRAW_DEFAULTS[Captions.count])]
        drawing = tuple(captions.DrawnObject(*obj) for obj in drawing)
        request = captions.CaptionRequest(source="draw", drawing=drawing, beam=beam, model_id=model_id)
    else:
        scene = int(values[Captions.scene])
        request = captions.CaptionRequest(source="scene", scene=scene, beam=beam, model_id=model_id)
    trace = captions.caption_trace(request)
    layer = head = None
    shape = captions.caption_layers(trace)
    if shape is not None:  # a pretrained captioner: the link's decoder layer (default the last) and head (or mean)
        wanted, chosen = values.get(Captions.layer), values.get(Captions.head)
        layer = wanted if isinstance(wanted, int) and 0 <= wanted < shape[0] else shape[0] - 1
        head = chosen if isinstance(chosen, int) and 0 <= chosen < shape[1] else None
    view = captions.caption_attention(request, layer, head)
    picture = captions.as_seen(captions.caption_picture(request), trace)
    reference = f" The scene's grammar says “{picture.reference}”." if picture.reference else ""
    says = (
        f"The model writes “{trace.caption}”.{reference} One picture per written word: the brighter a cell, "
        "the more weight α the model put on it just before writing that word (each on its own colour scale)."
    )
    fig = word_panels(picture.image, view)
    return Drawn(drawn=[chart(fig, source_line(model_id, picture.described), says)], view=view)


# ---------------------------------------------------------------- Pretraining objectives, Scaling, explain


def pretraining(values: dict[str, object]) -> Drawn:
    """The fill-in-the-blank tab's first blank (guesses, where it looks), or the objectives tab's three real maps."""
    tab = values["pretraining_tab"]
    if tab in (PRETRAINING_TABS["finetune"], PRETRAINING_TABS["nsp"]):
        raise _live("This tab fine-tunes a copy of the model live while you watch")
    if tab == PRETRAINING_TABS["cost"]:
        raise _live("This tab's chart times attention, an RNN and a convolution on the server when you press “Measure”")
    if tab == PRETRAINING_TABS["objectives"]:
        return _objectives(values)
    text = str(values["fill_text"])
    result = pretraining_data.get_fill_mask(text)
    if not result.blanks:
        raise EngineError("The link's sentence has no [MASK] to fill in.")
    blank = result.blanks[0]
    att = np.asarray(pretraining_data.blank_attention(text, blank.position))
    source = source_line(pretraining_data.MLM_MODEL, text)
    probs = np.asarray(blank.probs)
    bars = probability_bars(tuple(blank.words), probs, top=len(blank.words))
    bars.update_layout(title=dict(text=f"Guesses for the blank at {blank.position}"))
    rows = [f"L{layer} H{head}" for layer in range(att.shape[0]) for head in range(att.shape[1])]
    labels = [f"{i} {t}" for i, t in enumerate(result.tokens.strings)]
    title = f"Where the blank at {blank.position} looks, layer by layer"
    heat = attention_heatmap(att.reshape(-1, att.shape[-1]), rows, labels, title=title, height=360)
    heat.update_yaxes(title_text="layer and head")
    bars_says = f"The model's top guess is “{blank.words[0]}” ({float(probs[0]):.0%})."
    heat_says = (
        "Each row is one head's attention from the blank to every token (rows sum to 1), first layers at the top."
    )
    return Drawn(drawn=[chart(bars, source, bars_says), chart(heat, source, heat_says)])


def _objectives(values: dict[str, object]) -> Drawn:
    """The objectives tab's three "Real" maps of the link's sentence (lower-cased, 24 words at most) in its layer."""
    words = tuple(str(values["objectives_text"]).lower().split())[:24]
    if len(words) < 2:
        raise EngineError("The link's sentence has fewer than two words.")
    masked = " ".join(pretraining_data.objective_examples(words)["masked"].inputs)
    layer, sentence = int(values["objectives_layer"]), " ".join(words)
    cross = " The translator's cross-attention: built like span corruption's decoder."
    maps = (
        ("Masked LM (BERT)", pretraining_data.MLM_MODEL, masked, False, "self", ""),
        ("Next token (GPT)", pretraining_data.NEXT_TOKEN_MODEL, sentence, True, "self", ""),
        ("Span corruption (T5)", pretraining_data.SEQ2SEQ_MODEL, sentence, None, "cross", cross),
    )
    out: Figures = []
    for name, model_id, text, causal, block, more in maps:
        real = pretraining_data.objective_attention(model_id, text, causal, layer, block)
        says = (
            f"{name}: what the model's attention really does, the mean of layer {real.layer}'s heads (grey: blocked "
            f"by the causal mask).{more}"
        )
        out.append(chart(layer_mean_map(real), source_line(real.model_id, real.text), says))
    return Drawn(drawn=out)


def scaling(values: dict[str, object]) -> Drawn:
    """The shipped curves (the page's two charts; the sizes a visitor trains live are not in a link)."""
    curves = scaling_curves()
    fit, (fit_e, compute_e) = curves.fit, fits_with_e()
    params_says = (
        f"Each size's held-out loss against its non-embedding parameters N (log-log) and two laws fitted on log L: "
        f"L(N) = (N_c / N)^α, α = {fit.alpha:.3f}, r² = {fit.r2:.3f}, and L(N) = E + (N_c / N)^α, "
        f"E = {fit_e.irreducible:.2f}, α = {fit_e.alpha:.3f}, r² = {fit_e.r2:.3f} (over {fit.n_points} sizes)."
    )
    compute_says = (
        "Each size's loss as training goes on against the compute spent (C ≈ 6·N·tokens); the thick line is the "
        "compute-optimal frontier, with the same two laws fitted to it."
    )
    params_fig = loss_vs_params(curves.runs, fit, with_e=fit_e)
    compute_fig = loss_vs_compute(curves.runs, curves.frontier, curves.compute_fit, with_e=compute_e)
    return Drawn(drawn=[chart(params_fig, "", params_says), chart(compute_fig, "", compute_says)])


def explain(values: dict[str, object]) -> Drawn:
    """The six importances of the page's first model and example (a link carries no sentence)."""
    model_id = Explain.DEFAULTS[Explain.model]
    text, first = explain_data.EXPLAIN_EXAMPLES[model_id], Explain.DEFAULTS
    steps, baseline, loo = int(first[Explain.steps]), str(first[Explain.baseline]), str(first[Explain.loo])
    request = explain_data.ExplainRequest(model_id, text, "", explain_data.EXPLAIN_MAX_TOKENS, steps, baseline, loo)
    pred = explain_data.explain_prediction(request)
    methods = explain_data.explain_methods()
    scores = [np.asarray(explain_data.explain_importance(request, m).scores) for m in methods]
    if pred.task == "embedding":
        said = f"the cosine similarity with the reference, {pred.value:.3f}"
    else:
        said = f"the log-probability of “{pred.target}” ({pred.probability:.1%}), f = {pred.value:.3f}"
    fig = importance_heatmap(list(pred.tokens.strings), list(methods.values()), scores)
    says = (
        f"Explained: {said}. Each row is one method, divided by its largest score (hover for the raw number); blue "
        "raises the explained number, red lowers it."
    )
    return Drawn(drawn=[chart(fig, source_line(model_id, request.text), says)])


#: the pages' first charts, by page stem
PAGE_DATA = {
    "positional": positional,
    "vit": vision,
    "captions": caption,
    "pretraining": pretraining,
    "scaling": scaling,
    "explain": explain,
}
