"""Captions: a captioner writes a caption word by word; one α map per written word (the "Show, Attend and Tell"
figure), the chosen word's map large, β per word, any cell's numbers, and the held-out scenes it gets wrong. A
pretrained captioner shows a decoder layer's cross-attention on the patches, and its weight on [CLS] for β."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import pick_family_model, pick_head, pick_index, pick_int, upload_field
from app.figures import shared_build
from app.links import open_page
from app.runtime.models import model_loaded
from app.state import PERSIST, bounded, choose, clamp, default, defaults
from app.ui.charts import clicked_square, set_source, show_chart
from app.ui.clicks import once
from app.ui.export import csv_button, grid_table
from app.ui.guard import attempt, busy, show_error
from app.ui.safe_text import md, quoted
from app.ui.theme import side_by_side
from app.views.bahdanau.keys import Bahdanau
from app.views.captions import data
from app.views.captions.figures import gate_bars, picture_with_boxes, word_map, word_panels
from app.views.captions.keys import Captions
from engine.corpora import scenes
from engine.families import hub_labels

VIEWS = {"caption": "Caption a picture", "mistakes": "Mistakes on held-out scenes"}
SOURCES = {"scene": "A held-out scene", "draw": "Draw one", "upload": "Upload your own"}
SEARCHES = {"greedy": "Greedy", "beam": "Beam search"}
SHAPES, COLOURS, SIZES = scenes.SHAPES, tuple(scenes.COLOURS), tuple(scenes.SIZES)  # what the scenes draw
SIDE, SCENES = data.CAPTION_IMAGE_SIZE, data.HELD_OUT_SCENES
ROW = dict(horizontal=True, **PERSIST)  # a radio's options in a row, its value kept across pages
OBJECT = (Captions.shape, Captions.colour, Captions.size)  # an object's choices, each key + its number
CHOICES = (("Shape", SHAPES), ("Colour", COLOURS), ("Size", SIZES))  # their labels and options
PLACES = (("Down (row of its centre)", Captions.row), ("Across (column of its centre)", Captions.col))  # its sliders
BAHDANAU_SENTENCE = "the red car is fast"
MODEL_HELP = (
    "The scene captioner, trained here on generated scenes: a small conv-net gives an 8×8 grid of features and an "
    "LSTM writes the caption, attending over the grid before every word. Pretrained captioners from the Hub write "
    "with a transformer decoder that attends over the picture's patches."
)
HUB_HELP = f"{' and '.join(hub_labels('captioner'))} checkpoints: a ViT encoder with a GPT-2 decoder, or BLIP's."
OTHER_MODEL = (Captions.hub_id, "A pretrained captioner", "e.g. Salesforce/blip-image-captioning-base", HUB_HELP)


def _defaults() -> None:
    """Defaults once per session; a choice that is not one of its options (forged) goes back to its default."""
    defaults({**Captions.DEFAULTS, **Captions.DRAW_DEFAULTS})
    for key, options in {**Captions.OPTIONS, Captions.count: (1, 2)}.items():
        choose(key, options)


def draw_controls() -> tuple[tuple[data.DrawnObject, ...], bool]:
    """One or two objects: shape, colour, size and where (the centre, in pixels of the 64×64 picture)."""
    st.radio("Objects", [1, 2], key=Captions.count, **ROW)
    count = bounded(st.session_state.get(Captions.count), 1, 2)
    objects = []
    for i, (column, start) in enumerate(zip(st.columns(2)[:count], Captions.DRAWING)):
        with column:
            st.markdown(f"**Object {i + 1}**")
            chosen = []
            for (label, options), prefix, value in zip(CHOICES, OBJECT, start):
                key = f"{prefix}{i}"
                default(key, value)  # a new session's drawing; a forged choice: the first option
                choose(key, options)
                chosen.append(st.selectbox(label, options, key=key, **PERSIST))
            for (label, prefix), value in zip(PLACES, start[3:]):
                chosen.append(pick_int(st.slider, label, 0, SIDE - 1, f"{prefix}{i}", start=value))
            objects.append(data.DrawnObject(*chosen))
    textured = st.checkbox("Textured background", key=Captions.textured, **PERSIST)
    st.caption(
        "Shapes near an edge are moved in until they fit. Two objects need a clear relation: one clearly "
        "above, below, left or right of the other, not overlapping."
    )
    return tuple(objects), bool(textured)


def pick_picture(pretrained: bool = False) -> tuple[data.CaptionRequest | None, tuple[str, ...]]:
    """The source and its controls: the request without its decoding (None while there is no picture yet)."""
    source = st.radio("Picture", list(SOURCES), format_func=SOURCES.get, key=Captions.source, **ROW)
    if source == "scene":
        help = f"The {SCENES} scenes the captioner's card was measured on; it never trained on them."
        scene = pick_int(st.number_input, "Held-out scene number", 0, SCENES - 1, Captions.scene, help=help)
        return data.CaptionRequest(source="scene", scene=scene), ()
    if source == "draw":
        objects, textured = draw_controls()
        return data.CaptionRequest(source="draw", drawing=objects, textured=textured), ()
    empty = "Choose a picture file to see what the captioner writes and where it looks."
    empty += "" if pretrained else " It only ever saw flat shapes on a light background, so draw a few on a plain page."
    side = data.PRETRAINED_UPLOAD_SIZE if pretrained else data.CAPTION_IMAGE_SIZE
    upload = upload_field("Your picture", Captions.upload, empty, lambda raw: data.read_caption_upload(raw, side))
    if upload is None:
        return None, ()
    (pixels, notices), _name = upload
    return data.CaptionRequest(source="upload", upload=pixels), notices


def pick_decoding() -> int:
    """Greedy or beam search; returns the beam width (1: greedy)."""
    help = "Greedy writes the most probable word at every step. Beam search keeps the best few partial captions and "
    help += "returns the most probable whole caption."
    if st.radio("Decoding", SEARCHES, format_func=SEARCHES.get, key=Captions.search, help=help, **ROW) == "greedy":
        return 1
    return pick_int(st.slider, "Beam width", 2, data.CAPTION_MAX_BEAM, Captions.beam)


def pick_layer_head(layers: int, heads: int) -> tuple[int, int | None]:
    """A pretrained captioner's decoder layer (default: the last) and head (or the mean over heads)."""
    choose(Captions.layer, range(layers), fallback=layers - 1)
    left, right = st.columns(2)
    help = "Every decoder layer has its own cross-attention over the picture's patches."
    layer = left.selectbox("Decoder layer", range(layers), key=Captions.layer, **PERSIST, help=help)
    with right:
        return layer, pick_head(heads, Captions.head, "mean over heads")


