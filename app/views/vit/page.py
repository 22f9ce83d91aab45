"""Vision Transformer: an image cut into patches, where [CLS] and each patch look, rollout, occlusion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import load_model, pick_family_model, pick_index, pick_int, upload_field
from app.figures import shared_build
from app.state import PERSIST, defaults
from app.ui.charts import clicked_square, show_chart
from app.ui.export import csv_button, grid_table
from app.ui.guard import attempt
from app.ui.rollout_controls import SHORT, discard_rule_picker, discard_sentence
from app.ui.safe_text import quoted
from app.ui.theme import side_by_side
from app.views.vit import data
from app.views.vit.figures import image_with_grid, overlay, overlay_grid, probability_bars, window_overlay
from app.views.vit.keys import Vit
from engine import samples
from engine.analysis.vision import patch_map
from engine.families import hub_labels

DEFAULT_MODEL = Vit.DEFAULTS[Vit.model]
SOURCES = {
    "digit": "Digit (scikit-learn)",
    "shape": "Shape (drawn)",
    "photo": "Photo (scikit-learn)",
    "upload": "Upload your own",
}
MODEL_HELP = "The tiny ViT trained here on 8×8 digits works offline; ImageNet ViT, DeiT and Swin download from the Hub."
HUB_HELP = ", ".join(hub_labels("vit")) + " image classifiers."
OTHER_MODEL = (Vit.hub_id, "Another ViT", "e.g. google/vit-base-patch16-224", HUB_HELP)


@dataclass(frozen=True, eq=False)
class Picture:
    """The input image, its source (``SOURCES``), a few words that name it and its decoding notices."""

    image: np.ndarray
    source: str
    described: str
    notices: tuple[str, ...] = ()


def pick_image() -> Picture | None:
    """The input image (None, with a note, while there is none)."""
    source = st.radio("Image", list(SOURCES), format_func=SOURCES.get, key=Vit.source, horizontal=True, **PERSIST)
    source = source if source in SOURCES else "digit"
    if source == "digit":
        n = samples.n_digits()
        help = (
            f"scikit-learn's {n:,} hand-written digits. The own ViT trained on 80% of them; the caption says whether "
            "this one is in the 20% it never saw."
        )
        index = pick_int(st.number_input, "Digit sample number", 0, n - 1, Vit.digit, help=help)
        seen = "one of the own ViT's training images"
        seen = "held out: the own ViT never trained on it" if samples.digit_held_out(index) else seen
        described = f"digit sample {index} (true label {samples.digit(index)[1]}; {seen})"
        return Picture(data.vit_sample("digit", str(index)), source, described)
    if source in ("shape", "photo"):
        options = Vit.OPTIONS[getattr(Vit, source)]
        name = st.selectbox(source.title(), options, key=getattr(Vit, source), **PERSIST)
        name = name if name in options else options[0]
        described = f"a drawn {name}" if source == "shape" else f"the photo '{name}'"
        return Picture(data.vit_sample(source, name), source, described)
    empty = "Choose an image file to see where the model looks."
    if (upload := upload_field("Your image", Vit.upload, empty, data.vit_read_upload)) is None:
        return None
    (pixels, notices), name = upload
    return Picture(pixels, source, f"your image {quoted(name)}", tuple(notices))


def show_input(picture: Picture, trace, model_id: str) -> None:
    source, described = picture.source, picture.described
    tokens = ", plus a [CLS] token that collects the answer"
    if data.vit_windowed(trace):
        tokens = "; there is no [CLS] token: the answer reads the average of the last stage's patches"
    if model_id == DEFAULT_MODEL and source != "digit":
        st.warning(
            "This tiny model only learned the hand-written digits 0–9 from 8×8 images, so its answer for "
            f"{described} is a guess that means little. Where it looks is still worth seeing."
        )
    rows, cols = trace.grid
    *original, left, right = st.columns(2 if source == "digit" else [2, 3, 3])
    for column in original:
        column.image(picture.image, caption="The original", clamp=True)
    with left:
        fig = shared_build(image_with_grid, trace.image, trace.patch_size, title="What the model sees")
        show_chart(fig, key=Vit.image)
        height, width = trace.image.shape[:2]
        st.caption(
            f"{described[:1].upper() + described[1:]}, as the model reads it: {height}×{width} pixels cut into "
            f"{rows}×{cols} = {rows * cols} patches of {trace.patch_size}×{trace.patch_size} pixels (blue lines). "
            f"Each patch becomes one token{tokens}."
        )
    with right:
        if len(trace.labels):
            show_chart(shared_build(probability_bars, tuple(trace.labels), trace.probs), key=Vit.probs)
            st.caption(
                f"The model's answer is **{trace.prediction}** ({trace.probs.max():.0%}). Bars: the probability "
                "of each class (the softmax of the class head's outputs), most likely first."
            )
        else:
            st.info("This model has no classification head, so there is no prediction; its attention is still shown.")


def show_cls(trace, layer: int, head: int) -> None:
    maps = data.vit_cls_maps(trace, layer)
    left, right = side_by_side([2, 3])
    with left:
        title = f"[CLS] → patches, layer {layer}, head {head}"
        show_chart(shared_build(overlay, trace.image, maps[head], trace.patch_size, title=title), key=Vit.cls)
        st.caption(
            "Where the [CLS] token looks: the brighter a patch, the more of its information [CLS] takes in this "
            "head (the [CLS] row of the attention pattern; the patches' weights plus [CLS]'s own sum to 1)."
        )
        csv_button("Download as CSV", grid_table(maps[head]), f"vit_cls_L{layer}_H{head}.csv", float_format="%.6f")
    with right:
        show_chart(shared_build(overlay_grid, trace.image, maps, trace.patch_size, selected=head), key=Vit.heads)
        st.caption(
            f"All {maps.shape[0]} heads of layer {layer} (the chosen one marked ▶), each coloured from 0 to its "
            "own maximum: compare where they look, not how bright they are."
        )


def show_patch(trace, layer: int, head: int) -> None:
    rows, cols = trace.grid
    left, right = st.columns([1, 2])
    with left:
        patch = pick_patch(Vit.patch, Vit.patch_map, Vit.last_click, trace.patch_size, rows, cols)
        r, c = divmod(patch, cols)
        st.caption(f"Patch {patch} is row {r}, column {c} of the {rows}×{cols} grid.")
    with right:
        grid = patch_map(trace, layer, head, patch)
        title = f"Patch {patch} → patches, layer {layer}, head {head}"
        fig = shared_build(overlay, trace.image, grid, trace.patch_size, mark=patch, clickable=True, title=title)
        show_chart(fig, key=Vit.patch_map, on_select="rerun", selection_mode="points")
        st.caption(
            "The outlined patch is the query: colours show how much it attends to every patch (its row of the "
            "attention pattern). Click another patch to make it the query. Patches often look at neighbours "
            "or at patches with similar content."
        )


def pick_rollout() -> data.Rollout:
    st.subheader("Attention rollout: following attention through all layers")
    c1, c2, c3 = st.columns([1, 1, 2])
    fusions = Vit.OPTIONS[Vit.fusion]
    help = "How the heads of a layer become one map: their mean (the paper), max or min."
    fusion = c1.radio("Head fusion", fusions, key=Vit.fusion, horizontal=True, help=help, **PERSIST)
    help = "Drop this share of each layer's weakest weights before multiplying (sharper maps); the rule says which."
    c2.slider("Discard ratio", 0.0, 0.9, step=0.1, key=Vit.discard, help=help, **PERSIST)
    with c3:
        rule = discard_rule_picker(Vit.discard_rule, "`[CLS]`")
    discard = min(max(float(st.session_state.get(Vit.discard) or 0.0), 0.0), 0.9)
    return data.Rollout(fusion if fusion in fusions else "mean", discard, rule)


def show_rollout(model_id: str, image: np.ndarray, trace, how: data.Rollout) -> None:
    left, right = side_by_side(2)
    last = trace.attention.n_layers - 1
    title = f"Rollout, heads fused by {how.fusion}, discard {how.discard:.1f}"
    title += f" ({SHORT[how.rule]})" if how.discard > 0 else ""
    with left:
        grid = data.vit_rollout_map(model_id, image, how)
        show_chart(shared_build(overlay, trace.image, grid, trace.patch_size, title=title), key=Vit.rollout)
    with right:
        grid = data.vit_last_layer_map(trace, how.fusion)
        title = f"Raw attention of the last layer ({last}), {how.fusion} of heads"
        show_chart(shared_build(overlay, trace.image, grid, trace.patch_size, title=title), key=Vit.last)
    st.caption(
        "Raw attention (right) only says where [CLS] looks in the last layer's *input*, which is already a mix "
        "of patches. Rollout (left, Abnar & Zuidema 2020) multiplies the attention of every layer, each mixed "
        "half-and-half with the residual connection, to estimate how much each *original* patch flows into "
        "[CLS]. " + discard_sentence(how.discard, how.rule, "`[CLS]`")
    )


def show_occlusion(model_id: str, image: np.ndarray, trace, how: data.Rollout) -> None:
    st.subheader("Occlusion check: does the model need what it attends to?")
    if not len(trace.labels):
        st.info("This model has no classification head, so there is no prediction to test.")
        return
    n = trace.grid[0] * trace.grid[1]
    k = pick_int(st.slider, "Patches to hide (k)", 0, n, Vit.k)
    with st.spinner("Re-classifying with patches hidden…"):
        result = data.vit_occlusion(model_id, image, k, how)
    p = f"p({result.original})"
    rows = [(r.strategy, ", ".join(map(str, r.patches)) or "none", r.prediction, r.p_original) for r in result.rows]
    table = pd.DataFrame(rows, columns=["hidden patches", "which", "prediction", p])
    table = table.assign(change=table[p] - result.p_original).round(4)
    st.dataframe(table, hide_index=True)
    st.caption(
        f"With nothing hidden the model says **{result.original}** ({result.p_original:.0%}). Each row hides k "
        "patches (painted with the background/mean colour): the k the rollout ranks highest, k random ones, or the "
        "k it ranks lowest. If the rollout points at what the model uses, hiding its top patches should lower the "
        "probability the most. Often it does not: attention is not the same as importance."
    )
    csv_button("Download the table as CSV", table, "vit_occlusion.csv", index=False)


def pick_patch(key: str, chart: str, memo: str, size: int, rows: int, cols: int) -> int:
    """The query patch: the one last clicked on ``chart`` (``size``-pixel patches), else the typed one."""
    if (clicked := clicked_square(chart, memo, size, rows, cols)) is not None:
        st.session_state[key] = clicked
    return pick_int(st.number_input, "Patch (click one in the chart, or type its number)", 0, rows * cols - 1, key)


def _pickers(trace) -> tuple[int, int, int]:
    """Stage, block and head (each kept inside what this model has)."""
    c1, c2, c3 = st.columns(3)

    def stage_name(s: int) -> str:
        rows, cols = trace.stage_blocks(s)[0].grid
        return f"{s}: {rows}×{cols} patches of {trace.cell_size(s)} px"

    def block_name(b: int) -> str:
        return f"{b}: windows shifted by {blocks[b].shift}" if blocks[b].shift else f"{b}: regular windows"

    help = "Between stages Swin merges each 2×2 group of patches into one: fewer, larger patches, like a conv-net."
    with c1:
        stage = pick_index("Stage", trace.n_stages, Vit.swin_stage, format_func=stage_name, help=help)
    blocks = trace.stage_blocks(stage)
    help = "Even blocks cut the grid into regular windows; odd blocks shift the windows by half a window."
    with c2:
        block = pick_index("Block", len(blocks), Vit.swin_block, format_func=block_name, help=help)
    with c3:
        head = pick_index("Head", blocks[block].n_heads, Vit.swin_head)
    return stage, block, head


def _explain(trace, stage: int, block: int, row) -> str:
    """The caption under the window chart: what is drawn, and what a shift does in this block."""
    b = trace.block_at(stage, block)
    w, s = b.window, b.shift
    text = (
        f"Swin lets a patch attend only inside its window of {w}×{w} patches (white outline): colours are the "
        f"query's weights (they sum to 1 over the window), the thin lines are this block's window borders, and "
        f"the query is outlined in cyan. Click another patch to make it the query."
    )
    after = [x for x in trace.stage_blocks(stage) if x.block == block + 1 and x.shift]
    if b.n_windows == 1 and not s:
        text += " This stage's grid fits in one window, so here attention covers the whole image and nothing shifts."
    elif s:
        text += (
            f" **Shifted windows:** before cutting windows, block {block} rolls the grid {s} patches up and to the "
            f"left, so its windows start {s} patches further down and right than in the block before and straddle "
            "that block's borders: this is how information crosses from one window to the next, while each "
            "attention stays small."
        )
        if len(row.pieces) > 1:
            text += (
                " The roll wraps round at the edges, so this window also holds patches from the opposite edge "
                "(dashed): a mask stops the query from looking at them, and only its own side gets weight."
            )
    elif after:
        text += f" The next block shifts these windows by half a window ({after[0].shift} patches): pick it to see."
    if row.padding > 5e-4:
        text += (
            f" {row.padding:.1%} of the weight goes to padding (the grid is padded to a multiple of {w}); it is "
            "not on the map."
        )
    return text


def show_windows(trace) -> None:
    """Stage/block/head pickers, the query patch (clicked or typed) and its window over the image."""
    st.subheader("Where one patch looks: attention inside windows")
    st.write(
        "A Swin Transformer has no [CLS] token and never attends over the whole image at once: each block "
        "splits the patches into small windows and runs attention inside each window only."
    )
    stage, block, head = _pickers(trace)
    b = trace.block_at(stage, block)
    rows, cols = b.grid
    cell = trace.cell_size(stage)
    left, right = st.columns([1, 2])
    with left:
        patch = pick_patch(Vit.swin_patch, Vit.swin_map, Vit.swin_click, cell, rows, cols)
        row = data.swin_window_row(trace, stage, block, head, patch)
        r, c = divmod(patch, cols)
        st.caption(
            f"Patch {patch} is row {r}, column {c} of stage {stage}'s {rows}×{cols} grid; it sits in window "
            f"{row.window_index} of {b.n_windows} in this block."
        )
        name = f"swin_S{stage}_B{block}_H{head}_P{patch}.csv"
        csv_button("Download the weights as CSV", grid_table(row.weights), name, float_format="%.6f")
    with right:
        title = f"Patch {patch} → its window, stage {stage}, block {block}, head {head}"
        fig = window_overlay(trace.image, row, cell, patch, title=title)
        show_chart(fig, key=Vit.swin_map, on_select="rerun", selection_mode="points")
        st.caption(_explain(trace, stage, block, row))


def main() -> None:
    defaults(Vit.DEFAULTS)
    st.title("Vision Transformer")
    st.write(
        "A Vision Transformer cuts an image into square patches and treats each one like a word. "
        "See where its [CLS] token looks, where each patch looks, and whether that matters for the answer."
    )
    top_left, top_right = st.columns([3, 2])
    with top_left:
        picture = pick_image()
    with top_right:
        model_id = pick_family_model("vit", Vit.model, DEFAULT_MODEL, MODEL_HELP, OTHER_MODEL)
    if picture is None or (card := load_model(model_id)) is None:
        return
    if card.family != "vit":
        st.error(f"{quoted(model_id)} is not a Vision Transformer (it is a {card.family} model). Pick a ViT.")
        return
    image = picture.image
    if (trace := attempt(lambda: data.get_vision_trace(model_id, image), "Running the model…")) is None:
        return
    if notices := (*picture.notices, *trace.notices):
        st.info("\n".join(f"- {notice}" for notice in notices))
    show_input(picture, trace, model_id)
    if data.vit_windowed(trace):  # a Swin: windows instead of [CLS], rollout and occlusion
        show_windows(trace)
        return
    st.subheader("Where [CLS] looks")
    c1, c2 = st.columns(2)
    with c1:
        layer = pick_index("Layer", trace.attention.n_layers, Vit.layer)
    with c2:
        head = pick_index("Head", trace.attention.n_heads, Vit.head)
    show_cls(trace, layer, head)
    st.subheader("Where one patch looks")
    show_patch(trace, layer, head)
    how = pick_rollout()
    show_rollout(model_id, image, trace, how)
    show_occlusion(model_id, image, trace, how)


main()
