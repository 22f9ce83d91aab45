"""The vit page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from typing import Any

from app.url_params import Param, catalog_model, integer, model_ref, number, one_of
from engine.samples import n_digits


class Vit:
    """The Vision Transformer page's keys; those its links carry are the URL parameters of the same names."""

    model, hub_id = "vit_model", "vit_hub_id"
    source, digit, shape, photo, upload = "vit_source", "vit_digit", "vit_shape", "vit_photo", "vit_upload"
    layer, head, patch = "vit_layer", "vit_head", "vit_patch"
    fusion, discard, discard_rule, k = "vit_fusion", "vit_discard", "vit_discard_rule", "vit_k"
    last_click = "_vit_click"  # the point last clicked on the patch chart, read once
    # a Swin (windowed attention): stage, block in the stage, head, the query patch on the stage's grid
    swin_stage, swin_block, swin_head = "vit_swin_stage", "vit_swin_block", "vit_swin_head"
    swin_patch = "vit_swin_patch"
    swin_click = "_vit_swin_click"  # the point last clicked on the window chart (pixels), read once
    # charts (element keys; ``patch_map``'s selection is read as the click)
    image, probs, cls, heads, patch_map = "vit_image", "vit_probs", "vit_cls", "vit_heads", "vit_patch_map"
    rollout, last = "vit_rollout", "vit_last"
    swin_map = "vit_swin_map"  # the query's window over the image; its selection is read as the click

    OPTIONS: dict[str, tuple[str, ...]] = {
        source: ("digit", "shape", "photo", "upload"),
        shape: ("circle", "ring", "square", "cross", "diagonal", "triangle"),
        photo: ("china", "flower"),
        fusion: ("mean", "max", "min"),
    }
    DEFAULTS: dict[str, Any] = {source: "digit", digit: 1500, shape: "circle", photo: "china", model: "tiny-vit-digits"}
    DEFAULTS |= {hub_id: "", fusion: "mean", discard: 0.0, discard_rule: "all-off-diagonal", k: 2}
    DEFAULTS |= dict.fromkeys((layer, head, patch, swin_stage, swin_block, swin_head, swin_patch), 0)


PAGE = frozenset({"vit"})
# the largest layer, head and patch a link may ask for; a Swin's stage, block in the stage, head and query patch
BOUNDS = {Vit.layer: 4096, Vit.head: 4096, Vit.patch: 1_000_000, Vit.swin_stage: 64, Vit.swin_block: 64}
BOUNDS |= {Vit.swin_head: 4096, Vit.swin_patch: 1_000_000}
PARAMS = (
    Param(Vit.model, catalog_model({"vit"}), Vit.DEFAULTS[Vit.model], PAGE),
    Param(Vit.hub_id, model_ref, Vit.DEFAULTS[Vit.hub_id], PAGE),
    *(Param(name, one_of(Vit.OPTIONS[name]), Vit.DEFAULTS[name], PAGE) for name in (Vit.source, Vit.shape, Vit.photo)),
    Param(Vit.digit, integer(0, lambda: n_digits() - 1), Vit.DEFAULTS[Vit.digit], PAGE),
    *(Param(name, integer(0, bound), Vit.DEFAULTS[name], PAGE) for name, bound in BOUNDS.items()),
    Param(Vit.fusion, one_of(Vit.OPTIONS[Vit.fusion]), Vit.DEFAULTS[Vit.fusion], PAGE),
    Param(Vit.discard, number(0.0, 0.9, digits=1), Vit.DEFAULTS[Vit.discard], PAGE),
    Param(Vit.k, integer(0, 1_000_000), Vit.DEFAULTS[Vit.k], PAGE),
)
