"""The trace of one block of attention heads: per-layer Q, K and V, every stage computed on demand.

:class:`AttentionTrace` keeps the captured per-layer Q, K and V (O(layers · n · d)) and computes attention
scores and patterns **lazily**, for the layer and head asked for (O(n²) each). The formula it implements,
per head::

    raw    = Q Kᵀ                       # [q_pos, k_pos]
    scaled = raw · scale                # scale = 1/√d_head unless the model says otherwise
    masked = scaled + bias + mask       # bias: ALiBi-style per-head bias; mask: 0 or −∞
    pattern = softmax(masked, axis=-1)  # rows sum to 1
    z      = pattern V

Long inputs never build n×n: :meth:`AttentionTrace.overview` and :meth:`~AttentionTrace.pattern_rows`
compute rows a chunk at a time (:mod:`engine.traces.overview`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from engine.records import EngineError, Family, Tokens
from engine.traces import overview as ov
from engine.traces.kinds import check_pattern, window_kinds
from engine.traces.overview import HeadRows, Reduce, Weighting

Stage = Literal["raw", "scaled", "masked"]
STAGES: tuple[Stage, ...] = ("raw", "scaled", "masked")


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """What one forward pass showed, with lazy access to every attention stage.

    Attributes:
        model_id: the id the model was loaded with.
        family: the model family.
        tokens: query-side tokens.
        key_tokens: key-side tokens (the same object as ``tokens`` for self-attention).
        queries, keys, values: per layer, ``[head, pos, d_head]`` float32 arrays, as they enter the
            dot product (after rotary embedding for RoPE models).
        scales: per layer, the factor applied to QKᵀ.
        causal: whether the causal mask was applied in this trace.
        window: per layer, a sliding-window size w or None, or (): with ``causal``, query i sees key
            j only when ``0 <= i − j < w``; without, when ``|i − j| <= w`` (positions aligned at the
            end; transformers 5.23's two conventions).
        softcap: per layer, a logit cap c or None (Gemma 2): the masked scores are
            ``tanh(scaled / c) · c`` + bias + mask; or ().
        key_padding: ``[k_pos]`` bool, True where a key is padding (blocked for every query).
        alibi_slopes: ``[head]`` slopes of an ALiBi bias, or None.
        relative_bias: per layer, a learned relative-position bias (T5) as ``[head, n_q + n_k − 1]``
            or None, or (): key ``j`` of query ``i`` adds ``relative_bias[layer][h, j − i + n_q − 1]``
            (positions counted from 0 on both sides, as T5 does without a cache). Layers that share one
            bias share the array.
        layer_kinds: per layer, what kind of attention it is (:mod:`engine.traces.kinds`: ``"full"``,
            ``"sliding W"``, ``"chunked C"``, ``"no positions"``, ``"linear"``: no softmax, so :meth:`scores` and
            what reads it raise ValueError); () when made: read from ``window``.
        sinks: per layer, ``[head]`` learned sink logits (gpt-oss) or None, or (): one more logit in each row's
            softmax that no key receives, so rows sum to less than one (:meth:`sink_mass`).
        kv_heads: grouped-query attention: how many key/value heads the model has (query head ``h``
            reads key/value head ``h // (n_heads // kv_heads)``; ``keys``/``values`` hold one copy per
            query head); None when every query head has its own.
        value_out_norms: per layer, ``[head, k_pos]`` float32 ``‖v^h_j W_O^h‖``: the length of what key
            ``j``'s value adds through head ``h``'s block of the output projection (what
            :meth:`contributions` needs; :mod:`engine.capture.contribution`); or () when the trace was
            made without its model's output projection.
        generated_from: index of the first token the model generated itself (the tokens before it
            were the prompt), or None when nothing was generated.
        pos_encoding: ``[pos, d_model]`` vectors added to the token embeddings, or None.
        pos_encoding_kind: learned, sinusoidal, rope, alibi or none.
        truncated: True when the input had more than ``max_tokens`` tokens and was cut.
        n_input_tokens: the token count before truncation.
        device: where the forward pass ran ("cpu", "cuda").
        notices: sentences for the UI (truncation, a GPU fallback).
    """

    model_id: str
    family: Family
    tokens: Tokens
    key_tokens: Tokens
    queries: tuple[np.ndarray, ...]
    keys: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    scales: tuple[float, ...]
    causal: bool
    window: tuple[int | None, ...] = ()
    softcap: tuple[float | None, ...] = ()
    key_padding: np.ndarray | None = None
    alibi_slopes: np.ndarray | None = None
    relative_bias: tuple[np.ndarray | None, ...] = ()
    layer_kinds: tuple[str, ...] = ()
    sinks: tuple[np.ndarray | None, ...] = ()
    kv_heads: int | None = None
    value_out_norms: tuple[np.ndarray, ...] = ()
    generated_from: int | None = None
    pos_encoding: np.ndarray | None = None
    pos_encoding_kind: str = "none"
    truncated: bool = False
    n_input_tokens: int = 0
    device: str = "cpu"
    notices: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        n_layers = len(self.queries)
        if n_layers == 0:
            raise ValueError("AttentionTrace needs at least one layer")
        if not (len(self.keys) == len(self.values) == len(self.scales) == n_layers):
            raise ValueError("AttentionTrace: queries, keys, values and scales need one entry per layer")
        for layer in range(n_layers):
            q, k, v = self.queries[layer], self.keys[layer], self.values[layer]
            if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
                raise ValueError(f"layer {layer}: q, k, v must be [head, pos, d_head]")
            if not (q.shape[0] == k.shape[0] == v.shape[0] == self.queries[0].shape[0]):
                raise ValueError(f"layer {layer}: q, k, v disagree on the number of heads")
            if q.shape[2] != k.shape[2] or k.shape[1] != v.shape[1]:
                raise ValueError(
                    f"layer {layer}: q/k d_head or k/v positions disagree: {q.shape}, {k.shape}, {v.shape}"
                )
            if q.shape[1] != len(self.tokens) or k.shape[1] != len(self.key_tokens):
                raise ValueError(
                    f"layer {layer}: {q.shape[1]} query rows for {len(self.tokens)} tokens "
                    f"{list(self.tokens.strings)[:20]}, {k.shape[1]} key rows for "
                    f"{len(self.key_tokens)} key tokens"
                )
        for name in ("window", "softcap", "relative_bias", "value_out_norms", "sinks"):
            if getattr(self, name) and len(getattr(self, name)) != n_layers:
                raise ValueError(f"{name} needs one entry per layer (or none at all), got {len(getattr(self, name))}")
        object.__setattr__(self, "layer_kinds", tuple(self.layer_kinds) or window_kinds(self.window, n_layers))
        if len(self.layer_kinds) != n_layers:
            raise ValueError(f"layer_kinds needs one entry per layer, got {len(self.layer_kinds)}")
        if self.key_padding is not None and self.key_padding.shape != (len(self.key_tokens),):
            raise ValueError(f"key_padding must have one flag per key token, got shape {self.key_padding.shape}")
        if self.alibi_slopes is not None and self.alibi_slopes.shape != (self.queries[0].shape[0],):
            raise ValueError(f"alibi_slopes must have one slope per head, got shape {self.alibi_slopes.shape}")
        heads, n_q, n_k = self.queries[0].shape[0], len(self.tokens), len(self.key_tokens)
        shapes = {"relative_bias": ("[head, n_q + n_k − 1]", (heads, n_q + n_k - 1)), "sinks": ("[head]", (heads,))}
        shapes["value_out_norms"] = ("[head, k_pos]", (heads, n_k))
        for name, (named, want) in shapes.items():
            for layer, given in enumerate(getattr(self, name)):
                if given is not None and given.shape != want:
                    raise ValueError(f"layer {layer}: {name} must be {named} = {want}, got {given.shape}")
        if self.kv_heads is not None and (self.kv_heads < 1 or self.queries[0].shape[0] % self.kv_heads):
            raise ValueError(f"kv_heads must divide the {self.queries[0].shape[0]} query heads, got {self.kv_heads}")
        if self.generated_from is not None and not 0 <= self.generated_from <= len(self.tokens):
            raise ValueError(f"generated_from must be a token index, got {self.generated_from}")

    # ---- shape -------------------------------------------------------------------------------
    @property
    def n_layers(self) -> int:
        return len(self.queries)

    @property
    def n_heads(self) -> int:
        return self.queries[0].shape[0]

    @property
    def d_head(self) -> int:
        return self.queries[0].shape[2]

    @property
    def n_queries(self) -> int:
        return len(self.tokens)

    @property
    def n_keys(self) -> int:
        return len(self.key_tokens)

    def attention_blocks(self) -> dict[str, "AttentionTrace"]:
        """The :class:`Trace` protocol: one block of heads, this trace itself."""
        return {"self": self}

    # ---- captured tensors --------------------------------------------------------------------
    def q(self, layer: int) -> np.ndarray:
        """Queries of ``layer``: ``[head, q_pos, d_head]``."""
        return self.queries[self._layer(layer)]

    def k(self, layer: int) -> np.ndarray:
        """Keys of ``layer``: ``[head, k_pos, d_head]``."""
        return self.keys[self._layer(layer)]

    def v(self, layer: int) -> np.ndarray:
        """Values of ``layer``: ``[head, k_pos, d_head]``."""
        return self.values[self._layer(layer)]

    def value_norms(self, layer: int, head: int) -> np.ndarray:
        """Length of each key's value vector, ``‖v_j‖``, for one head: ``[k_pos]`` float32.

        α_ij·‖v_j‖ weighs each weight by the value's length only; it leaves out the output projection,
        which Kobayashi et al.'s measure includes (:meth:`contributions`).
        """
        v = self.v(layer)
        n_heads = v.shape[0]
        if not -n_heads <= int(head) < n_heads:
            raise IndexError(f"head {head} out of range: this model has {n_heads} heads (0–{n_heads - 1})")
        return np.linalg.norm(np.asarray(v[int(head)], dtype=np.float32), axis=-1).astype(np.float32)

    @property
    def has_contributions(self) -> bool:
        """Whether :meth:`contributions` can be computed (the trace kept ``value_out_norms``)."""
        return bool(self.value_out_norms)

    def output_norms(self, layer: int, head: int) -> np.ndarray:
        """``‖f_h(x_j)‖ = ‖v^h_j W_O^h‖`` for one head, one per key: ``[k_pos]`` float32.

        Raises:
            EngineError: the trace was made without its model's output projection.
        """
        layer = self._layer(layer)
        if not self.value_out_norms:
            raise EngineError(
                "This trace has no output-projection norms ‖v·W_O‖, so the contribution ‖α·f(x)‖ cannot be "
                "computed: it was not made by engine.trace or engine.generate from a model whose output "
                "projection the engine reads."
            )
        return self.value_out_norms[layer][self._heads(head)[0]]

    def contributions(self, layer: int, head: int) -> np.ndarray:
        """Kobayashi et al.'s contribution of key ``j`` to query ``i``: ``[q_pos, k_pos]`` float32.

        ``‖α_ij f_h(x_j)‖ = α_ij · ‖v^h_j W_O^h‖``, with ``f_h(x) = (x W_V^h + b_V^h) W_O^h``: the value
        (bias included) carried through head ``h``'s block of the output projection (Kobayashi,
        Kuribayashi, Yokoi and Inui 2020, "Attention is Not Only a Weight: Analyzing Transformers with
        Vector Norms", EMNLP). The output projection's bias is added once to the sum over every head and
        key, so it is part of no single head's term and not of this measure. n×n, like :meth:`pattern`;
        long inputs: :meth:`overview` / :meth:`pattern_rows` with ``weighting="contribution"``.

        Raises:
            EngineError: the trace has no output-projection norms (:meth:`output_norms`).
        """
        norms = self.output_norms(layer, head)
        return (self.pattern(layer, head) * norms[None, :]).astype(np.float32)

    def _repr_html_(self) -> str:
        """A notebook shows the trace as the in-browser view of every layer and head (offline)."""
        from engine.views.layer_view import show  # the view's module reads its script files: only when drawn

        return show(self)._repr_html_()

    def window_of(self, layer: int) -> int | None:
        """The sliding-window size of ``layer``, or None."""
        layer = self._layer(layer)
        return self.window[layer] if self.window else None

    def mask(self, layer: int) -> np.ndarray:
        """Additive mask ``[q_pos, k_pos]``: 0 where attention is allowed, −∞ where blocked.

        The same for every head of a layer. It is n×n: pages must not call it (nor ``bias``, ``scores``,
        ``pattern``) on long inputs; use :meth:`overview`, :meth:`pattern_rows` and :meth:`blocked_any`.
        """
        self._layer(layer)
        n_q, n_k = self.n_queries, self.n_keys
        blocked = np.zeros((n_q, n_k), dtype=bool)
        offset = n_k - n_q  # positions aligned at the end when the key side is longer (a prefix)
        window = self.window_of(layer)
        if self.causal:
            # query i may see keys j <= i + offset
            blocked |= np.triu(np.ones((n_q, n_k), dtype=bool), k=1 + offset)
            if window is not None:  # and keys j with i + offset − j < window
                blocked |= np.tril(np.ones((n_q, n_k), dtype=bool), k=offset - window)
        elif window is not None:  # no causal mask: keys j with |i + offset − j| <= window
            blocked |= np.tril(np.ones((n_q, n_k), dtype=bool), k=offset - window - 1)
            blocked |= np.triu(np.ones((n_q, n_k), dtype=bool), k=offset + window + 1)
        if self.key_padding is not None:
            blocked |= self.key_padding[None, :]
        return np.where(blocked, -np.inf, 0.0).astype(np.float32)

    def relative_bias_of(self, layer: int) -> np.ndarray | None:
        """The relative-position bias vector of ``layer`` ``[head, n_q + n_k − 1]``, or None."""
        layer = self._layer(layer)
        return self.relative_bias[layer] if self.relative_bias else None

    def key_head(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (itself without grouped-query attention)."""
        head = self._heads(head)[0]
        return head if self.kv_heads is None else head // (self.n_heads // self.kv_heads)

    def bias(self, layer: int) -> np.ndarray | None:
        """Per-head additive bias ``[head, q_pos, k_pos]`` (ALiBi, T5's relative bias), or None; n×n per
        head (see ``mask``)."""
        layer = self._layer(layer)
        out = None
        if self.alibi_slopes is not None:
            q_pos = np.arange(self.n_queries)[:, None] + (self.n_keys - self.n_queries)
            k_pos = np.arange(self.n_keys)[None, :]
            distance = -np.abs(q_pos - k_pos).astype(np.float32)  # [q, k], 0 on the diagonal
            out = (self.alibi_slopes.astype(np.float32)[:, None, None] * distance[None]).astype(np.float32)
        rb = self.relative_bias_of(layer)
        if rb is not None:
            rel = np.arange(self.n_keys)[None, :] - np.arange(self.n_queries)[:, None] + (self.n_queries - 1)
            out = rb[:, rel] if out is None else out + rb[:, rel]
        return None if out is None else out.astype(np.float32, copy=False)

    def blocked_any(self) -> bool:
        """True when the mask blocks at least one (query, key) pair; O(n), no n×n array."""
        padded = self.key_padding is not None and bool(self.key_padding.any())
        windows = [w for w in self.window if w is not None]
        # farthest pair: i + offset − j reaches n_k − 1 (and, without a causal mask, 1 − n_q)
        reach = self.n_keys - 1 if self.causal else max(self.n_keys, self.n_queries) - 1
        windowed = bool(windows) and (reach >= min(windows) if self.causal else reach > min(windows))
        return padded or (self.causal and self.n_queries > 1) or windowed

    # ---- lazy attention math -----------------------------------------------------------------
    def scores(self, layer: int, head: int | None = None, stage: Stage = "masked") -> np.ndarray:
        """Attention scores of one head ``[q_pos, k_pos]`` or all heads ``[head, q_pos, k_pos]``.

        Args:
            layer: layer index (negative counts from the end).
            head: head index, or None for every head of the layer.
            stage: ``"raw"`` (QKᵀ), ``"scaled"`` (× scale) or ``"masked"`` (+ bias + mask, the
                input of the softmax; TransformerLens's ``hook_attn_scores``).

        Returns:
            float32 array; masked entries are ``-inf``.
        """
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        layer = self._layer(layer)
        check_pattern(self.layer_kinds, layer)
        heads = self._heads(head)
        q = self.queries[layer][heads]  # [h, q, d]
        k = self.keys[layer][heads]  # [h, k, d]
        out = np.matmul(q, k.transpose(0, 2, 1))  # [h, q, k]
        if stage != "raw":
            out = out * np.float32(self.scales[layer])
        if stage == "masked":
            cap = self.softcap[layer] if self.softcap else None
            if cap is not None:
                out = np.tanh(out / np.float32(cap)) * np.float32(cap)
            bias = self.bias(layer)
            if bias is not None:
                out = out + bias[heads]
            if self.causal or self.key_padding is not None or self.window_of(layer) is not None:
                out = out + self.mask(layer)[None]
        out = out.astype(np.float32, copy=False)
        return out[0] if head is not None else out

    def pattern(self, layer: int, head: int | None = None) -> np.ndarray:
        """Softmax attention weights ``[q_pos, k_pos]`` (one head) or ``[head, q_pos, k_pos]``.

        Rows sum to 1 (less with a sink: :meth:`sink_mass` is the rest) and blocked entries are exactly 0; a row
        whose keys are all blocked is all zeros (as in torch's SDPA).
        """
        return self._softmax(layer, head)[0]

    def sink_mass(self, layer: int, head: int | None = None) -> np.ndarray:
        """The weight each query row gives its sink instead of a key, ``[q_pos]`` or ``[head, q_pos]`` (zeros for a
        layer with no sink): ``1 − pattern(layer, head).sum(-1)`` computed directly."""
        return self._softmax(layer, head)[1]

    def _softmax(self, layer: int, head: int | None) -> tuple[np.ndarray, np.ndarray]:
        s = self.scores(layer, head, "masked")
        sinks = self.sinks[self._layer(layer)] if self.sinks else None
        shape = s.shape[:-2] + (1, 1)  # one sink logit per head, for every row
        sink = np.float32(-np.inf) if sinks is None else np.asarray(sinks[self._heads(head)], np.float32).reshape(shape)
        row_max = np.maximum(np.max(s, axis=-1, keepdims=True), sink)
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        e, e_sink = np.exp(s - row_max), np.exp(sink - row_max)
        total = e.sum(axis=-1, keepdims=True) + e_sink
        total = np.where(total > 0, total, 1.0)
        return (e / total).astype(np.float32), (e_sink / total)[..., 0].astype(np.float32)

    def z(self, layer: int, head: int | None = None) -> np.ndarray:
        """Head outputs Σ_j pattern[i, j] · v[j]: ``[q_pos, d_head]`` or ``[head, q_pos, d_head]``."""
        layer_i = self._layer(layer)
        p = self.pattern(layer_i, head)
        v = self.values[layer_i][self._heads(head)]
        out = np.matmul(p if head is None else p[None], v)
        return out[0] if head is not None else out

    def overview(
        self,
        layer: int,
        head: int,
        size: int = 1024,
        reduce: Reduce = "max",
        *,
        q_range: tuple[int, int] | None = None,
        k_range: tuple[int, int] | None = None,
        keys: np.ndarray | None = None,
        row_scale: bool = False,
        weighting: Weighting = "attention",
    ) -> np.ndarray:
        """One head's exact pattern pooled to ``[min(rows, size), min(keys, size)]`` block max/mean cells.

        For long inputs: computed a chunk of query rows at a time, never n×n. ``weighting``: ``"attention"``
        pools the weights α_ij, ``"contribution"`` α_ij·‖v_j W_O^h‖ (:meth:`output_norms`), ``"value"``
        α_ij·‖v_j‖ (:meth:`value_norms`). The other arguments, returns and examples:
        :func:`engine.traces.overview.overview`.
        """
        norms = self.key_weights(layer, head, weighting)
        rows = self.head_rows(layer, head)
        return ov.overview(
            rows, size, reduce, q_range=q_range, k_range=k_range, keys=keys, row_scale=row_scale, norms=norms
        )

    def pattern_rows(
        self, layer: int, head: int, start: int, stop: int, weighting: Weighting = "attention"
    ) -> np.ndarray:
        """Exact rows ``start:stop`` of ``pattern(layer, head)``, ``[stop − start, k_pos]``, without n×n
        (``weighting="value"``: times :meth:`value_norms`; ``"contribution"``: times :meth:`output_norms`,
        rows of :meth:`contributions`)."""
        norms = self.key_weights(layer, head, weighting)
        return ov.pattern_rows(self.head_rows(layer, head), start, stop, norms)

    def key_weights(self, layer: int, head: int, weighting: Weighting) -> np.ndarray | None:
        """One factor per key for a ``weighting`` of the weights (:meth:`overview`); None for the plain weights."""
        if weighting not in ov.WEIGHTINGS:
            raise ValueError(f"weighting must be one of {ov.WEIGHTINGS}, got {weighting!r}")
        if weighting == "contribution":
            return self.output_norms(layer, head)
        return self.value_norms(layer, head) if weighting == "value" else None

    def head_rows(self, layer: int, head: int) -> HeadRows:
        """One head's Q, K, scale and masking rules: what :mod:`engine.traces.overview` computes rows from."""
        head, layer = self._heads(head)[0], self._layer(layer)
        check_pattern(self.layer_kinds, layer)
        rb = self.relative_bias_of(layer)
        cap = self.softcap[layer] if self.softcap else None
        padding = self.key_padding
        return HeadRows(
            q=np.ascontiguousarray(self.queries[layer][head], dtype=np.float32),  # a head of a fused block is strided
            k=np.ascontiguousarray(self.keys[layer][head], dtype=np.float32),
            scale=np.float32(self.scales[layer]),
            causal=bool(self.causal),
            window=self.window_of(layer),
            softcap=None if cap is None else np.float32(cap),
            padding=None if padding is None or not padding.any() else np.asarray(padding, dtype=bool),
            slope=None if self.alibi_slopes is None else np.float32(self.alibi_slopes[head]),
            relative=None if rb is None else np.asarray(rb[head], dtype=np.float32),
            sink=None if not self.sinks or self.sinks[layer] is None else np.float32(self.sinks[layer][head]),
        )

    # ---- helpers -----------------------------------------------------------------------------
    def _layer(self, layer: int) -> int:
        n = self.n_layers
        if not -n <= int(layer) < n:
            raise IndexError(f"layer {layer} out of range: this model has {n} layers (0–{n - 1})")
        return int(layer) % n

    def _heads(self, head: int | None) -> slice | list[int]:
        if head is None:
            return slice(None)
        n = self.n_heads
        if not -n <= int(head) < n:
            raise IndexError(f"head {head} out of range: this model has {n} heads (0–{n - 1})")
        return [int(head) % n]
