"""Captions: an image captioner with soft attention writes a caption word by word; see where it looks for each word.

Picture (a held-out scene, a drawing, an upload) → greedy or beam-search caption → one α map per written word
over the picture (the "Show, Attend and Tell" figure), the chosen word's map large, β per word, the numbers of
any grid cell; and the held-out scenes the model gets wrong, with where it looked. A pretrained captioner (ViT + GPT-2,
BLIP; a typed Hub id or folder) shows its decoder's cross-attention on the image's patches instead, with layer and
head pickers, and each word's weight on [CLS] where our captioner shows β.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from app.figures import shared_build
from app.links import open_page
from app.runtime.models import list_models, model_loaded
from app.state import PERSIST, bounded, choose, clamp, default, defaults
from app.ui.charts import clicked_point, set_source, show_chart
from app.ui.clicks import once
from app.ui.guard import busy, show_error
from app.ui.pickers import typed_model_field
from app.ui.safe_text import md, quoted
from app.ui.theme import side_by_side
from app.views.bahdanau.keys import Bahdanau
from app.views.captions.data import (
    CAPTION_IMAGE_SIZE,
    CAPTION_MAX_BEAM,
    CAPTION_MODEL,
    HELD_OUT_SCENES,
    PRETRAINED_UPLOAD_SIZE,
    CaptionRequest,
    DrawnObject,
    as_seen,
    caption_attention,
    caption_layers,
    caption_mistakes,
    caption_picture,
    caption_trace,
    is_pretrained_captioner,
    read_caption_upload,
)
from app.views.captions.figures import beta_bars, cls_bars, picture_with_boxes, word_map, word_panels
from app.views.captions.keys import Captions
from app.views.vit.figures import square_at
from engine.corpora import scenes
from engine.families import hub_labels

VIEWS = {"caption": "Caption a picture", "mistakes": "Mistakes on held-out scenes"}
SOURCES = {"scene": "A held-out scene", "draw": "Draw one", "upload": "Upload your own"}
SEARCHES = {"greedy": "Greedy", "beam": "Beam search"}
SHAPES, COLOURS, SIZES = scenes.SHAPES, tuple(scenes.COLOURS), tuple(scenes.SIZES)  # what the scenes draw
UPLOAD_TYPES = ["png", "jpg", "jpeg", "gif", "bmp", "webp", "tif", "tiff"]  # as the Vision Transformer page
SIDE = CAPTION_IMAGE_SIZE
BAHDANAU_SENTENCE = "the red car is fast"


def _defaults() -> None:
    """Defaults once per session; a choice that is not one of its options (a forged value) goes back to its default."""
    defaults({**Captions.DEFAULTS, **Captions.DRAW_DEFAULTS})
    choices = {**Captions.OPTIONS, Captions.count: (1, 2)}
    for i, (shape, colour, size, row, col) in enumerate(Captions.DRAWING):
        for prefix, value, options in (
            (Captions.shape, shape, SHAPES),
            (Captions.colour, colour, COLOURS),
            (Captions.size, size, SIZES),
        ):
            default(f"{prefix}{i}", value)
            choices[f"{prefix}{i}"] = options
        for prefix, value in ((Captions.row, row), (Captions.col, col)):
            clamp(f"{prefix}{i}", 0, SIDE - 1, start=value)
    for key, options in choices.items():
        choose(key, options)


def _option(key: str, options) -> str:
    """The session's value of a choice, or its default when it is not one of ``options`` (a forged value)."""
    value = st.session_state.get(key)
    return value if value in options else Captions.DEFAULTS[key]


# ---------------------------------------------------------------- the picture


def draw_controls() -> tuple[tuple[DrawnObject, ...], bool]:
    """One or two objects: shape, colour, size and where (the centre, in pixels of the 64×64 picture)."""
    st.radio("Objects", [1, 2], key=Captions.count, horizontal=True, **PERSIST)
    count = bounded(st.session_state.get(Captions.count), 1, 2)
    objects = []
    for i, column in enumerate(st.columns(2)[:count]):
        with column:
            st.markdown(f"**Object {i + 1}**")
            shape = st.selectbox("Shape", SHAPES, key=f"{Captions.shape}{i}", **PERSIST)
            colour = st.selectbox("Colour", COLOURS, key=f"{Captions.colour}{i}", **PERSIST)
            size = st.selectbox("Size", SIZES, key=f"{Captions.size}{i}", **PERSIST)
            st.slider("Down (row of its centre)", 0, SIDE - 1, key=f"{Captions.row}{i}", **PERSIST)
            st.slider("Across (column of its centre)", 0, SIDE - 1, key=f"{Captions.col}{i}", **PERSIST)
            row = bounded(st.session_state.get(f"{Captions.row}{i}"), 0, SIDE - 1)
            col = bounded(st.session_state.get(f"{Captions.col}{i}"), 0, SIDE - 1)
            objects.append(DrawnObject(shape, colour, size, row, col))
    st.checkbox("Textured background", key=Captions.textured, **PERSIST)
    st.caption(
        "Shapes near an edge are moved in until they fit. Two objects need a clear relation: one clearly "
        "above, below, left or right of the other, not overlapping."
    )
    return tuple(objects), bool(st.session_state.get(Captions.textured))


