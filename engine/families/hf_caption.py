r"""Pretrained captioners from Hugging Face: where a transformer decoder looks in the image as it writes.

Two families write a caption token by token while their decoder's **cross-attention** reads the image encoder's
outputs ([CLS] and one vector per patch):

- ``VisionEncoderDecoderModel`` with a ViT (or DeiT) encoder and a GPT-2 decoder (``model_type``
  ``"vision-encoder-decoder"``; e.g. ``nlpconnect/vit-gpt2-image-captioning``);
- BLIP (``BlipForConditionalGeneration``, ``model_type`` ``"blip"``; e.g. ``Salesforce/blip-image-captioning-base``).

For each decoder layer, head and written word ``t`` (predicted at decoder position ``t``)::

    α(t, j) = softmax_j(q_t · k_j · scale)        j over the encoder's outputs: [CLS], patch 0, 1, … (row-major)

A caption is written first (greedy: the shared loop :func:`engine.decoding.decode_loop`, the decoder re-run on the
encoder's states once per word; beam search: transformers' ``generate``), then the written ids are fed back once,
teacher-forced, and the cross-attention of that pass is captured:

- GPT-2 (transformers 5.23) calls the registered attention function for its cross-attention as for its
  self-attention, so a ``VisionEncoderDecoderModel`` is loaded with ``attn_implementation="ap_capture"`` and read
  by the one capture path (:mod:`engine.capture.hf`); the cross-attention calls are told apart from the
  encoder's and the decoder's self-attention by module identity (``block.crossattention``).
- BLIP's text decoder (``BlipTextSelfAttention``) computes its attention inline and never calls the registered
  function, so its cross-attention is captured the way modules without it are: forward hooks
  (:func:`engine.capture.capture`) on the layer's own ``query``, ``key`` and ``value`` projections, with scale
  ``d_head^−½`` as the module divides by ``√d_head``; BLIP is loaded with eager attention.

Either way the trace keeps Q, K and V and computes the weights lazily (:class:`engine.traces.caption.PatchCaptionTrace`,
whose ``cross`` is an ordinary :class:`~engine.traces.attention.AttentionTrace`); ``tests/unit/test_caption_hf.py`` checks
them against eager ``output_attentions`` and the greedy ids against transformers' ``generate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from engine.capture import capture
from engine.capture.hf import recording, register
from engine.capture.transfer import to_host
from engine.decoding import decode_loop
from engine.families import TABLE, hub_record
from engine.families.hf_api import hf
from engine.families.hf_vit import image_processor, to_rgb_uint8
from engine.families.hub import byte_level, sdpa_builder
from engine.generation import DecodeSettings
from engine.model import Model, pick_device
from engine.records import EngineError, ModelSpec, ModelUnavailableError, Tokens
from engine.text import display_tokens, error_reason, named_ids, quote_input
from engine.traces.attention import AttentionTrace
from engine.traces.caption import PatchCaptionTrace

#: most tokens a caption may have (the end token included), below the decoder's own position limit
MAX_WORDS = 30
MAX_BEAM = 10
#: the decoder of a VisionEncoderDecoder read here (its cross-attention calls the registered attention function);
#: the encoder must be a family whose outputs are [CLS] (+ [DIST]) and a patch grid (trace type ``VisionTrace``)
DECODER = "gpt2"


@dataclass(frozen=True)
class CaptionIO:
    """What turns a picture into pixels and ids into words: the checkpoint's image processor and tokenizer."""

    images: Any
    tokenizer: Any

    def __len__(self) -> int:  # engine.text.named_ids
        return len(self.tokenizer)


