"""Vision Transformer: an image cut into patches, where [CLS] and each patch look, rollout, occlusion."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import streamlit as st

from app.figures import shared_build
from app.runtime.models import list_models
from app.state import PERSIST, bounded, choose, clamp, defaults
from app.ui.charts import clicked_point, show_chart
from app.ui.guard import show_error
from app.ui.pickers import load_model, typed_model_field
from app.ui.rollout_controls import SHORT, discard_rule_picker, discard_sentence
from app.ui.safe_text import quoted
from app.ui.theme import side_by_side
from app.views.vit.data import (
    get_vision_trace,
    vit_cls_maps,
    vit_digit_count,
    vit_digit_held_out,
    vit_digit_label,
    vit_last_layer_map,
    vit_occlusion,
    vit_patch_map,
    vit_read_upload,
    vit_rollout_map,
    vit_sample,
    vit_windowed,
)
from app.views.vit.figures import image_with_grid, overlay, overlay_grid, probability_bars, square_at
from app.views.vit.keys import Vit
from app.views.vit.swin import show_windows
from engine.families import hub_labels

DEFAULT_MODEL = Vit.DEFAULTS[Vit.model]
SOURCE_LABELS = {
    "digit": "Digit (scikit-learn)",
    "shape": "Shape (drawn)",
    "photo": "Photo (scikit-learn)",
    "upload": "Upload your own",
}
SOURCES = {name: SOURCE_LABELS[name] for name in Vit.OPTIONS[Vit.source]}
SHAPES, PHOTOS, FUSIONS = Vit.OPTIONS[Vit.shape], Vit.OPTIONS[Vit.photo], Vit.OPTIONS[Vit.fusion]
UPLOAD_TYPES = ["png", "jpg", "jpeg", "gif", "bmp", "webp", "tif", "tiff"]


def pick_image() -> tuple[np.ndarray | None, str, str, tuple[str, ...]]:
    """The input image, its source, a short description and decoding notices (None and a message when there is none)."""
    source = st.radio("Image", list(SOURCES), format_func=SOURCES.get, key=Vit.source, horizontal=True, **PERSIST)
    if source not in SOURCES:
        source = "digit"
    if source == "digit":
        last = vit_digit_count() - 1
        st.number_input(
            "Digit sample number",
            min_value=0,
            max_value=last,
            step=1,
            key=Vit.digit,
            **PERSIST,
            help=f"scikit-learn's {last + 1:,} hand-written digits. The own ViT trained on 80% of "
            "them; the caption says whether this one is in the 20% it never saw.",
        )
        index = bounded(st.session_state.get(Vit.digit), 0, last)
        label = vit_digit_label(index)
        seen = (
            "held out: the own ViT never trained on it"
            if vit_digit_held_out(index)
            else "one of the own ViT's training images"
        )
        described = f"digit sample {index} (true label {label}; {seen})"
        return vit_sample("digit", str(index)), source, described, ()
    if source == "shape":
        name = st.selectbox("Shape", SHAPES, key=Vit.shape, **PERSIST)
        return vit_sample("shape", name if name in SHAPES else SHAPES[0]), source, f"a drawn {name}", ()
    if source == "photo":
        name = st.selectbox("Photo", PHOTOS, key=Vit.photo, **PERSIST)
        return vit_sample("photo", name if name in PHOTOS else PHOTOS[0]), source, f"the photo '{name}'", ()
    upload = st.file_uploader(
        "Your image",
        type=UPLOAD_TYPES,
        key=Vit.upload,
        help="PNG, JPEG, GIF, BMP, WebP or TIFF, up to 10 MB. It stays in memory and is never saved.",
    )
    if upload is None:
        st.info("Choose an image file to see where the model looks.")
        return None, source, "", ()
    try:
        pixels, notices = vit_read_upload(upload.getvalue())
    except Exception as err:  # noqa: BLE001 — read_image words its known failures; Pillow may raise others
        show_error(err, before=f"{quoted(upload.name)} cannot be used: ", level="error")
        return None, source, "", ()
    return pixels, source, f"your image {quoted(upload.name)}", tuple(notices)


def pick_model_id() -> str:
    specs = [s for s in list_models() if s.family == "vit"]
    ids = [s.id for s in specs] or [DEFAULT_MODEL]
    choose(Vit.model, ids)
    labels = {s.id: (s.label if s.offline else f"{s.label} — needs internet") for s in specs}
    st.selectbox(
        "Model",
        ids,
        format_func=lambda i: labels.get(i, i),
        key=Vit.model,
        **PERSIST,
        help="The tiny ViT trained here on 8×8 digits works offline; ImageNet ViT, DeiT and Swin download "
        "from the Hub.",
    )
    custom = typed_model_field(
        Vit.hub_id,
        "Another ViT",
        "e.g. google/vit-base-patch16-224",
        f"{', '.join(hub_labels('vit'))} image classifiers.",
    )
    return custom or st.session_state[Vit.model]


def csv_bytes(grid: np.ndarray) -> bytes:
    buf = io.StringIO()
    pd.DataFrame(
        grid, index=[f"row {r}" for r in range(grid.shape[0])], columns=[f"col {c}" for c in range(grid.shape[1])]
    ).to_csv(buf, float_format="%.6f")
    return buf.getvalue().encode("utf-8")


def show_input(image: np.ndarray, trace, source: str, described: str, model_id: str) -> None:
    tokens = (
        "Each patch becomes one token; there is no [CLS] token: the answer reads the average of the last "
        "stage's patches."
        if vit_windowed(trace)
        else "Each patch becomes one token, plus a [CLS] token that collects the answer."
    )
    if model_id == DEFAULT_MODEL and source != "digit":
        st.warning(
            "This tiny model only learned the hand-written digits 0–9 from 8×8 images, so its answer for "
            f"{described} is a guess that means little. Where it looks is still worth seeing."
        )
    rows, cols = trace.grid
    if source == "digit":
        left, right = st.columns(2)
    else:
        original, left, right = st.columns([2, 3, 3])
        with original:
            st.image(image, caption="The original", clamp=True)
    with left:
        show_chart(
            shared_build(image_with_grid, trace.image, trace.patch_size, title="What the model sees"), key=Vit.image
        )
        st.caption(
            f"{described[:1].upper() + described[1:]}, as the model reads it: {trace.image.shape[0]}×{trace.image.shape[1]} pixels "
            f"cut into {rows}×{cols} = {rows * cols} patches of {trace.patch_size}×{trace.patch_size} pixels "
            f"(blue lines). {tokens}"
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


def show_cls(trace, layer: int, head: int) -> np.ndarray:
    maps = vit_cls_maps(trace, layer)
    left, right = side_by_side([2, 3])
    with left:
        show_chart(
            shared_build(
                overlay, trace.image, maps[head], trace.patch_size, title=f"[CLS] → patches, layer {layer}, head {head}"
            ),
            key=Vit.cls,
        )
        st.caption(
            "Where the [CLS] token looks: the brighter a patch, the more of its information [CLS] takes in this "
            "head (the [CLS] row of the attention pattern; the patches' weights plus [CLS]'s own sum to 1)."
        )
        st.download_button(
            "Download as CSV",
            csv_bytes(maps[head]),
            file_name=f"vit_cls_L{layer}_H{head}.csv",
            mime="text/csv",
            icon=":material/download:",
        )
    with right:
        show_chart(shared_build(overlay_grid, trace.image, maps, trace.patch_size, selected=head), key=Vit.heads)
        st.caption(
            f"All {maps.shape[0]} heads of layer {layer} (the chosen one marked ▶), each coloured from 0 to its "
            "own maximum: compare where they look, not how bright they are."
        )
    return maps


def apply_click(trace) -> None:
    """A click on the patch chart (its selection, kept in session state) picks the query patch, once per click."""
    point = clicked_point(Vit.patch_map)
    hit = square_at(point, trace.patch_size, *trace.grid) if point is not None else None
    if hit is not None and st.session_state.get(Vit.last_click) != hit:
        st.session_state[Vit.last_click] = hit
        st.session_state[Vit.patch] = hit[0] * trace.grid[1] + hit[1]


def show_patch(trace, layer: int, head: int) -> None:
    rows, cols = trace.grid
    n = rows * cols
    apply_click(trace)
    clamp(Vit.patch, 0, n - 1)
    left, right = st.columns([1, 2])
    with left:
        st.number_input(
            "Patch (click one in the chart, or type its number)",
            min_value=0,
            max_value=n - 1,
            step=1,
            key=Vit.patch,
            **PERSIST,
        )
        patch = bounded(st.session_state.get(Vit.patch), 0, n - 1)
        r, c = divmod(patch, cols)
        st.caption(f"Patch {patch} is row {r}, column {c} of the {rows}×{cols} grid.")
    with right:
        grid = vit_patch_map(trace, layer, head, patch)
        show_chart(
            shared_build(
                overlay,
                trace.image,
                grid,
                trace.patch_size,
                mark=patch,
                clickable=True,
                title=f"Patch {patch} → patches, layer {layer}, head {head}",
            ),
            key=Vit.patch_map,
            on_select="rerun",
            selection_mode="points",
        )
        st.caption(
            "The outlined patch is the query: colours show how much it attends to every patch (its row of the "
            "attention pattern). Click another patch to make it the query. Patches often look at neighbours "
            "or at patches with similar content."
        )


def show_rollout(model_id: str, image: np.ndarray, trace) -> tuple[str, float, str]:
    st.subheader("Attention rollout: following attention through all layers")
    c1, c2, c3 = st.columns([1, 1, 2])
    with c1:
        fusion = st.radio(
            "Head fusion",
            FUSIONS,
            key=Vit.fusion,
            horizontal=True,
            **PERSIST,
            help="How the heads of a layer become one map: their mean (the paper), max or min.",
        )
    with c2:
        st.slider(
            "Discard ratio",
            0.0,
            0.9,
            step=0.1,
            key=Vit.discard,
            **PERSIST,
            help="Drop this share of each layer's weakest weights before multiplying: sharper maps. The "
            "discard rule says which weights may go.",
        )
    with c3:
        rule = discard_rule_picker(Vit.discard_rule, "`[CLS]`")
    fusion = fusion if fusion in FUSIONS else "mean"
    discard = min(max(float(st.session_state.get(Vit.discard) or 0.0), 0.0), 0.9)
    left, right = side_by_side(2)
    last = trace.attention.n_layers - 1
    title = f"Rollout, heads fused by {fusion}, discard {discard:.1f}" + (f" ({SHORT[rule]})" if discard > 0 else "")
    with left:
        show_chart(
            shared_build(
                overlay,
                trace.image,
                vit_rollout_map(model_id, image, fusion, discard, rule),
                trace.patch_size,
                title=title,
            ),
            key=Vit.rollout,
        )
    with right:
        show_chart(
            shared_build(
                overlay,
                trace.image,
                vit_last_layer_map(trace, fusion),
                trace.patch_size,
                title=f"Raw attention of the last layer ({last}), {fusion} of heads",
            ),
            key=Vit.last,
        )
    st.caption(
        "Raw attention (right) only says where [CLS] looks in the last layer's *input*, which is already a mix "
        "of patches. Rollout (left, Abnar & Zuidema 2020) multiplies the attention of every layer, each mixed "
        "half-and-half with the residual connection, to estimate how much each *original* patch flows into "
        "[CLS]. " + discard_sentence(discard, rule, "`[CLS]`")
    )
    return fusion, discard, rule


def show_occlusion(model_id: str, image: np.ndarray, trace, fusion: str, discard: float, rule: str) -> None:
    st.subheader("Occlusion check: does the model need what it attends to?")
    if not len(trace.labels):
        st.info("This model has no classification head, so there is no prediction to test.")
        return
    n = trace.grid[0] * trace.grid[1]
    clamp(Vit.k, 0, n)
    st.slider("Patches to hide (k)", 0, n, key=Vit.k, **PERSIST)
    k = bounded(st.session_state.get(Vit.k), 0, n)
    with st.spinner("Re-classifying with patches hidden…"):
        result = vit_occlusion(model_id, image, k, fusion, discard, rule)
    table = pd.DataFrame(
        {
            "hidden patches": [r.strategy for r in result.rows],
            "which": [", ".join(map(str, r.patches)) or "none" for r in result.rows],
            "prediction": [r.prediction for r in result.rows],
            f"p({result.original})": [round(r.p_original, 4) for r in result.rows],
            "change": [round(r.p_original - result.p_original, 4) for r in result.rows],
        }
    )
    st.dataframe(table, hide_index=True)
    st.caption(
        f"With nothing hidden the model says **{result.original}** ({result.p_original:.0%}). Each row hides k "
        "patches (painted with the background/mean colour): the k that the rollout ranks highest, k random "
        "ones, or the k it ranks lowest. If the rollout points at what the model uses, hiding its top patches "
        "should lower the probability the most. Try it: often it does not, because attention is not the same "
        "as importance."
    )
    st.download_button(
        "Download the table as CSV",
        table.to_csv(index=False).encode("utf-8"),
        file_name="vit_occlusion.csv",
        mime="text/csv",
        icon=":material/download:",
    )


def main() -> None:
    defaults(Vit.DEFAULTS)
    st.title("Vision Transformer")
    st.write(
        "A Vision Transformer cuts an image into square patches and treats each one like a word. "
        "See where its [CLS] token looks, where each patch looks, and whether that matters for the answer."
    )
    top_left, top_right = st.columns([3, 2])
    with top_left:
        image, source, described, notices = pick_image()
    with top_right:
        model_id = pick_model_id()
    if image is None:
        return
    card = load_model(model_id)
    if card is None:
        return
    if card.family != "vit":
        st.error(f"{quoted(model_id)} is not a Vision Transformer (it is a {card.family} model). Pick a ViT.")
        return
    try:
        with st.spinner("Running the model…"):
            trace = get_vision_trace(model_id, image)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    notices = (*notices, *trace.notices)
    if notices:
        st.info("\n".join(f"- {notice}" for notice in notices))
    show_input(image, trace, source, described, model_id)
    if vit_windowed(trace):  # a Swin: windows instead of [CLS], rollout and occlusion
        show_windows(trace, csv_bytes)
        return

    n_layers, n_heads = trace.attention.n_layers, trace.attention.n_heads
    st.subheader("Where [CLS] looks")
    c1, c2 = st.columns(2)
    with c1:
        clamp(Vit.layer, 0, n_layers - 1)
        layer = int(st.selectbox("Layer", range(n_layers), key=Vit.layer, **PERSIST))
    with c2:
        clamp(Vit.head, 0, n_heads - 1)
        head = int(st.selectbox("Head", range(n_heads), key=Vit.head, **PERSIST))
    show_cls(trace, layer, head)
    st.subheader("Where one patch looks")
    show_patch(trace, layer, head)
    fusion, discard, rule = show_rollout(model_id, image, trace)
    show_occlusion(model_id, image, trace, fusion, discard, rule)


main()