def pick_picture(pretrained: bool = False) -> tuple[CaptionRequest | None, tuple[str, ...]]:
    """The source and its controls; the request without its decoding (None when there is no picture yet). An upload
    is fitted to our captioner's 64 pixels, or to 384 for a ``pretrained`` one."""
    st.radio("Picture", list(SOURCES), format_func=SOURCES.get, key=Captions.source, horizontal=True, **PERSIST)
    source = _option(Captions.source, SOURCES)
    if source == "scene":
        last = HELD_OUT_SCENES - 1
        clamp(Captions.scene, 0, last)
        st.number_input(
            "Held-out scene number",
            min_value=0,
            max_value=last,
            step=1,
            key=Captions.scene,
            **PERSIST,
            help=f"The {last + 1} scenes the captioner's card was measured on; it never trained on them.",
        )
        return CaptionRequest(source="scene", scene=bounded(st.session_state.get(Captions.scene), 0, last)), ()
    if source == "draw":
        objects, textured = draw_controls()
        return CaptionRequest(source="draw", drawing=objects, textured=textured), ()
    upload = st.file_uploader(
        "Your picture",
        type=UPLOAD_TYPES,
        key=Captions.upload,
        help="PNG, JPEG, GIF, BMP, WebP or TIFF, up to 10 MB. It stays in memory and is never saved.",
    )
    if upload is None:
        st.info(
            "Choose a picture file to see what the captioner writes and where it looks."
            + (
                ""
                if pretrained
                else " It only ever saw flat shapes on a light background, so draw a few on a plain page."
            )
        )
        return None, ()
    try:
        side = PRETRAINED_UPLOAD_SIZE if pretrained else CAPTION_IMAGE_SIZE
        pixels, notices = read_caption_upload(upload.getvalue(), side)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err, before=f"{quoted(upload.name)} cannot be used: ", level="error")
        return None, ()
    return CaptionRequest(source="upload", upload=pixels), notices


def pick_decoding() -> int:
    """Greedy or beam search; returns the beam width (1: greedy)."""
    st.radio(
        "Decoding",
        list(SEARCHES),
        format_func=SEARCHES.get,
        key=Captions.search,
        horizontal=True,
        **PERSIST,
        help="Greedy writes the most probable word at every step. Beam search keeps the best few partial "
        "captions and returns the most probable whole caption.",
    )
    if _option(Captions.search, SEARCHES) == "greedy":
        return 1
    clamp(Captions.beam, 2, CAPTION_MAX_BEAM)
    st.slider("Beam width", 2, CAPTION_MAX_BEAM, key=Captions.beam, **PERSIST)
    return bounded(st.session_state.get(Captions.beam), 2, CAPTION_MAX_BEAM)


def pick_model_id() -> str:
    specs = [s for s in list_models() if s.family == "captioner"]
    ids = [s.id for s in specs] or [CAPTION_MODEL]
    choose(Captions.model, ids)
    labels = {s.id: (s.label if s.offline else f"{s.label} — needs internet") for s in specs}
    st.selectbox(
        "Model",
        ids,
        format_func=lambda i: labels.get(i, i),
        key=Captions.model,
        **PERSIST,
        help="The scene captioner, trained here on generated scenes: a small conv-net gives an 8×8 grid of "
        "features and an LSTM writes the caption, attending over the grid before every word. Pretrained "
        "captioners from the Hub write with a transformer decoder that attends over the picture's "
        "patches.",
    )
    custom = typed_model_field(
        Captions.hub_id,
        "A pretrained captioner",
        "e.g. Salesforce/blip-image-captioning-base",
        f"{' and '.join(hub_labels('captioner'))} checkpoints: a ViT encoder with a GPT-2 "
        "decoder (VisionEncoderDecoder), or BLIP's captioner.",
    )
    return custom or st.session_state[Captions.model]


