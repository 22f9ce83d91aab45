"""The offline pack's charts for the pages that are not text pages (issue 21, 4), drawn by each page's own builders.

``app/views/lessons/offline_page_data.py`` gives the numbers a page draws first for a lesson link; here they become the
same figures the page shows (``positional_figs``, ``vit_figures``, ``window_figures``, ``caption_figures``,
``heatmap``, ``scaling_figures``, ``explain_figures``), each with its hover numbers and a caption in the page's words.
``app/views/lessons/offline_pack.py`` calls :func:`page_figures` inside the default look and serialises the result.
"""

from __future__ import annotations

from app.ui.charts import ReadyFigure, ready, source_line, with_source
from app.ui.heatmap import attention_heatmap, layer_mean_map
from app.views.captions.figures import word_panels
from app.views.explain.figures import importance_heatmap
from app.views.lessons.offline_page_data import (
    Biases,
    BlankGuesses,
    Curves,
    Importances,
    Matrices,
    Objectives,
    PatchAttention,
    WindowAttention,
    WordMaps,
)
from app.views.positional.figures import bias_grid, matrix_heatmap
from app.views.scaling.figures import loss_vs_compute, loss_vs_params
from app.views.vit.figures import overlay, overlay_grid, probability_bars
from app.views.vit.windows import window_overlay

Figures = list[tuple[ReadyFigure, str]]  # (figure, caption without the link's label)


def page_figures(view: object) -> Figures | None:
    """The figures of one non-text page's view with their captions; None for a view this module does not draw."""
    draw = DRAWERS.get(type(view))
    return draw(view) if draw is not None else None


def _matrices(view: Matrices) -> Figures:
    out: Figures = []
    for panel in view.panels:
        bound = panel.bound
        fig = matrix_heatmap(
            panel.values,
            x_title=panel.x_title,
            y_title=panel.y_title,
            title=panel.title,
            value_name=panel.value_name,
            **({"zmin": -bound, "zmax": bound} if bound is not None else {}),
        )
        out.append((with_source(ready(fig), source_line(view.source)), panel.caption))
    return out


def _biases(view: Biases) -> Figures:
    fig = ready(bias_grid(view.bias, list(view.heads), view.slopes, causal=view.causal))
    n_heads, n_pos = view.bias.shape[0], view.bias.shape[1]
    return [
        (
            with_source(fig, f"ALiBi, {n_heads} heads, {n_pos} positions"),
            "What each head adds to its scores before the softmax: 0 on the diagonal, −m_h·|i − j| farther away "
            "(grey: blocked by the causal mask). A steep head looks almost only at nearby tokens.",
        )
    ]


def _patches(view: PatchAttention) -> Figures:
    source = source_line(view.model_id, view.described)
    title = f"[CLS] → patches, layer {view.layer}, head {view.head}"
    answer = f" The model's answer: {view.prediction}." if view.prediction else ""
    one = with_source(ready(overlay(view.image, view.maps[view.head], view.patch_size, title=title)), source)
    every = with_source(ready(overlay_grid(view.image, view.maps, view.patch_size, selected=view.head)), source)
    return [
        (one, f"Where the [CLS] token looks: the brighter a patch, the more weight it gets (hover a patch).{answer}"),
        (every, f"All {view.maps.shape[0]} heads of layer {view.layer}, each coloured from 0 to its own maximum."),
    ]


def _window(view: WindowAttention) -> Figures:
    title = f"Patch {view.patch} → its window, stage {view.stage}, block {view.block}, head {view.head}"
    fig = ready(window_overlay(view.image, view.row, view.cell, view.patch, title=title))
    return [
        (
            with_source(fig, source_line(view.model_id, view.described)),
            "A Swin attends inside windows only: the query patch's weights over the patches of its window.",
        )
    ]


def _words(view: WordMaps) -> Figures:
    fig = with_source(ready(word_panels(view.image, view.view)), source_line(view.model_id, view.described))
    reference = f" The scene's grammar says “{view.reference}”." if view.reference else ""
    return [
        (
            fig,
            f"The model writes “{view.caption}”.{reference} One picture per written word: the brighter a cell, "
            "the more weight α the model put on it just before writing that word (each on its own colour scale).",
        )
    ]


def _blank(view: BlankGuesses) -> Figures:
    source = source_line(view.model_id, view.text)
    bars = probability_bars(view.words, view.probs, top=len(view.words))
    bars.update_layout(title=dict(text=f"Guesses for the blank at {view.position}"))
    att = view.attention
    rows = [f"L{layer} H{head}" for layer in range(att.shape[0]) for head in range(att.shape[1])]
    labels = [f"{i} {t}" for i, t in enumerate(view.tokens)]
    heat = attention_heatmap(
        att.reshape(-1, att.shape[-1]),
        rows,
        labels,
        title=f"Where the blank at {view.position} looks, layer by layer",
        height=360,
    )
    heat.update_yaxes(title_text="layer and head")
    return [
        (with_source(ready(bars), source), f"The model's top guess is “{view.words[0]}” ({float(view.probs[0]):.0%})."),
        (
            with_source(ready(heat), source),
            "Each row is one head's attention from the blank to every token (rows sum to 1), first layers at the top.",
        ),
    ]


def _objectives(view: Objectives) -> Figures:
    return [
        (
            with_source(ready(layer_mean_map(real)), source_line(real.model_id, real.text)),
            f"{name}: what the model's attention really does, the mean of layer {real.layer}'s heads (grey: blocked "
            "by the causal mask)."
            + (" The translator's cross-attention: built like span corruption's decoder." if i == 2 else ""),
        )
        for i, (name, real) in enumerate(zip(view.names, view.maps))
    ]


def _curves(view: Curves) -> Figures:
    curves = view.curves
    fit = curves.fit
    return [
        (
            ready(loss_vs_params(curves.runs, fit)),
            f"Each size's held-out loss against its non-embedding parameters N (log-log) and the fitted power law "
            f"L(N) = (N_c / N)^α: α = {fit.alpha:.3f}, r² = {fit.r2:.3f} over {fit.n_points} sizes.",
        ),
        (
            ready(loss_vs_compute(curves.runs, curves.frontier, curves.compute_fit)),
            "Each size's loss as training goes on against the compute spent (C ≈ 6·N·tokens); the thick line is "
            "the compute-optimal frontier.",
        ),
    ]


def _importances(view: Importances) -> Figures:
    fig = importance_heatmap(list(view.tokens), list(view.methods), list(view.scores))
    return [
        (
            with_source(ready(fig), source_line(view.model_id, view.text)),
            f"Explained: {view.said}. Each row is one method, divided by its largest score (hover for the raw "
            "number); blue raises the explained number, red lowers it.",
        )
    ]


DRAWERS = {
    Matrices: _matrices,
    Biases: _biases,
    PatchAttention: _patches,
    WindowAttention: _window,
    WordMaps: _words,
    BlankGuesses: _blank,
    Objectives: _objectives,
    Curves: _curves,
    Importances: _importances,
}