def show_caption(trace, picture, cell_px: int) -> None:
    """The picture as the model reads it, what the model wrote, the grammar's caption and whether they match."""
    how = "greedy decoding" if trace.beam == 1 else f"the best of a beam of {trace.beam}"
    shown, words = side_by_side([2, 3])
    with shown:
        fig = shared_build(picture_with_boxes, picture.image, picture.boxes, cell_px, title="What the model reads")
        show_chart(fig, key=Captions.picture)
        boxes = " Dotted: the objects' true boxes." if picture.boxes else ""
        side, grid = picture.image.shape[0], picture.image.shape[0] // cell_px
        st.caption(
            f"{picture.described[:1].upper() + picture.described[1:]}, {side}×{side} pixels, and the {grid}×{grid} "
            f"grid of cells the model attends over.{boxes}"
        )
    with words:
        st.markdown(f"**The model writes** ({how})\n\n> {md(trace.caption) or '(nothing)'}")
        st.caption(f"log-probability {trace.log_prob:.2f}")
        if picture.reference is None:
            st.markdown("**Reference**: none (your own picture)")
        else:
            verdict = ":green[matches]" if trace.caption == picture.reference else ":red[differs]"
            st.markdown(f"**Reference** from the scene's grammar ({verdict})\n\n> {md(picture.reference)}")