def pick_layer_head(layers: int, heads: int) -> tuple[int, int | None]:
    """A pretrained captioner's decoder layer (default: the last) and head (or the mean over heads)."""
    choose(Captions.layer, range(layers), fallback=layers - 1)
    options = [Captions.MEAN_HEADS, *range(heads)]
    choose(Captions.head, options)
    left, right = st.columns(2)
    with left:
        st.selectbox(
            "Decoder layer",
            list(range(layers)),
            key=Captions.layer,
            **PERSIST,
            help="Every decoder layer has its own cross-attention over the picture's patches.",
        )
    with right:
        st.selectbox(
            "Head",
            options,
            key=Captions.head,
            **PERSIST,
            format_func=lambda h: "mean over heads" if h == Captions.MEAN_HEADS else f"head {h}",
        )
    head = st.session_state[Captions.head]
    return st.session_state[Captions.layer], None if head == Captions.MEAN_HEADS else head


# ---------------------------------------------------------------- the caption and its maps


def show_caption(trace, picture, cell_px: int) -> None:
    """The picture as the model reads it, what the model wrote, the grammar's caption and whether they match."""
    how = "greedy decoding" if trace.beam == 1 else f"the best of a beam of {trace.beam}"
    shown, words = side_by_side([2, 3])
    with shown:
        show_chart(
            shared_build(picture_with_boxes, picture.image, picture.boxes, cell_px, title="What the model reads"),
            key=Captions.picture,
        )
        boxes = " Dotted: the objects' true boxes." if picture.boxes else ""
        st.caption(
            f"{picture.described[:1].upper() + picture.described[1:]}, {picture.image.shape[0]}×"
            f"{picture.image.shape[1]} pixels, and the {picture.image.shape[0] // cell_px}×"
            f"{picture.image.shape[0] // cell_px} grid of cells the model attends over.{boxes}"
        )
    with words:
        st.markdown(f"**The model writes** ({how})\n\n> {md(trace.caption) or '(nothing)'}")
        st.caption(f"log-probability {trace.log_prob:.2f}")
        if picture.reference is None:
            st.markdown("**Reference**: none (your own picture)")
        else:
            verdict = ":green[matches]" if trace.caption == picture.reference else ":red[differs]"
            st.markdown(f"**Reference** from the scene's grammar ({verdict})\n\n> {md(picture.reference)}")


def apply_click(view) -> None:
    """A click on the large map (its selection, kept in session state) picks the cell, once per click."""
    point = clicked_point(Captions.large)
    hit = square_at(point, view.cell_px, view.grid, view.grid) if point is not None else None
    if hit is not None and st.session_state.get(Captions.last_click) != hit:
        st.session_state[Captions.last_click] = hit
        st.session_state[Captions.cell] = hit[0] * view.grid + hit[1]


def show_words(image: np.ndarray, view) -> int:
    """Every word's small map, the word picker, its large map and β; returns the chosen word."""
    n = len(view.words)
    clamp(Captions.word, 0, n - 1)
    word = bounded(st.session_state.get(Captions.word), 0, n - 1)
    show_chart(shared_build(word_panels, image, view, selected=word), key=Captions.panels)
    sums = "each map sums to 1" if view.rest is None else "each map sums to 1 less the word's weight on [CLS]"
    st.caption(
        "One picture per written word, in the caption's order: the brighter a cell, the more weight α the "
        f"model put on it just before writing that word ({sums}; each on its own colour scale, so "
        "compare where, not how bright). ▶ marks the word chosen below."
    )
    st.select_slider(
        "Word",
        list(range(n)),
        format_func=lambda t: view.labels[t],
        key=Captions.word,
        **PERSIST,
        help="Step through the caption one written word at a time.",
    )
    word = bounded(st.session_state.get(Captions.word), 0, n - 1)
    apply_click(view)
    cells = view.grid * view.grid
    clamp(Captions.cell, 0, cells - 1)
    cell = bounded(st.session_state.get(Captions.cell), 0, cells - 1)
    left, right = side_by_side([3, 2])
    with left:
        show_chart(
            shared_build(word_map, image, view, word, cell),
            key=Captions.large,
            on_select="rerun",
            selection_mode="points",
        )
        r, c = view.cell(view.peaks[word])
        st.caption(
            f"Where the model looks before writing “{md(view.words[word])}”: α over the {view.grid}×{view.grid} "
            f"grid, each {'cell' if view.rest is None else 'patch'} {view.cell_px}×{view.cell_px} pixels of "
            "the picture. Its peak is cell "
            f"{view.peaks[word]} (row {r}, column {c}, α = {float(view.alphas[word, r, c]):.3f}). The outlined "
            "cell is the one whose numbers are listed below: click a cell to choose it."
        )
    with right:
        if view.betas is None:  # a pretrained captioner: no gate; what its row leaves off the patches
            show_chart(shared_build(cls_bars, view, word), key=Captions.betas)
            st.caption(
                "The part of each word's cross-attention on [CLS], the image encoder's summary token, "
                "rather than on any one patch: the maps show the rest. The chosen word is orange; hover for "
                "its largest patch weight."
            )
            return word
        show_chart(shared_build(beta_bars, view, word), key=Captions.betas)
        st.caption(
            "β = σ(f_β(h)) gates the attended picture before the LSTM reads it: near 1 the word is written "
            "with what the map picks out, near 0 from the sentence so far alone. Compare the grammar words "
            "(“a”, “of”) with the colour and shape words. The chosen word is orange; hover for its largest α."
        )
    return word


