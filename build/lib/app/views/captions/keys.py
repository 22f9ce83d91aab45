"""The captions page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from typing import Any

from app.url_params import Param, catalog_model, integer, model_ref, one_of


class Captions:
    """The Captions page's keys; those in ``PARAMS`` are also its URL parameters. Prefixes + an object's number (0, 1):
    the drawn objects' ``shape``, ``colour``, ``size``, ``row`` and ``col``."""

    view, model, source, scene, upload = "cap_view", "cap_model", "cap_source", "cap_scene", "cap_upload"
    count, textured = "cap_count", "cap_textured"
    shape, colour, size, row, col = "cap_shape_", "cap_colour_", "cap_size_", "cap_row_", "cap_col_"
    search, beam, word, cell = "cap_search", "cap_beam", "cap_word", "cap_cell"
    mistake, open_mistake = "cap_mistake", "cap_open_mistake"
    last_click = "_cap_click"  # the cell last clicked on the large map, so one click picks it once
    # a pretrained captioner (ViT + GPT-2, BLIP): the typed Hub id or folder, the decoder layer and head (−1: the mean)
    hub_id, layer, head = "cap_hub_id", "cap_layer", "cap_head"
    # charts, tables and downloads (element keys)
    picture, panels, large, betas = "cap_picture", "cap_panels", "cap_large", "cap_betas"
    cell_words, cell_table = "cap_cell_words", "cap_cell_table"
    csv, mistakes, mistake_picture = "cap_csv", "cap_mistakes", "cap_mistake_picture"
    mistake_panels = "cap_mistake_panels"

    OPTIONS: dict[str, tuple[str, ...]] = {
        view: ("caption", "mistakes"),
        source: ("scene", "draw", "upload"),
        search: ("greedy", "beam"),
    }
    MEAN_HEADS = -1  # the head picker's "mean over heads"
    DEFAULTS: dict[str, Any] = {view: "caption", source: "scene", scene: 4, search: "greedy", beam: 3}
    DEFAULTS |= {model: "scene-captioner", hub_id: "", layer: None, head: MEAN_HEADS}
    #: the drawing a session starts with: (shape, colour, size, row, column) of each object, and how many are shown
    DRAWING: tuple[tuple[str, str, str, int, int], ...] = (
        ("square", "blue", "large", 18, 20),
        ("circle", "red", "small", 46, 22),
    )
    DRAW_DEFAULTS: dict[str, Any] = {count: 2, textured: False}


PAGE = frozenset({"captions"})
PARAMS = (
    *(
        Param(name, one_of(Captions.OPTIONS[name]), Captions.DEFAULTS[name], PAGE)
        for name in (Captions.view, Captions.source, Captions.search)
    ),
    Param(Captions.scene, integer(0, 499), Captions.DEFAULTS[Captions.scene], PAGE),  # the 500 held-out scenes
    Param(Captions.beam, integer(2, 5), Captions.DEFAULTS[Captions.beam], PAGE),
    Param(Captions.model, catalog_model({"captioner"}), Captions.DEFAULTS[Captions.model], PAGE),
    Param(Captions.hub_id, model_ref, Captions.DEFAULTS[Captions.hub_id], PAGE),  # a pretrained captioner,
    Param(Captions.layer, integer(0, 4096), Captions.DEFAULTS[Captions.layer], PAGE),  # its decoder layer and head
    Param(Captions.head, integer(Captions.MEAN_HEADS, 4096), Captions.DEFAULTS[Captions.head], PAGE),
)