@dataclass(frozen=True)
class HFCaptionAdapter:
    """Tracing for a pretrained captioner: ``engine.trace(model, image, beam=…)`` lands here."""

    kind: Literal["ved", "blip"]
    family: str = "captioner"

    # ---- the parts of the model ----------------------------------------------------------------
    def cross_modules(self, module: nn.Module) -> list[nn.Module]:
        """Every decoder layer's cross-attention module, in order (GPT-2: ``crossattention``; BLIP: its ``self``)."""
        if self.kind == "ved":
            blocks = module.decoder.transformer.h
            return [block.crossattention for block in blocks]
        return [layer.crossattention.self for layer in module.text_decoder.bert.encoder.layer]

    def start_id(self, module: nn.Module) -> int:
        """The decoder's first input: the config's ``decoder_start_token_id`` (BLIP: the text config's ``bos``)."""
        config = module.config
        value = config.decoder_start_token_id if self.kind == "ved" else config.text_config.bos_token_id
        if value is None:
            value = getattr(getattr(module, "generation_config", None), "decoder_start_token_id", None)
        if not isinstance(value, int):
            raise EngineError(
                "This captioner's config names no start token (decoder_start_token_id), so it cannot write."
            )
        return value

    def stop_ids(self, module: nn.Module) -> set[int]:
        """The end tokens: the decoder's ``eos_token_id`` (BLIP ends at its ``sep_token_id``, as its ``generate``)."""
        config = module.config
        values = (
            [config.eos_token_id, config.decoder.eos_token_id]
            if self.kind == "ved"
            else [config.text_config.sep_token_id]
        )
        return {v for v in values if isinstance(v, int)}

    def max_words(self, module: nn.Module) -> int:
        config = module.config.decoder if self.kind == "ved" else module.config.text_config
        limit = (
            getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None) or MAX_WORDS + 1
        )
        return max(1, min(MAX_WORDS, int(limit) - 1))

    # ---- pixels and the encoder -------------------------------------------------------------------
    def pixel_values(self, model: Model, image: np.ndarray) -> torch.Tensor:
        """The checkpoint's own image processor on an RGB image → ``(1, 3, S, S)``."""
        return model.tokenizer.images(images=to_rgb_uint8(image), return_tensors="pt")["pixel_values"].float()

    def seen(self, model: Model, pixels: torch.Tensor) -> np.ndarray:
        """``pixels`` with the processor's normalisation undone: ``[S, S, 3]`` in 0–1, what the model saw."""
        proc = model.tokenizer.images
        if getattr(proc, "do_normalize", False):
            mean, std = np.asarray(proc.image_mean, np.float32), np.asarray(proc.image_std, np.float32)
        else:
            mean, std = np.zeros(3, np.float32), np.ones(3, np.float32)
        return np.clip(pixels[0].permute(1, 2, 0).cpu().numpy() * std + mean, 0.0, 1.0).astype(np.float32)

    def encode(self, module: nn.Module, pixels: torch.Tensor) -> torch.Tensor:
        """The image encoder's outputs ``[1, K, d]`` ([CLS] + patches)."""
        if self.kind == "ved":
            return module.encoder(pixel_values=pixels).last_hidden_state
        return module.vision_model(pixel_values=pixels).last_hidden_state

    def decode(self, module: nn.Module, states: torch.Tensor, ids: torch.Tensor):
        """One teacher-forced decoder pass over ``ids`` ``[1, T]`` reading ``states``: the model's output (logits
        ``[1, T, V]``)."""
        if self.kind == "ved":
            from transformers.modeling_outputs import BaseModelOutput

            return module(
                encoder_outputs=BaseModelOutput(last_hidden_state=states), decoder_input_ids=ids, use_cache=False
            )
        ones = torch.ones(states.shape[:2], dtype=torch.long, device=states.device)
        return module.text_decoder(
            input_ids=ids, encoder_hidden_states=states, encoder_attention_mask=ones, use_cache=False
        )

    # ---- writing ---------------------------------------------------------------------------------
    def write(
        self, model: Model, module: nn.Module, pixels: torch.Tensor, states: torch.Tensor, beam: int
    ) -> list[int]:
        """The written ids (no start token; the end token kept when written): greedy through the shared loop, or
        the best of transformers' beam search."""
        start, stops, n_new = self.start_id(module), self.stop_ids(module), self.max_words(module)
        if beam == 1:

            def step(so_far: list[int]) -> np.ndarray:
                ids = torch.tensor([so_far], device=states.device)
                return self.decode(module, states, ids).logits[0, -1].float().cpu().numpy()

            new, _stopped = decode_loop(
                step, [start], DecodeSettings(max_new_tokens=n_new), stops, n_new, named_ids(model.tokenizer)
            )
            return new
        out = module.generate(
            pixel_values=pixels, num_beams=beam, do_sample=False, max_new_tokens=n_new, num_return_sequences=1
        )
        written = [int(i) for i in out[0, 1:].tolist()]
        for k, i in enumerate(written):  # after the end token: padding
            if i in stops:
                return written[: k + 1]
        return written

    def capture_cross(self, module: nn.Module, states: torch.Tensor, ids: torch.Tensor):
        """Teacher-forced pass over ``ids``: ``(per layer (Q [H, T, d], K [H, K, d], V [H, K, d], scale), logits [T, V])``."""
        layers = self.cross_modules(module)
        if self.kind == "ved":
            wanted = {id(m) for m in layers}
            with recording() as rec:
                out = self.decode(module, states, ids)
            found = {id(m): r for m, r in rec.calls if id(m) in wanted}
            if len(found) != len(layers):
                raise EngineError("The decoder's cross-attention was not recorded (the model does not run ap_capture).")
            records, logits = to_host(([found[id(m)] for m in layers], out.logits[0]))  # one copy from the device
            return [(r.query, r.key, r.value, r.scale) for r in records], torch.from_numpy(logits)
        names = {
            f"{i}.{part}": getattr(layer, part) for i, layer in enumerate(layers) for part in ("query", "key", "value")
        }
        with capture(names) as acts:
            out = self.decode(module, states, ids)
        result = []
        for i, layer in enumerate(layers):
            d = int(layer.attention_head_size)

            def heads(name: str, d=d) -> np.ndarray:  # (1, n, H·d) → (H, n, d)
                x = acts[name][0].float()
                return x.view(x.shape[0], -1, d).transpose(0, 1).contiguous().cpu().numpy()

            result.append((heads(f"{i}.query"), heads(f"{i}.key"), heads(f"{i}.value"), d**-0.5))
        return result, out.logits[0].float().cpu()

    # ---- the trace -------------------------------------------------------------------------------
    def trace(
        self, model: Model, image: Any, *, causal: bool | None = None, max_tokens: int = 0, beam: int = 1
    ) -> PatchCaptionTrace:
        """Caption ``image`` (greedy, or the best of a beam search) and capture every decoder layer's cross-attention
        of every written word (``causal``/``max_tokens`` are ignored)."""
        if isinstance(beam, bool) or not isinstance(beam, int) or not 1 <= beam <= MAX_BEAM:
            raise EngineError(f"beam must be a whole number from 1 to {MAX_BEAM}, got {beam!r}")
        pixels = self.pixel_values(model, np.asarray(image))

        def run(module: nn.Module, device: torch.device):
            px = pixels.to(device)
            states = self.encode(module, px)
            written = self.write(model, module, px, states, beam)
            if not written:
                raise EngineError("The captioner wrote nothing for this picture.")
            ids = torch.tensor([[self.start_id(module), *written[:-1]]], device=device)  # (1, T): inputs
            layers, logits = self.capture_cross(module, states, ids)
            logp = torch.log_softmax(logits, dim=-1)[torch.arange(len(written)), torch.tensor(written)]
            return written, ids[0].tolist(), layers, float(logp.sum())

        (written, inputs, layers, log_prob), device, notice = model.run(run)
        config = model.module.config
        vision = config.encoder if self.kind == "ved" else config.vision_config
        side, patch = int(vision.image_size), int(vision.patch_size)
        grid = (side // patch, side // patch)
        n_keys = layers[0][1].shape[1]
        prefix = n_keys - grid[0] * grid[1]
        names = ("[CLS]", "[DIST]")[:prefix] if 0 <= prefix <= 2 else tuple(f"[T{i}]" for i in range(prefix))
        keys = Tokens(
            strings=(*names, *(f"p{i}" for i in range(grid[0] * grid[1]))),
            ids=tuple(range(n_keys)),
            special=(True,) * prefix + (False,) * (n_keys - prefix),
        )
        tok = model.tokenizer.tokenizer
        pieces = byte_level(tok)  # GPT-2's Ġ pieces decoded; BLIP's ## cleaned
        words = display_tokens(tok, written, pieces)
        cross = AttentionTrace(
            model_id=model.spec.id,
            family="captioner",
            tokens=display_tokens(tok, inputs, pieces),
            key_tokens=keys,
            queries=tuple(q for q, _, _, _ in layers),
            keys=tuple(k for _, k, _, _ in layers),
            values=tuple(v for _, _, v, _ in layers),
            scales=tuple(float(s) for *_, s in layers),
            causal=False,
            n_input_tokens=len(inputs),
            device=device.type,
        )
        notices = [
            f"The picture was resized to {side}×{side} pixels by the model's own image processor and cut into "
            f"{grid[0]}×{grid[1]} patches of {patch} pixels."
        ]
        if notice:
            notices.append(notice)
        return PatchCaptionTrace(
            model_id=model.spec.id,
            image=self.seen(model, pixels),
            patch_size=patch,
            grid=grid,
            prefix=prefix,
            words=words,
            caption=tok.decode(written, skip_special_tokens=True).strip(),
            cross=cross,
            log_prob=log_prob,
            beam=beam,
            notices=tuple(notices),
            device=device.type,
        )


def _check_parts(kind: str, config: dict, model_id: str) -> None:
    """Refuse checkpoints of these model types that are not captioners read here (a BLIP for questions, a
    VisionEncoderDecoder with a Swin encoder or a BERT decoder)."""
    shown = quote_input(model_id)
    if kind == "blip":
        architectures = config.get("architectures") or ["BlipForConditionalGeneration"]
        if "BlipForConditionalGeneration" not in architectures:
            raise ModelUnavailableError(
                f"{shown} is a BLIP for {', '.join(map(str, architectures))}; only BLIP "
                "captioners (BlipForConditionalGeneration) are read here."
            )
        return
    encoder = (config.get("encoder") or {}).get("model_type")
    decoder = (config.get("decoder") or {}).get("model_type")
    record = hub_record(encoder) if isinstance(encoder, str) else None
    if record is None or record.trace_type != "VisionTrace" or decoder != DECODER:
        raise ModelUnavailableError(
            f"{shown} pairs a {quote_input(str(encoder), 30)} encoder with a {quote_input(str(decoder), 30)} decoder; "
            f"captioners read here have a {' or '.join(r.label for r in TABLE if r.trace_type == 'VisionTrace')} "
            "encoder and a GPT-2 decoder."
        )


def load_hf_captioner(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """Load a captioner folder (config, safetensors weights, tokenizer, ``preprocessor_config.json``).

    Raises:
        ModelUnavailableError: not a captioner read here, no image processor or tokenizer, weights that do not load.
    """
    api = hf()
    kind = "ved" if config.get("model_type") == "vision-encoder-decoder" else "blip"
    _check_parts(kind, config, model_id)
    images = image_processor(path, model_id)
    try:
        tokenizer = api.AutoTokenizer.from_pretrained(path)
    except Exception as err:  # noqa: BLE001 — any loader error (see hub.sdpa_builder) means this model cannot load
        raise ModelUnavailableError(
            f"The tokenizer of {quote_input(model_id)} cannot be loaded: {error_reason(err)}"
        ) from err
    device = device or pick_device()

    if kind == "ved":
        from transformers import VisionEncoderDecoderModel as cls

        build = sdpa_builder(cls, path, model_id, register())
    else:
        from transformers import BlipForConditionalGeneration as cls

        build = sdpa_builder(cls, path, model_id, "eager")  # BLIP's text decoder computes attention inline anyway
    module = build(device)
    adapter = VED if kind == "ved" else BLIP
    spec = spec or ModelSpec(id=model_id, family="captioner", label=model_id, offline=True)
    return Model(
        spec=spec,
        module=module,
        tokenizer=CaptionIO(images, tokenizer),
        adapter=adapter,
        device=device,
        max_positions=adapter.max_words(module),
        reload=build,
        info={"source": str(path), "architecture": config.get("model_type")},
    )


#: the adapters the family table names (``engine.families``: ``hf_caption:VED`` and ``hf_caption:BLIP``)
VED = HFCaptionAdapter("ved")
BLIP = HFCaptionAdapter("blip")