def show_words(image: np.ndarray, view) -> int:
    """Every word's small map, the word picker, its large map and β; returns the chosen word."""
    n = len(view.words)
    word = clamp(Captions.word, 0, n - 1)
    show_chart(shared_build(word_panels, image, view, selected=word), key=Captions.panels)
    sums = "each map sums to 1" if view.rest is None else "each map sums to 1 less the word's weight on [CLS]"
    st.caption(
        "One picture per written word, in the caption's order: the brighter a cell, the more weight α the "
        f"model put on it just before writing that word ({sums}; each on its own colour scale, so "
        "compare where, not how bright). ▶ marks the word chosen below."
    )
    help = "Step through the caption one written word at a time."
    st.select_slider("Word", range(n), format_func=view.labels.__getitem__, key=Captions.word, help=help, **PERSIST)
    if (hit := clicked_square(Captions.large, Captions.last_click, view.cell_px, view.grid, view.grid)) is not None:
        st.session_state[Captions.cell] = hit
    cell = clamp(Captions.cell, 0, view.grid * view.grid - 1)
    left, right = side_by_side([3, 2])
    with left:
        fig = shared_build(word_map, image, view, word, cell)
        show_chart(fig, key=Captions.large, on_select="rerun", selection_mode="points")
        r, c = view.cell(view.peaks[word])
        st.caption(
            f"Where the model looks before writing “{md(view.words[word])}”: α over the {view.grid}×{view.grid} "
            f"grid, each {'cell' if view.rest is None else 'patch'} {view.cell_px}×{view.cell_px} pixels. Peak: cell "
            f"{view.peaks[word]} (row {r}, column {c}, α = {float(view.alphas[word, r, c]):.3f}). The outlined cell's "
            "numbers are listed below: click a cell to choose it."
        )
    with right:
        show_chart(shared_build(gate_bars, view, word), key=Captions.betas)
        st.caption(
            "β = σ(f_β(h)) gates the attended picture before the LSTM reads it: near 1 the word is written "
            "with what the map picks out, near 0 from the sentence so far alone. Compare the grammar words "
            "(“a”, “of”) with the colour and shape words. The chosen word is orange; hover for its largest α."
            if view.betas is not None
            else "The part of each word's cross-attention on [CLS], the image encoder's summary token, "
            "rather than on any one patch: the maps show the rest. The chosen word is orange; hover for "
            "its largest patch weight."
        )
    return word


def numbers(columns, digits: int) -> dict:
    """Column settings: ``columns`` shown with ``digits`` decimals."""
    return {name: st.column_config.NumberColumn(format=f"%.{digits}f") for name in columns}


def show_cell_numbers(view, word: int) -> None:
    """The chosen cell's α for every word, and the chosen word's α for every cell."""
    left, right = st.columns([2, 3])
    with left:
        cell = pick_int(st.number_input, "Grid cell (or click one on the map)", 0, view.grid**2 - 1, Captions.cell)
        r, c = view.cell(cell)
        name, values = view.gate
        words = pd.DataFrame({"word": view.labels, "α at this cell": view.at_cell(cell), name: values})
        st.dataframe(words, hide_index=True, key=Captions.cell_words, column_config=numbers(words.columns[1:], 4))
        st.caption(
            f"Cell {cell} is row {r}, column {c} (pixels {r * view.cell_px}–{(r + 1) * view.cell_px - 1} down, "
            f"{c * view.cell_px}–{(c + 1) * view.cell_px - 1} across): how much each word's step looked at it."
        )
    with right:
        table = grid_table(view.alphas[word])
        st.dataframe(table, key=Captions.cell_table, column_config=numbers(table.columns, 3))
        sums = "they sum to 1" if view.rest is None else f"with {float(view.rest[word]):.4f} on [CLS] they sum to 1"
        st.caption(f"α of “{md(view.words[word])}” in every cell (the large map's numbers; {sums}).")
        name = f"caption_word{word}_alpha.csv"
        csv_button("Download this map as CSV", table, name, key=Captions.csv, float_format="%.6f")


def caption_section(model_id: str, pretrained: bool = False) -> None:
    top_left, top_right = st.columns([3, 2])
    with top_left:
        request, notices = pick_picture(pretrained)
    with top_right:
        beam = pick_decoding()
    if request is None:
        return
    request = dataclasses.replace(request, beam=beam, model_id=model_id)
    found = attempt(lambda: (data.caption_picture(request), data.caption_trace(request)), "Writing the caption…")
    if found is None:
        return
    picture, trace = found
    layer, head = pick_layer_head(*shape) if (shape := data.caption_layers(trace)) else (None, None)
    if (view := attempt(lambda: data.caption_attention(request, layer, head))) is None:
        return
    picture = data.as_seen(picture, trace)
    set_source(model_id, picture.described)
    if notices := (*notices, *trace.notices):
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


