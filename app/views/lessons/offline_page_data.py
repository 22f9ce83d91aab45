"""The offline pack's data for the pages that are not text pages (issue 21, 4): what each draws first for a link.

``app.views.lessons.offline_data.pack_view`` reads a link's parameters (each through its own reader, a refused value
back to its default) and hands them here; every function returns the numbers the page itself draws first, from
the same services and caches the page calls, as plain data (numpy arrays in frozen dataclasses):

- Positional encodings: the open tab's first charts: the sinusoidal table and its similarity (the page opens at
  64 positions × 64 dimensions), a model's learned table and its cosine similarity (first 128 positions), or
  ALiBi's biases (8 heads, 12 positions, heads 0, 3 and 7). RoPE's pair picture and the order-blindness demo are
  drawn for positions and a shuffle picked with sliders, so they stay notes;
- Vision Transformer: [CLS]'s attention over the link's sample image in its layer, every head of that layer
  (``services.vit_cls_maps``); for a Swin, the query patch's window (``services.swin_window_row``);
- Captions: the caption of the link's held-out scene (or the page's first drawing) and one map per written word;
- Pretraining objectives: the fill-in-the-blank tab's guesses and the blank's attention, layer by layer, or the
  objectives tab's three models' real attention (their mean of heads);
- Scaling: the shipped curves (loss against parameters and against compute);
- Is attention the explanation?: the six importances of the page's first prediction (a link carries no sentence).

Whatever cannot be drawn without the app (a live run, an upload, a measurement on the server) raises
:class:`Unchartable` with the reason, which ``pack_view`` turns into a note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.runtime.models import get_card
from app.state import K
from app.views.captions import data as _captions
from app.views.captions.keys import Captions
from app.views.captions.map_data import CaptionView
from app.views.explain import data as _explain
from app.views.explain.keys import Explain
from app.views.positional import data as _positional
from app.views.positional.keys import Positional
from app.views.pretraining import data as _pretraining
from app.views.pretraining.keys import TABS as PRETRAINING_TABS
from app.views.scaling import data as _scaling
from app.views.vit import data as _vit
from app.views.vit.keys import Vit
from engine import EngineError
from engine.analysis.scaling_laws import Curves as ScalingCurves
from engine.traces.vision import WindowRow

OPEN_IN_APP = "open the link in the app"
SIN_OPENS = (64, 64)  # positions and d_model the Sinusoidal tab opens with (app/views/positional/page.py)
LEARNED_OPENS = 128  # positions the Learned tab shows first
ALIBI_OPENS = (8, 12, (0, 3, 7))  # ALiBi's heads, length and heads drawn when the tab opens (positional_sections)


class Unchartable(Exception):
    """This view has no chart the pack can hold; the message says why and what to do instead."""


@dataclass(frozen=True, eq=False)
class Panel:
    """One numeric matrix as a page draws it (``positional_figs.matrix_heatmap``).

    Attributes:
        title: the chart's title; values: ``[rows, cols]``; x_title, y_title, value_name: axes and hover words.
        bound: a symmetric colour range ``[-bound, bound]``, or None (the 99.5th percentile of |value|).
        caption: what it shows, in the page's words.
    """

    title: str
    values: np.ndarray
    x_title: str
    y_title: str
    value_name: str
    bound: float | None
    caption: str


@dataclass(frozen=True, eq=False)
class Matrices:
    """Numeric matrices a page draws side by side (the Positional page's tables and similarities), and the model
    (or formula) they come from, for the charts' subtitle."""

    panels: tuple[Panel, ...]
    source: str


@dataclass(frozen=True, eq=False)
class Biases:
    """ALiBi's per-head linear biases ``[head, n, n]`` with their slopes, the heads drawn and the causal mask."""

    bias: np.ndarray
    slopes: np.ndarray
    heads: tuple[int, ...]
    causal: bool


@dataclass(frozen=True, eq=False)
class PatchAttention:
    """[CLS]'s attention over an image's patches in one layer of a ViT: ``maps`` is ``[head, rows, cols]``."""

    image: np.ndarray
    maps: np.ndarray
    patch_size: int
    layer: int
    head: int
    model_id: str
    described: str
    prediction: str


@dataclass(frozen=True, eq=False)
class WindowAttention:
    """A Swin's query patch and its window's weights laid on the stage's grid (``row``: a ``WindowRow``)."""

    image: np.ndarray
    row: WindowRow
    cell: int
    patch: int
    stage: int
    block: int
    head: int
    model_id: str
    described: str


@dataclass(frozen=True, eq=False)
class WordMaps:
    """A caption and where the captioner looked before each written word (``view``: the page's figure data)."""

    image: np.ndarray
    view: CaptionView
    caption: str
    reference: str | None
    model_id: str
    described: str


@dataclass(frozen=True, eq=False)
class BlankGuesses:
    """Fill-in-the-blank: the first blank's top guesses and its attention ``[layer, head, key]`` to every token."""

    words: tuple[str, ...]
    probs: np.ndarray
    attention: np.ndarray
    tokens: tuple[str, ...]
    position: int
    model_id: str
    text: str


@dataclass(frozen=True, eq=False)
class Objectives:
    """The objectives tab's real attention, one layer's mean of heads per objective (``MeanAttention`` each)."""

    names: tuple[str, ...]
    maps: tuple[_pretraining.MeanAttention, ...]


@dataclass(frozen=True, eq=False)
class Curves:
    """The Scaling page's shipped curves (runs, fits and the compute frontier: numpy and plain numbers)."""

    curves: ScalingCurves


@dataclass(frozen=True, eq=False)
class Importances:
    """Each method's importance of every input token for one prediction (rows in the page's order)."""

    tokens: tuple[str, ...]
    methods: tuple[str, ...]
    scores: tuple[np.ndarray, ...]
    said: str
    model_id: str
    text: str


# ---------------------------------------------------------------- Positional encodings


def positional(values: dict[str, object]) -> Matrices | Biases:
    """The open tab's first charts (``pos_tab``; the model of the Learned tab: ``model`` or ``hub_id``)."""
    tab = str(values[Positional.tab])
    if tab == "Sinusoidal":
        n_pos, d_model = SIN_OPENS
        table, sim, spread = _positional.pos_sinusoidal(n_pos, d_model)
        table_says = "The vector added at each position (rows), one column per dimension: left columns wave fast."
        sim_says = (
            f"The dot product of two position vectors: largest on the diagonal (d/2 = {d_model // 2}) and the same "
            f"along every diagonal, it depends only on |p − q| (largest spread along a diagonal: {spread:.1e})."
        )
        return Matrices(
            (
                Panel(
                    f"PE table: {n_pos} positions × {d_model} dimensions",
                    table,
                    "dimension",
                    "position",
                    "PE",
                    None,
                    table_says,
                ),
                Panel("Similarity PE(p)·PE(q)", sim, "position q", "position p", "PE(p)·PE(q)", None, sim_says),
            ),
            f"sinusoidal, d = {d_model}",
        )
    if tab == "Learned":
        model_id = str(values.get(K.hub_id) or "").strip() or str(values[K.model])
        table, cos_sim = _positional.pos_learned_table(model_id)
        n = min(LEARNED_OPENS, table.values.shape[0], cos_sim.shape[0])
        title = f"{table.source} ({n} of {table.values.shape[0]} positions × {table.values.shape[1]})"
        table_says = "The learned table, one row per position (colours clipped at the 99.5th percentile of |value|)."
        sim_says = (
            "The cosine similarity of every pair of learned position vectors: bright along the diagonal, "
            "training gave neighbouring positions similar vectors."
        )
        return Matrices(
            (
                Panel(title, table.values[:n], "dimension", "position", "value", None, table_says),
                Panel(
                    "Learned: cosine similarity", cos_sim[:n, :n], "position q", "position p", "cosine", 1.0, sim_says
                ),
            ),
            model_id,
        )
    if tab == "ALiBi":
        n_heads, n_pos, heads = ALIBI_OPENS
        slopes, bias = _positional.pos_alibi(n_heads, n_pos)
        return Biases(bias, slopes, heads, True)
    if tab == "RoPE":
        raise Unchartable(
            "RoPE's tab turns a query and a key with sliders (pair, positions, offset): " + OPEN_IN_APP + "."
        )
    raise Unchartable(
        "The order-blindness demo runs two fresh copies of our decoder on a sentence you shuffle in the app: "
        + OPEN_IN_APP
        + "."
    )


# ---------------------------------------------------------------- Vision Transformer


def _vit_image(values: dict[str, object]) -> tuple[np.ndarray, str]:
    source = str(values[Vit.source])
    if source == "digit":
        index = int(values[Vit.digit])
        return _vit.vit_sample("digit", str(index)), f"digit sample {index} (true label {_vit.vit_digit_label(index)})"
    if source == "shape":
        return _vit.vit_sample("shape", str(values[Vit.shape])), f"a drawn {values[Vit.shape]}"
    if source == "photo":
        return _vit.vit_sample("photo", str(values[Vit.photo])), f"the photo '{values[Vit.photo]}'"
    raise Unchartable("An uploaded image is not part of a link: " + OPEN_IN_APP + " and upload it there.")


def vision(values: dict[str, object]) -> PatchAttention | WindowAttention:
    """[CLS]'s attention in the link's layer (every head; the link's head chosen) over its sample image, or a
    Swin's query patch in its window (stage, block, head and patch kept inside what the model has, as the page)."""
    model_id = str(values.get(Vit.hub_id) or "").strip() or str(values[Vit.model])
    image, described = _vit_image(values)
    card = get_card(model_id)
    if card.family != "vit":
        raise EngineError(f"{model_id} is not a Vision Transformer (it is a {card.family} model).")
    trace = _vit.get_vision_trace(model_id, image)
    if _vit.vit_windowed(trace):
        stage = min(max(int(values[Vit.swin_stage]), 0), trace.n_stages - 1)
        blocks = trace.stage_blocks(stage)
        block = min(max(int(values[Vit.swin_block]), 0), len(blocks) - 1)
        head = min(max(int(values[Vit.swin_head]), 0), blocks[block].n_heads - 1)
        rows, cols = blocks[block].grid
        patch = min(max(int(values[Vit.swin_patch]), 0), rows * cols - 1)
        row = _vit.swin_window_row(trace, stage, block, head, patch)
        return WindowAttention(trace.image, row, trace.cell_size(stage), patch, stage, block, head, model_id, described)
    layer = min(max(int(values[Vit.layer]), 0), trace.attention.n_layers - 1)
    head = min(max(int(values[Vit.head]), 0), trace.attention.n_heads - 1)
    maps = _vit.vit_cls_maps(trace, layer)
    said = f"{trace.prediction} ({float(trace.probs.max()):.0%})" if len(trace.labels) else ""
    return PatchAttention(trace.image, maps, trace.patch_size, layer, head, model_id, described, said)


# ---------------------------------------------------------------- Captions


def caption(values: dict[str, object]) -> WordMaps:
    """The caption of the link's picture (a held-out scene, or the page's first drawing) with one map per word."""
    if values[Captions.view] == "mistakes":
        raise Unchartable(
            f"The mistakes view captions all {_captions.HELD_OUT_SCENES} held-out scenes and lets you pick one: "
            + OPEN_IN_APP
            + "."
        )
    source = str(values[Captions.source])
    if source == "upload":
        raise Unchartable("An uploaded picture is not part of a link: " + OPEN_IN_APP + " and upload it there.")
    model_id = str(values.get(Captions.hub_id) or "").strip() or str(values[Captions.model])
    beam = int(values[Captions.beam]) if values[Captions.search] == "beam" else 1
    if source == "draw":
        count = int(Captions.DRAW_DEFAULTS[Captions.count])
        drawing = tuple(_captions.DrawnObject(*obj) for obj in Captions.DRAWING[:count])
        request = _captions.CaptionRequest(source="draw", drawing=drawing, beam=beam, model_id=model_id)
    else:
        request = _captions.CaptionRequest(
            source="scene", scene=int(values[Captions.scene]), beam=beam, model_id=model_id
        )
    picture = _captions.caption_picture(request)
    trace = _captions.caption_trace(request)
    layer = head = None
    shape = _captions.caption_layers(trace)
    if shape is not None:  # a pretrained captioner: the link's decoder layer (default the last) and head (or mean)
        wanted = values.get(Captions.layer)
        layer = wanted if isinstance(wanted, int) and 0 <= wanted < shape[0] else shape[0] - 1
        chosen = values.get(Captions.head)
        head = chosen if isinstance(chosen, int) and 0 <= chosen < shape[1] else None
    view = _captions.caption_attention(request, layer, head)
    picture = _captions.as_seen(picture, trace)
    return WordMaps(picture.image, view, trace.caption, picture.reference, model_id, picture.described)


# ---------------------------------------------------------------- Pretraining objectives


def pretraining(values: dict[str, object]) -> BlankGuesses | Objectives:
    """The fill-in-the-blank tab's first blank (the model's guesses and where the blank looks), or the objectives
    tab's three real maps; the fine-tuning, next-sentence and cost tabs are live or measured: a note."""
    tab = values["pretraining_tab"]
    if tab in (PRETRAINING_TABS["finetune"], PRETRAINING_TABS["nsp"]):
        raise Unchartable("This tab fine-tunes a copy of the model live while you watch: " + OPEN_IN_APP + ".")
    if tab == PRETRAINING_TABS["cost"]:
        raise Unchartable(
            "This tab's chart times attention, an RNN and a convolution on the server when you press “Measure”: "
            + OPEN_IN_APP
            + "."
        )
    if tab == PRETRAINING_TABS["objectives"]:
        return _objectives(values)
    text = str(values["fill_text"])
    result = _pretraining.get_fill_mask(text)
    if not result.blanks:
        raise EngineError("The link's sentence has no [MASK] to fill in.")
    blank = result.blanks[0]
    attention = _pretraining.blank_attention(text, blank.position)
    return BlankGuesses(
        tuple(blank.words),
        np.asarray(blank.probs),
        np.asarray(attention),
        tuple(result.tokens.strings),
        int(blank.position),
        _pretraining.MLM_MODEL,
        text,
    )


def _objectives(values: dict[str, object]) -> Objectives:
    """The objectives tab's three "Real" maps (masked LM, next token, span corruption's cross-attention) of the
    link's sentence (lower-cased, 24 words at most) in its layer, as ``app/views/pretraining/page.py`` draws them."""
    words = tuple(str(values["objectives_text"]).lower().split())[:24]
    if len(words) < 2:
        raise EngineError("The link's sentence has fewer than two words.")
    masked = _pretraining.objective_examples(words)["masked"]
    layer = int(values["objectives_layer"])
    maps = (
        _pretraining.objective_attention(_pretraining.MLM_MODEL, " ".join(masked.inputs), False, layer, "self"),
        _pretraining.objective_attention(_pretraining.NEXT_TOKEN_MODEL, " ".join(words), True, layer, "self"),
        _pretraining.objective_attention(_pretraining.SEQ2SEQ_MODEL, " ".join(words), None, layer, "cross"),
    )
    return Objectives(("Masked LM (BERT)", "Next token (GPT)", "Span corruption (T5)"), maps)


# ---------------------------------------------------------------- Scaling and explain


def scaling(values: dict[str, object]) -> Curves:
    """The shipped curves (the page's two charts; the sizes a visitor trains live are not in a link)."""
    return Curves(_scaling.scaling_curves())


def explain(values: dict[str, object]) -> Importances:
    """The six importances of the page's first prediction: a link carries no sentence, so the page opens on its
    first model and example with the methods' default settings."""
    model_id = Explain.DEFAULTS[Explain.model]
    request = _explain.ExplainRequest(
        model_id,
        _explain.EXPLAIN_EXAMPLES[model_id],
        "",
        _explain.EXPLAIN_MAX_TOKENS,
        int(Explain.DEFAULTS[Explain.steps]),
        str(Explain.DEFAULTS[Explain.baseline]),
        str(Explain.DEFAULTS[Explain.loo]),
    )
    pred = _explain.explain_prediction(request)
    methods = _explain.explain_methods()
    scores = tuple(np.asarray(_explain.explain_importance(request, m).scores) for m in methods)
    if pred.task == "embedding":
        said = f"the cosine similarity with the reference, {pred.value:.3f}"
    else:
        said = f"the log-probability of “{pred.target}” ({pred.probability:.1%}), f = {pred.value:.3f}"
    return Importances(tuple(pred.tokens.strings), tuple(methods.values()), scores, said, model_id, request.text)
