"""A causal LM whose family is not in the table, read through the same capture path and checked when it loads.

Most decoder families of transformers 5.23 compute attention through ``transformers.AttentionInterface``, as the
table's rotary decoders do. One forward pass over :data:`PROBE` with the capture recording finds what the table would
name: the list of layers (the ``nn.ModuleList`` whose items hold the recorded attention modules, one each) and the
attention's output projection (named as in :data:`OUT_NAMES`, below the attention module or its parent). The probe is
then traced through :class:`~engine.families.hf_text.adapter.HFTextAdapter` and compared with the same model run with
transformers' eager attention (``output_attentions``): every softmax layer's pattern must agree to :data:`ATOL`. A
model that passes is served with :data:`NOT_VERIFIED` in each trace's notices and
``Model.info["verified"] = False``; one that fails is refused with the reason.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine.capture.hf import IMPL, recording
from engine.families.hf_text.adapter import HFTextAdapter
from engine.families.hf_text.settings import ROTARY_DECODER, load_hf_text
from engine.model import Model
from engine.records import EngineError, ModelSpec, ModelUnavailableError
from engine.text import display_tokens, error_reason, quote_input
from engine.traces.kinds import softmax_layers

PROBE = "The cat sat on the mat because it was tired, and the dog watched it."
PROBE_TOKENS = 16
ATOL = 1e-5
#: what transformers' modelling code calls an attention module's output projection
OUT_NAMES = ("o_proj", "out_proj", "dense", "c_proj", "wo", "o", "output.dense")
NOT_VERIFIED = (
    "This model's family ({0}) is not verified by us: its attention is read through transformers' attention "
    "interface, and its patterns matched the model's own eager attention on one short sentence when it loaded."
)


def load_unverified(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """A causal LM of a ``model_type`` the table lacks, with settings found and patterns checked on one probe.

    Raises:
        ModelUnavailableError: it cannot be loaded, or its attention cannot be read (no call through the attention
            interface, no list of layers or output projection found, patterns unlike its eager attention): the
            message says which.
    """
    kind = str(config.get("model_type"))
    outside = f"{quote_input(model_id)} is a {quote_input(kind, 40)} model, a family not in the engine's table"
    try:
        model = load_hf_text(model_id, path, config, spec=spec, device=device, adapter=ROTARY_DECODER)
    except ModelUnavailableError as err:  # its own attention classes (no interface to load it through), bad files
        raise ModelUnavailableError(f"{outside}. {err}") from err
    try:
        ids = list(model.tokenizer(PROBE)["input_ids"][:PROBE_TOKENS])
        model.adapter = replace(found_settings(model, ids), notices=(NOT_VERIFIED.format(kind),))
        check_probe(model, ids)
    except (EngineError, ValueError, TypeError, AttributeError, RuntimeError) as err:
        raise ModelUnavailableError(f"{outside}, and its attention cannot be read here: {error_reason(err)}") from err
    model.info["verified"] = False
    return model


def found_settings(model: Model, ids: list[int]) -> HFTextAdapter:
    """The adapter settings of ``model`` read from one recorded forward pass over ``ids``."""
    module, adapter = model.module, model.adapter
    with model.lock, torch.no_grad(), recording() as rec:
        module(input_ids=torch.tensor([ids], device=model.device), use_cache=False)
    called = [m for m, _ in rec.calls]
    if not called:
        raise EngineError("no attention call went through transformers' attention interface")
    for name, layers in adapter.base(module).named_modules():
        if not isinstance(layers, nn.ModuleList):
            continue
        owner = {id(m): i for i, layer in enumerate(layers) for m in layer.modules()}
        if all(id(m) in owner for m in called) and len({owner[id(m)] for m in called}) == len(called):
            layer = layers[owner[id(called[0])]]
            out = _out_proj(layer, next(n for n, m in layer.named_modules() if m is called[0]))
            if out is None:
                raise EngineError(
                    f"its attention module {type(called[0]).__name__} has no output projection named "
                    f"{', '.join(OUT_NAMES)}"
                )
            rope = any(hasattr(module.config, f) for f in ("rope_parameters", "rope_theta"))
            return replace(adapter, layers_path=name, out_proj=out, pos_encoding_kind="rope" if rope else "none")
    raise EngineError("no list of layers holds its attention modules one by one")


def _out_proj(layer: nn.Module, inside: str) -> str | None:
    """The path in ``layer`` of the output projection of its attention module at ``inside``: a child named as in
    :data:`OUT_NAMES`, of that module or, below the layer itself, of its parent (BERT-likes: ``attention.self`` is
    called, ``attention.output.dense`` projects)."""
    for holder in (inside, inside.rpartition(".")[0]) if "." in inside else (inside,):
        for name in OUT_NAMES:
            path = f"{holder}.{name}".lstrip(".")
            try:
                layer.get_submodule(path)
            except AttributeError:
                continue
            return path
    return None


def check_probe(model: Model, ids: list[int]) -> None:
    """Raise EngineError unless the trace of ``ids`` equals the model's eager ``output_attentions`` on every softmax
    layer to :data:`ATOL` (the model runs eager attention for this one pass, then ``ap_capture`` again)."""
    tokens = display_tokens(model.tokenizer, ids, model.adapter.byte_level)
    trace = model.adapter.trace_ids(model, ids, tokens, causal=None)
    module = model.module
    with model.lock, torch.no_grad():
        module.set_attn_implementation("eager")
        try:
            out = module(input_ids=torch.tensor([ids], device=model.device), output_attentions=True, use_cache=False)
        finally:
            module.set_attn_implementation(IMPL)
    maps = [a[0].float().cpu().numpy() for a in out.attentions or () if a is not None]
    layers = softmax_layers(trace.layer_kinds)
    if len(maps) != len(layers):
        raise EngineError(f"its eager attention gave {len(maps)} maps for {len(layers)} softmax layers")
    worst = max(float(np.abs(trace.pattern(layer) - m).max()) for layer, m in zip(layers, maps))
    if not worst <= ATOL:
        raise EngineError(f"its traced patterns differ from its own eager attention by up to {worst:.2g}")