def _open_mistake(scene: int) -> None:
    """on_click of "Open this scene": the caption view on that held-out scene, greedy as the list was made."""
    opened = {Captions.view: "caption", Captions.source: "scene", Captions.scene: scene, Captions.search: "greedy"}
    st.session_state.update(opened)


def mistakes_section(model_id: str, pretrained: bool = False) -> None:
    """The held-out scenes the model captions wrongly, and where it looked while writing one of them."""
    if pretrained:
        st.info(
            "The mistakes view needs the held-out scenes' grammar captions, which only the scene captioner was "
            "trained to write: pick it as the model to see them."
        )
        return
    n = SCENES
    if (mistakes := attempt(lambda: data.caption_mistakes(model_id), f"Captioning the {n} held-out scenes…")) is None:
        return
    st.write(
        f"Greedy decoding gets **{n - len(mistakes)} of {n}** held-out scenes exactly right. Here are the other "
        f"{len(mistakes)}, with where the model looked while it wrote the wrong caption."
    )
    if not mistakes:
        st.info("No mistakes to show: every held-out caption is right.")
        return
    table = pd.DataFrame([dataclasses.asdict(m) for m in mistakes])  # scene, reference, written
    st.dataframe(table, hide_index=True, key=Captions.mistakes, height=240)
    st.caption(
        "Held-out scenes (never trained on) whose greedy caption differs from the grammar's: the scene "
        "number, the true caption and the written one."
    )
    names = [f"scene {m.scene}: {m.written}" for m in mistakes]
    chosen = mistakes[pick_index("Look at", len(mistakes), Captions.mistake, format_func=names.__getitem__)]
    request = data.CaptionRequest(source="scene", scene=chosen.scene, model_id=model_id)
    if (found := attempt(lambda: (data.caption_picture(request), data.caption_attention(request)))) is None:
        return
    picture, view = found
    set_source(model_id, picture.described)
    st.markdown(f"**Reference**: {md(chosen.reference)}  \n**Written**: :red[{md(chosen.written)}]")
    left, right = side_by_side([1, 3])
    with left:
        title = f"Scene {chosen.scene}"
        fig = shared_build(picture_with_boxes, picture.image, picture.boxes, view.cell_px, title=title)
        show_chart(fig, key=Captions.mistake_picture)
        st.caption("The scene with its objects' true boxes (dotted) and the 8×8 attention grid.")
    with right:
        show_chart(shared_build(word_panels, picture.image, view), key=Captions.mistake_panels)
        st.caption(
            "Where the model looked for each word it wrote (each map on its own colour scale). At the wrong "
            "word, does its map sit on the other object, spread out over the background, or on the right "
            "object after all (then the mistake is not in where it looked)?"
        )
    click = dict(key=Captions.open_mistake, on_click=once(_open_mistake), args=(chosen.scene,))
    st.button("Open this scene in the captioner", icon=":material/open_in_new:", **click)


def main() -> None:
    _defaults()
    st.title("Captions")
    st.write(
        "An image captioner in the style of *Show, Attend and Tell* (Xu et al., 2015) writes a caption one word at "
        "a time, and before every word it looks over the picture: a small conv-net cuts it into an 8×8 grid of "
        "feature vectors, and the LSTM decoder gives each cell a weight α (a softmax: they sum to 1)."
    )
    title = "The same additive attention over a source sentence: the Bahdanau page"
    open_page("bahdanau.py", title, {Bahdanau.text: BAHDANAU_SENTENCE}, icon=":material/translate:")
    st.caption(
        "e(t, i) = vᵀ tanh(W h(t−1) + U a(i)), α(t, ·) = softmax(e(t, ·)): Bahdanau's translator scores each English "
        "word's encoder state this way; here the “source” is the grid of picture cells."
    )
    top_left, top_right = st.columns([3, 2])
    with top_left:
        view = st.radio("View", list(VIEWS), format_func=VIEWS.get, key=Captions.view, **ROW)
    with top_right:
        model_id = pick_family_model("captioner", Captions.model, data.CAPTION_MODEL, MODEL_HELP, OTHER_MODEL)
    try:
        with busy(f"Loading {quoted(model_id)} (the first load takes a few seconds)…", model_loaded(model_id)):
            pretrained = data.is_pretrained_captioner(model_id)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    if view == "mistakes":
        mistakes_section(model_id, pretrained)
    else:
        caption_section(model_id, pretrained)


main()