def show_cell_numbers(view, word: int) -> None:
    """The chosen cell's α for every word, and the chosen word's α for every cell."""
    cells = view.grid * view.grid
    cell = bounded(st.session_state.get(Captions.cell), 0, cells - 1)
    r, c = view.cell(cell)
    left, right = st.columns([2, 3])
    with left:
        st.number_input(
            "Grid cell (or click one on the map)",
            min_value=0,
            max_value=cells - 1,
            step=1,
            key=Captions.cell,
            **PERSIST,
        )
        last = ("β", view.betas) if view.betas is not None else ("α on [CLS]", view.rest)
        st.dataframe(
            pd.DataFrame({"word": view.labels, "α at this cell": view.at_cell(cell), last[0]: last[1]}),
            hide_index=True,
            key=Captions.cell_words,
            column_config={name: st.column_config.NumberColumn(format="%.4f") for name in ("α at this cell", last[0])},
        )
        st.caption(
            f"Cell {cell} is row {r}, column {c} (pixels {r * view.cell_px}–{(r + 1) * view.cell_px - 1} down, "
            f"{c * view.cell_px}–{(c + 1) * view.cell_px - 1} across): how much each word's step looked at it."
        )
    with right:
        table = pd.DataFrame(
            view.alphas[word],
            index=[f"row {i}" for i in range(view.grid)],
            columns=[f"col {j}" for j in range(view.grid)],
        )
        st.dataframe(
            table,
            key=Captions.cell_table,
            column_config={col: st.column_config.NumberColumn(format="%.3f") for col in table.columns},
        )
        sums = "they sum to 1" if view.rest is None else f"with {float(view.rest[word]):.4f} on [CLS] they sum to 1"
        st.caption(f"α of “{md(view.words[word])}” in every cell (the large map's numbers; {sums}).")
        st.download_button(
            "Download this map as CSV",
            lambda: table.to_csv(float_format="%.6f").encode("utf-8"),
            key=Captions.csv,
            file_name=f"caption_word{word}_alpha.csv",
            mime="text/csv",
            icon=":material/download:",
        )


def caption_section(model_id: str, pretrained: bool = False) -> None:
    top_left, top_right = st.columns([3, 2])
    with top_left:
        request, notices = pick_picture(pretrained)
    with top_right:
        beam = pick_decoding()
    if request is None:
        return
    request = dataclasses.replace(request, beam=beam, model_id=model_id)
    try:
        with st.spinner("Writing the caption…"):
            picture = caption_picture(request)
            trace = caption_trace(request)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    layer = head = None
    shape = caption_layers(trace)
    if shape is not None:
        layer, head = pick_layer_head(*shape)
    try:
        view = caption_attention(request, layer, head)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    picture = as_seen(picture, trace)
    set_source(model_id, picture.described)
    notices = (*notices, *trace.notices)
    if notices:
        st.info("\n".join(f"- {md(notice)}" for notice in notices))
    if shape is not None:
        which = "the mean over its heads" if head is None else f"head {head}"
        st.caption(
            f"Decoder layer {layer}, {which}: each written word's row of cross-attention over [CLS] and the "
            f"{view.grid}×{view.grid} patches of the image encoder (softmax(q·k·scale), teacher-forced on the "
            "written words)."
        )
    elif request.source == "upload":
        st.warning(
            "The captioner only learned flat circles, squares and triangles in four colours on a light "
            "background, so for other pictures its caption is a guess. Where it looks is still worth seeing."
        )
    show_caption(trace, picture, view.cell_px)
    word = show_words(picture.image, view)
    st.subheader("The numbers of one cell")
    show_cell_numbers(view, word)


# ---------------------------------------------------------------- mistakes


