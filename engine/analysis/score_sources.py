"""One raw score ``q·k`` as a sum over (query source, key source) pairs of the residual stream.

The residual stream at a layer's input is a sum of sources: the token embedding, the position embedding (and
BERT's segment embedding), each earlier head's output ``z_h W_O^h``, each earlier MLP's output, and one
``bias`` source (every bias the stream picked up: the output projections' and MLPs' biases, the LayerNorms'
β). A LayerNorm is linear once its scale ``1/σ`` is held at the value it had on this input (TransformerLens's
"frozen LayerNorm"): ``LN(Σ s) = Σ γ·(s − mean s)/σ + β``. So every source becomes a query part and a key part
(``q = Σ q_s``, the query bias going to the ``bias`` source; RoPE rotates each part, a linear map) and
``q·k = Σ_s Σ_t q_s·k_t``, one term per pair, named ``"head 0.3 · token"`` (query source first).

Head outputs come from the trace (``trace.z``: the scores the trace shows), MLP outputs from one forward pass of
the model on the trace's token ids with the trace's mask (stopped after the last MLP read). Families: our own
transformer (pre- and post-norm, attention-only, every position encoding), GPT-2, BERT-likes (BERT, RoBERTa,
XLM-R, CamemBERT, DistilBERT: post-norm) and Llama-likes (Llama, Mistral, Qwen2: RMSNorm, frozen the same way,
``Σ γ·s/rms``; RoPE rotates each part). Which one a Hugging Face model is, is read from the modules it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass
from functools import partial

import numpy as np
import torch
from torch import nn

from engine.capture import capture
from engine.capture.contribution import module_blocks
from engine.families.transformer.network import Transformer
from engine.records import EngineError
from engine.traces.attention import AttentionTrace

BIAS = "bias"


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


@dataclass(frozen=True)
class Norm:
    """A LayerNorm's ``γ``, ``β`` (or None) and ``ε``."""

    weight: np.ndarray
    bias: np.ndarray | None
    eps: float
    centred: bool = True  # False: RMSNorm, x·γ/√(mean x² + ε)

    @classmethod
    def of(cls, ln: nn.Module) -> Norm:
        """A torch ``LayerNorm`` or a Hugging Face RMSNorm (``variance_epsilon``, no bias)."""
        if isinstance(ln, nn.LayerNorm):
            return cls(_np(ln.weight), None if ln.bias is None else _np(ln.bias), float(ln.eps))
        return cls(_np(ln.weight), None, float(ln.variance_epsilon), centred=False)

    def freeze(self, parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """This LayerNorm applied to the sum of ``parts`` ``{name: [rows, D]}``, written as one part per source:
        ``γ·(s − mean s)/σ`` with ``σ`` of the sum, and ``β`` added to the ``bias`` part."""
        total = sum(parts.values())
        if not self.centred:  # RMSNorm
            rms = np.sqrt(np.mean(total**2, axis=-1, keepdims=True) + self.eps)
            return {name: p / rms * self.weight for name, p in parts.items()}
        sigma = np.sqrt(total.var(-1, keepdims=True) + self.eps)  # [rows, 1]
        out = {name: (p - p.mean(-1, keepdims=True)) / sigma * self.weight for name, p in parts.items()}
        if self.bias is not None:
            out[BIAS] = out[BIAS] + self.bias
        return out


@dataclass(frozen=True)
class Layer:
    """What one earlier layer adds to the stream, at the rows read (``[rows, D]`` each)."""

    heads: np.ndarray  # [head, rows, D]: z_h W_O^h
    out_bias: np.ndarray  # [D] the output projection's bias
    mlp: np.ndarray | None  # [rows, D] the MLP's output, its bias included; None: attention-only
    mlp_bias: np.ndarray | None  # [D]
    after_attn: Norm | None = None  # post-norm: LN(x + attn)
    after_mlp: Norm | None = None  # post-norm: LN(x + mlp)


@dataclass(frozen=True)
class Reading:
    """How layer ``len(layers)``'s head reads the stream at two rows (the query's and the key's position)."""

    embeds: dict[str, np.ndarray]  # name -> [rows, D]
    embed_norm: Norm | None
    layers: list[Layer]
    read_norm: Norm | None  # pre-norm: the LayerNorm before attention
    w_q: np.ndarray  # [D, d_head]
    b_q: np.ndarray  # [d_head]
    w_k: np.ndarray
    b_k: np.ndarray
    rotate: Callable[[np.ndarray, int], np.ndarray] | None = None  # RoPE: (parts [S, d_head], row) -> rotated


def stream_sources(reading: Reading) -> dict[str, np.ndarray]:
    """The residual stream at the rows read as ``{source: [rows, D]}`` (float64), ``bias`` last."""
    first = next(iter(reading.embeds.values()))
    parts = {**reading.embeds, BIAS: np.zeros_like(first)}
    if reading.embed_norm is not None:
        parts = reading.embed_norm.freeze(parts)
    for index, layer in enumerate(reading.layers):
        for head, out in enumerate(layer.heads):
            parts[f"head {index}.{head}"] = out
        parts[BIAS] = parts[BIAS] + layer.out_bias
        if layer.after_attn is not None:
            parts = layer.after_attn.freeze(parts)
        if layer.mlp is not None:
            parts[f"MLP {index}"] = layer.mlp - layer.mlp_bias
            parts[BIAS] = parts[BIAS] + layer.mlp_bias
        if layer.after_mlp is not None:
            parts = layer.after_mlp.freeze(parts)
    return {**{n: p for n, p in parts.items() if n != BIAS}, BIAS: parts[BIAS]}


def pair_terms(reading: Reading) -> dict[str, float]:
    """``q_s · k_t`` for every (query source s, key source t): row 0 is the query's position, row 1 the key's."""
    parts = stream_sources(reading)
    if reading.read_norm is not None:
        parts = reading.read_norm.freeze(parts)
    names = list(parts)
    stacked = np.stack([parts[n] for n in names])  # [S, 2, D]
    q = stacked[:, 0] @ reading.w_q  # [S, d_head]
    k = stacked[:, 1] @ reading.w_k
    q[-1] += reading.b_q  # the bias source is last
    k[-1] += reading.b_k
    if reading.rotate is not None:
        q, k = reading.rotate(q, 0), reading.rotate(k, 1)
    grid = q @ k.T  # [S, S]
    return {f"{a} · {b}": float(grid[i, j]) for i, a in enumerate(names) for j, b in enumerate(names)}


def _head_outputs(trace: AttentionTrace, layer: int, out_proj: nn.Module, rows: list[int]) -> np.ndarray:
    """``z_h W_O^h`` of every head of ``layer`` at ``rows``: ``[head, rows, D]`` float64."""
    z = trace.z(layer).astype(np.float64)[:, rows]  # [H, rows, d_head]
    return np.einsum("hrd,hdo->hro", z, module_blocks(out_proj, trace.n_heads))


def _head_columns(weight: torch.Tensor, bias: torch.Tensor | None, head: int, d_head: int, transposed: bool):
    """Head ``head``'s ``[D, d_head]`` block of a projection (``nn.Linear``: weight ``[out, in]``; ``Conv1D``:
    ``[in, out]``) and its ``[d_head]`` bias (zeros when there is none)."""
    cols = slice(head * d_head, (head + 1) * d_head)
    w = _np(weight)
    block = w[:, cols] if transposed else w[cols].T
    return block, np.zeros(d_head) if bias is None else _np(bias)[cols]


class _Enough(Exception):
    """Raised by a hook on the last MLP read: the rest of the forward pass is not needed."""


def _stop(_module: nn.Module, _inputs: tuple, _output: torch.Tensor) -> None:
    raise _Enough


def _mlp_outputs(run, mlps: dict[str, nn.Module], rows: list[int]) -> dict[str, np.ndarray]:
    """The outputs ``[rows, D]`` of ``mlps`` during ``run()``, one forward pass stopped after the last of them
    (none when there is no MLP to read)."""
    if not mlps:
        return {}
    with torch.no_grad(), capture(mlps) as acts:
        handle = list(mlps.values())[-1].register_forward_hook(_stop)  # after capture's own hook: stored first
        try:
            run()
        except _Enough:
            pass
        finally:
            handle.remove()
    return {name: _np(out[0])[rows] for name, out in acts.items()}


def own_reading(module: Transformer, trace: AttentionTrace, layer: int, head: int, rows: list[int], device) -> Reading:
    """:class:`Reading` of our own transformer (:mod:`engine.families.transformer.network`)."""
    cfg, blocks = module.cfg, module.blocks
    ids = torch.tensor([list(trace.tokens.ids)], dtype=torch.long, device=device)
    mlps = {} if cfg.attn_only else {str(i): blocks[i].mlp for i in range(layer)}
    outs = _mlp_outputs(lambda: module(ids, causal=trace.causal, attn_impl="sdpa"), mlps, rows)
    embeds = {"token": _np(module.embed.weight)[list(trace.tokens.ids)][rows]}
    pos = module.position_vectors(len(trace.tokens))
    if pos is not None:
        embeds["position"] = _np(pos)[rows]
    post = cfg.norm == "post"
    layers = [
        Layer(
            heads=_head_outputs(trace, i, blocks[i].attn.w_o, rows),
            out_bias=_np(blocks[i].attn.w_o.bias),
            mlp=outs.get(str(i)),
            mlp_bias=None if cfg.attn_only else _np(blocks[i].mlp.fc_out.bias),
            after_attn=Norm.of(blocks[i].ln1) if post else None,
            after_mlp=Norm.of(blocks[i].ln2) if post and not cfg.attn_only else None,
        )
        for i in range(layer)
    ]
    attn = blocks[layer].attn
    w_q, b_q = _head_columns(attn.w_q.weight, attn.w_q.bias, head, cfg.d_head, transposed=False)
    w_k, b_k = _head_columns(attn.w_k.weight, attn.w_k.bias, head, cfg.d_head, transposed=False)
    rotate = None
    if cfg.pos_encoding == "rope":
        cos, sin = _np(module.rope_cos)[rows], _np(module.rope_sin)[rows]  # [2, d_head/2]
        rotate = lambda x, r: rotate_pairs(x, cos[r], sin[r])  # noqa: E731
    read = None if post else Norm.of(blocks[layer].ln1)
    return Reading(embeds, None, layers, read, w_q, b_q, w_k, b_k, rotate)


def rotate_pairs(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """RoPE on interleaved pairs ``(x[2i], x[2i+1])`` (:func:`engine.families.transformer.positional.apply_rope`)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return np.stack((even * cos - odd * sin, even * sin + odd * cos), axis=-1).reshape(x.shape)


def hf_reading(model, module: nn.Module, trace: AttentionTrace, layer: int, head: int, rows: list[int], device):
    """:class:`Reading` of a GPT-2, BERT-like or Llama-like Hugging Face model (paths as in transformers 5.23)."""
    adapter = model.adapter
    text_model = hasattr(adapter, "base") and hasattr(adapter, "layers")  # engine.families.hf_text's adapter
    layout = layout_reader(adapter.base(module), adapter.layers(module)) if text_model else None
    if layout is None:
        kind = getattr(getattr(module, "config", None), "model_type", None) or model.spec.id
        raise EngineError(
            "Splitting a score into its sources is done for our own transformers, GPT-2, BERT-likes, DistilBERT "
            f"and Llama-likes (Llama, Mistral, Qwen2); not for {kind}."
        )
    reader, mlp_path = layout
    ids = list(trace.tokens.ids)
    kwargs = adapter.causal_kwargs(module, len(ids), trace.causal, device, default=bool(model.default_causal))
    if adapter.caches:
        kwargs["use_cache"] = False
    blocks, base = adapter.layers(module), adapter.base(module)
    ids_t = torch.tensor([ids], dtype=torch.long, device=device)
    mlps = {str(i): blocks[i].get_submodule(mlp_path) for i in range(layer)}
    outs = _mlp_outputs(lambda: base(input_ids=ids_t, **kwargs), mlps, rows)
    return reader(base, blocks, outs, trace, layer, head, rows)


def _has(module: nn.Module, *paths: str) -> bool:
    for path in paths:
        obj = module
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


def layout_reader(base: nn.Module, blocks: list[nn.Module]):
    """``(reader, path of the MLP in a layer)`` of a Hugging Face model laid out as GPT-2, BERT, DistilBERT or
    Llama (read from its modules), or None.

    BERT: not ELECTRA's projected embeddings. Llama: separate ``q_proj``/``k_proj``, RMSNorm ``γ·x̂`` (Llama's
    ``variance_epsilon``; Gemma's ``(1 + γ)`` norm keeps ``eps``), no per-head q/k norms (Qwen3).
    """
    block = blocks[0]
    if _has(base, "wte") and _has(block, "attn.c_attn", "attn.c_proj", "ln_1", "mlp.c_proj"):
        return _gpt2, "mlp"
    for paths in (BERT, DISTILBERT):
        if _has(base, "embeddings.word_embeddings", "embeddings.LayerNorm") and _has(block, *astuple(paths)):
            return None if _has(base, "embeddings_project") else (partial(_post_norm, paths), paths.mlp)
    llama_paths = ("self_attn.q_proj", "self_attn.k_proj", "input_layernorm.variance_epsilon", "mlp.down_proj")
    if _has(base, "embed_tokens", "rotary_emb") and _has(block, *llama_paths) and not _has(block, "self_attn.q_norm"):
        return _rotary, "mlp"
    return None


def _bias(linear: nn.Module, width: int) -> np.ndarray:
    return np.zeros(width) if linear.bias is None else _np(linear.bias)


def _gpt2(base, blocks, outs, trace: AttentionTrace, layer: int, head: int, rows: list[int]) -> Reading:
    """GPT-2: pre-norm, learned positions, fused ``c_attn`` Conv1D ``[D, 3D]`` (q | k | v)."""
    embeds = {"token": _np(base.wte.weight)[list(trace.tokens.ids)][rows], "position": _positions(trace, rows)}
    layers = [
        Layer(
            heads=_head_outputs(trace, i, blocks[i].attn.c_proj, rows),
            out_bias=_np(blocks[i].attn.c_proj.bias),
            mlp=outs[str(i)],
            mlp_bias=_np(blocks[i].mlp.c_proj.bias),
        )
        for i in range(layer)
    ]
    attn, width, d_head = blocks[layer].attn.c_attn, trace.n_heads * trace.d_head, trace.d_head
    w, b = attn.weight, attn.bias
    w_q, b_q = _head_columns(w[:, :width], b[:width], head, d_head, transposed=True)
    w_k, b_k = _head_columns(w[:, width : 2 * width], b[width : 2 * width], head, d_head, transposed=True)
    return Reading(embeds, None, layers, Norm.of(blocks[layer].ln_1), w_q, b_q, w_k, b_k)


def _positions(trace: AttentionTrace, rows: list[int]) -> np.ndarray:
    """The position vectors the model added at ``rows`` (the trace read them from the model's position module)."""
    if trace.pos_encoding is None:
        raise EngineError("This trace kept no position vectors, so the position source cannot be written.")
    return trace.pos_encoding[rows].astype(np.float64)


@dataclass(frozen=True)
class PostNormPaths:
    """Where a post-norm encoder layer keeps its parts (``LN(x + attn)``, ``LN(x + MLP)``)."""

    query: str
    key: str
    out: str
    attn_norm: str
    mlp: str  # the MLP's output before the residual add
    mlp_out: str  # its last linear layer (the MLP's output bias)
    mlp_norm: str


BERT = PostNormPaths(
    "attention.self.query",
    "attention.self.key",
    "attention.output.dense",
    "attention.output.LayerNorm",
    "output.dense",
    "output.dense",
    "output.LayerNorm",
)
DISTILBERT = PostNormPaths(
    "attention.q_lin", "attention.k_lin", "attention.out_lin", "sa_layer_norm", "ffn", "ffn.lin2", "output_layer_norm"
)


def _post_norm(
    paths: PostNormPaths, base, blocks, outs, trace: AttentionTrace, layer: int, head: int, rows: list[int]
) -> Reading:
    """BERT-likes and DistilBERT: embeddings (token + position + BERT's segment 0) then LayerNorm; post-norm."""
    emb, d_head = base.embeddings, trace.d_head
    position = _positions(trace, rows)
    embeds = {"token": _np(emb.word_embeddings.weight)[list(trace.tokens.ids)][rows], "position": position}
    if _has(emb, "token_type_embeddings"):
        embeds["segment"] = np.broadcast_to(_np(emb.token_type_embeddings.weight[0]), position.shape)
    layers = [
        Layer(
            heads=_head_outputs(trace, i, blocks[i].get_submodule(paths.out), rows),
            out_bias=_np(blocks[i].get_submodule(paths.out).bias),
            mlp=outs[str(i)],
            mlp_bias=_np(blocks[i].get_submodule(paths.mlp_out).bias),
            after_attn=Norm.of(blocks[i].get_submodule(paths.attn_norm)),
            after_mlp=Norm.of(blocks[i].get_submodule(paths.mlp_norm)),
        )
        for i in range(layer)
    ]
    query, key = blocks[layer].get_submodule(paths.query), blocks[layer].get_submodule(paths.key)
    w_q, b_q = _head_columns(query.weight, query.bias, head, d_head, transposed=False)
    w_k, b_k = _head_columns(key.weight, key.bias, head, d_head, transposed=False)
    return Reading(embeds, Norm.of(emb.LayerNorm), layers, None, w_q, b_q, w_k, b_k)


def _rotary(base, blocks, outs, trace: AttentionTrace, layer: int, head: int, rows: list[int]) -> Reading:
    """Llama, Mistral, Qwen2: RMSNorm before each sublayer, no position vectors, RoPE on halves ``(i, i + r/2)``
    of the first ``r`` coordinates with the model's own angles (its ``rotary_emb``, scaling included)."""
    d_head, width = trace.d_head, base.config.hidden_size
    embeds = {"token": _np(base.embed_tokens.weight)[list(trace.tokens.ids)][rows]}
    layers = [
        Layer(
            heads=_head_outputs(trace, i, blocks[i].self_attn.o_proj, rows),
            out_bias=_bias(blocks[i].self_attn.o_proj, width),
            mlp=outs[str(i)],
            mlp_bias=_bias(blocks[i].mlp.down_proj, width),
        )
        for i in range(layer)
    ]
    attn = blocks[layer].self_attn
    w_q, b_q = _head_columns(attn.q_proj.weight, attn.q_proj.bias, head, d_head, transposed=False)
    w_k, b_k = _head_columns(attn.k_proj.weight, attn.k_proj.bias, trace.key_head(head), d_head, transposed=False)
    weight = base.embed_tokens.weight
    positions = torch.tensor([rows], dtype=torch.long, device=weight.device)
    cos, sin = (_np(t[0]) for t in base.rotary_emb(weight[:1], positions))  # [2, r] each
    rotate = lambda x, r: rotate_halves(x, cos[r], sin[r])  # noqa: E731
    return Reading(embeds, None, layers, Norm.of(blocks[layer].input_layernorm), w_q, b_q, w_k, b_k, rotate)


def rotate_halves(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Hugging Face's RoPE (``x·cos + rotate_half(x)·sin``) on the first ``len(cos)`` coordinates of ``x``."""
    r = cos.shape[-1]
    turned = x[..., :r]
    half = np.concatenate((-turned[..., r // 2 :], turned[..., : r // 2]), axis=-1)
    return np.concatenate((turned * cos + half * sin, x[..., r:]), axis=-1)


def source_terms(model, trace: AttentionTrace, layer: int, head: int, query: int, key: int) -> dict[str, float]:
    """``trace``'s raw score at (``query``, ``key``) of ``layer``/``head`` as ``{"query source · key source":
    term}`` (module docstring); ``model`` is the loaded model the trace was made with.

    Raises:
        EngineError: a model of another family, or a trace of another model.
    """
    if getattr(model, "spec", None) is None or model.spec.id != trace.model_id:
        raise EngineError(
            f"The sources split needs the model the trace was made with ({trace.model_id!r}), got "
            f"{getattr(getattr(model, 'spec', None), 'id', type(model).__name__)!r}."
        )
    rows = [query, key]

    def read(module: nn.Module, device: torch.device) -> dict[str, float]:
        if isinstance(module, Transformer):
            return pair_terms(own_reading(module, trace, layer, head, rows, device))
        return pair_terms(hf_reading(model, module, trace, layer, head, rows, device))

    terms, _device, _notice = model.run(read)
    return terms