def _open_mistake(scene: int) -> None:
    """on_click of "Open this scene": the caption view on that held-out scene, greedy as the list was made."""
    st.session_state[Captions.view] = "caption"
    st.session_state[Captions.source] = "scene"
    st.session_state[Captions.scene] = scene
    st.session_state[Captions.search] = "greedy"


def mistakes_section(model_id: str, pretrained: bool = False) -> None:
    if pretrained:
        st.info(
            "The mistakes view needs the held-out scenes' grammar captions, which only the scene captioner was "
            "trained to write: pick it as the model to see them."
        )
        return
    try:
        with st.spinner(f"Captioning the {HELD_OUT_SCENES} held-out scenes…"):
            mistakes = caption_mistakes(model_id)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    n = HELD_OUT_SCENES
    st.write(
        f"Greedy decoding gets **{n - len(mistakes)} of {n}** held-out scenes exactly right. Here are the other "
        f"{len(mistakes)}, with where the model looked while it wrote the wrong caption."
    )
    if not mistakes:
        st.info("No mistakes to show: every held-out caption is right.")
        return
    table = pd.DataFrame(
        {
            "scene": [m.scene for m in mistakes],
            "reference": [m.reference for m in mistakes],
            "written": [m.written for m in mistakes],
        }
    )
    st.dataframe(table, hide_index=True, key=Captions.mistakes, height=240)
    st.caption(
        "Held-out scenes (never trained on) whose greedy caption differs from the grammar's: the scene "
        "number, the true caption and the written one."
    )
    clamp(Captions.mistake, 0, len(mistakes) - 1)
    st.selectbox(
        "Look at",
        list(range(len(mistakes))),
        key=Captions.mistake,
        **PERSIST,
        format_func=lambda i: f"scene {mistakes[i].scene}: {mistakes[i].written}",
    )
    chosen = mistakes[bounded(st.session_state.get(Captions.mistake), 0, len(mistakes) - 1)]
    request = CaptionRequest(source="scene", scene=chosen.scene, model_id=model_id)
    try:
        picture = caption_picture(request)
        view = caption_attention(request)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    set_source(model_id, picture.described)
    st.markdown(f"**Reference**: {md(chosen.reference)}  \n**Written**: :red[{md(chosen.written)}]")
    left, right = side_by_side([1, 3])
    with left:
        show_chart(
            shared_build(picture_with_boxes, picture.image, picture.boxes, view.cell_px, title=f"Scene {chosen.scene}"),
            key=Captions.mistake_picture,
        )
        st.caption("The scene with its objects' true boxes (dotted) and the 8×8 attention grid.")
    with right:
        show_chart(shared_build(word_panels, picture.image, view), key=Captions.mistake_panels)
        st.caption(
            "Where the model looked for each word it wrote (each map on its own colour scale). At the wrong "
            "word, does its map sit on the other object, spread out over the background, or on the right "
            "object after all (then the mistake is not in where it looked)?"
        )
    st.button(
        "Open this scene in the captioner",
        key=Captions.open_mistake,
        on_click=once(_open_mistake),
        args=(chosen.scene,),
        icon=":material/open_in_new:",
    )


# ---------------------------------------------------------------- page


def main() -> None:
    _defaults()
    st.title("Captions")
    st.write(
        "An image captioner in the style of *Show, Attend and Tell* (Xu et al., 2015) writes a caption one word at "
        "a time, and before every word it looks over the picture: a small conv-net cuts it into an 8×8 grid of "
        "feature vectors, and the LSTM decoder gives each cell a weight α (a softmax: they sum to 1)."
    )
    open_page(
        "bahdanau.py",
        "The same additive attention over a source sentence: the Bahdanau page",
        {Bahdanau.text: BAHDANAU_SENTENCE},
        icon=":material/translate:",
    )
    st.caption(
        "e(t, i) = vᵀ tanh(W h(t−1) + U a(i)), α(t, ·) = softmax(e(t, ·)): Bahdanau's translator scores every "
        "English word's encoder state this way; here the “source” is the grid of picture cells."
    )
    top_left, top_right = st.columns([3, 2])
    with top_left:
        st.radio("View", list(VIEWS), format_func=VIEWS.get, key=Captions.view, horizontal=True, **PERSIST)
    with top_right:
        model_id = pick_model_id()
    try:
        with busy(f"Loading {quoted(model_id)} (the first load takes a few seconds)…", model_loaded(model_id)):
            pretrained = is_pretrained_captioner(model_id)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    if _option(Captions.view, VIEWS) == "mistakes":
        mistakes_section(model_id, pretrained)
    else:
        caption_section(model_id, pretrained)


main()
