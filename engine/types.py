"""Plain-data boundary types of the engine.

Everything a page receives from the engine is one of these: frozen dataclasses holding numpy
arrays and Python scalars. No torch tensors or modules cross this line, so the objects pickle
cheaply (``st.cache_data``) and can be used from a notebook without the model.

The central type is :class:`AttentionTrace`. It keeps the captured per-layer Q, K and V
(O(layers · n · d)) and computes attention scores and patterns **lazily**, for the layer and head
asked for (O(n²) each). The formula it implements, per head::

    raw    = Q Kᵀ                       # [q_pos, k_pos]
    scaled = raw · scale                # scale = 1/√d_head unless the model says otherwise
    masked = scaled + bias + mask       # bias: ALiBi-style per-head bias; mask: 0 or −∞
    pattern = softmax(masked, axis=-1)  # rows sum to 1
    z      = pattern V
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal, Protocol, runtime_checkable

import numpy as np

Family = Literal["encoder", "decoder", "encoder-decoder", "vit", "rnn-attention", "captioner"]
Stage = Literal["raw", "scaled", "masked"]
STAGES: tuple[Stage, ...] = ("raw", "scaled", "masked")


class EngineError(Exception):
    """Base class of every error the engine raises on purpose; ``str(err)`` is for end users."""


class EmptyInputError(EngineError, ValueError):
    """The text to trace is empty (or only whitespace / invisible characters)."""


class ModelUnavailableError(EngineError):
    """A model cannot be loaded: unknown id, no network for a hub id, unsupported architecture."""


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the model catalog.

    Attributes:
        id: what ``engine.load`` takes, e.g. ``"minilm"``.
        family: encoder, decoder, encoder-decoder, vit, rnn-attention or captioner.
        label: a short human-readable name for pickers.
        offline: True when the model loads on a machine with no network.
        description: one sentence for the UI.
    """

    id: str
    family: Family
    label: str
    offline: bool
    description: str = ""


@dataclass(frozen=True)
class Tokens:
    """Tokens of one side of an attention matrix, ready for display.

    Attributes:
        strings: display strings, with tokenizer markers (``Ġ``, ``▁``, ``##``) cleaned.
        ids: vocabulary ids.
        special: True for marker tokens the tokenizer adds or reserves, such as ``[CLS]``, ``[SEP]``,
            ``<bos>``, ``<|endoftext|>``. An unknown-word token (``[UNK]``, ``<unk>``) stands for a word
            of the user's text and is not special (it still shows as ``[UNK]``).
    """

    strings: tuple[str, ...]
    ids: tuple[int, ...]
    special: tuple[bool, ...]

    def __post_init__(self) -> None:
        if not (len(self.strings) == len(self.ids) == len(self.special)):
            raise ValueError(
                f"Tokens: {len(self.strings)} strings, {len(self.ids)} ids and "
                f"{len(self.special)} special flags must have one length"
            )

    def __len__(self) -> int:
        return len(self.strings)

    def labels(self) -> list[str]:
        """Unique axis labels ``"3 cat"`` (position first, so repeated words stay distinct)."""
        return [f"{i} {s}" for i, s in enumerate(self.strings)]


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
        if self.window and len(self.window) != n_layers:
            raise ValueError(f"window needs one entry per layer (or none at all), got {len(self.window)}")
        if self.softcap and len(self.softcap) != n_layers:
            raise ValueError(f"softcap needs one entry per layer (or none at all), got {len(self.softcap)}")
        if self.key_padding is not None and self.key_padding.shape != (len(self.key_tokens),):
            raise ValueError(f"key_padding must have one flag per key token, got shape {self.key_padding.shape}")
        if self.alibi_slopes is not None and self.alibi_slopes.shape != (self.queries[0].shape[0],):
            raise ValueError(f"alibi_slopes must have one slope per head, got shape {self.alibi_slopes.shape}")
        if self.relative_bias:
            if len(self.relative_bias) != n_layers:
                raise ValueError(
                    f"relative_bias needs one entry per layer (or none at all), got {len(self.relative_bias)}"
                )
            want = (self.queries[0].shape[0], len(self.tokens) + len(self.key_tokens) - 1)
            for layer, rb in enumerate(self.relative_bias):
                if rb is not None and rb.shape != want:
                    raise ValueError(
                        f"layer {layer}: relative_bias must be [head, n_q + n_k − 1] = {want}, got {rb.shape}"
                    )
        if self.value_out_norms:
            if len(self.value_out_norms) != n_layers:
                raise ValueError(
                    f"value_out_norms needs one entry per layer (or none at all), got {len(self.value_out_norms)}"
                )
            want = (self.queries[0].shape[0], len(self.key_tokens))
            for layer, norms in enumerate(self.value_out_norms):
                if norms.shape != want:
                    raise ValueError(
                        f"layer {layer}: value_out_norms must be [head, k_pos] = {want}, got {norms.shape}"
                    )
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

    def window_of(self, layer: int) -> int | None:
        """The sliding-window size of ``layer``, or None."""
        layer = self._layer(layer)
        return self.window[layer] if self.window else None

    def mask(self, layer: int) -> np.ndarray:
        """Additive mask ``[q_pos, k_pos]``: 0 where attention is allowed, −∞ where blocked.

        The mask is the same for every head of a layer; ``layer`` is validated for symmetry with
        the other accessors (a later model family may mask layers differently). It is n×n: pages
        must not call it (nor ``bias``, ``scores``, ``pattern``) on long inputs; use
        :meth:`overview`, :meth:`pattern_rows` and :meth:`blocked_any`.
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

        Rows sum to 1 and blocked entries are exactly 0; a row whose keys are all blocked is all
        zeros (as in torch's SDPA).
        """
        s = self.scores(layer, head, "masked")
        row_max = np.max(s, axis=-1, keepdims=True)
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        e = np.exp(s - row_max)
        total = e.sum(axis=-1, keepdims=True)
        return (e / np.where(total > 0, total, 1.0)).astype(np.float32)

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
        reduce: Literal["max", "mean"] = "max",
        *,
        q_range: tuple[int, int] | None = None,
        k_range: tuple[int, int] | None = None,
        keys: np.ndarray | None = None,
        row_scale: bool = False,
        weighting: Literal["attention", "value", "contribution"] = "attention",
    ) -> np.ndarray:
        """One head's exact pattern pooled to ``[min(rows, size), min(keys, size)]`` block max/mean cells.

        For long inputs: computed a chunk of query rows at a time, never n×n. Arguments, returns
        and examples: :func:`engine.analysis.overview.overview`.
        """
        from engine.analysis import overview as ov  # on use: engine.types imports no analysis code

        return ov.overview(
            self,
            layer,
            head,
            size,
            reduce,
            q_range=q_range,
            k_range=k_range,
            keys=keys,
            row_scale=row_scale,
            weighting=weighting,
        )

    def pattern_rows(
        self,
        layer: int,
        head: int,
        start: int,
        stop: int,
        weighting: Literal["attention", "value", "contribution"] = "attention",
    ) -> np.ndarray:
        """Exact rows ``start:stop`` of ``pattern(layer, head)``, ``[stop − start, k_pos]``, without n×n
        (``weighting="value"``: times :meth:`value_norms`; ``"contribution"``: times :meth:`output_norms`,
        rows of :meth:`contributions`)."""
        from engine.analysis import overview as ov

        return ov.pattern_rows(self, layer, head, start, stop, weighting)

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


class CheckpointError(EngineError):
    """A checkpoint cannot be saved or loaded: a missing, truncated, corrupt or mismatched file.

    The message names the file and the problem, e.g. ``"tiny.safetensors: blocks.0.attn.w_q.weight:
    file has (64, 32), config expects (64, 64)"``.
    """


@dataclass(frozen=True, eq=False)
class TrainingSnapshot:
    """What a training run looks like at one moment; yielded by ``engine.training.train``.

    Plain data (the probe trace holds numpy arrays), so a page can keep a list of snapshots and
    redraw curves and heatmaps from them while the run goes on in another thread.

    Attributes:
        step: optimizer updates done so far (0 = before training).
        total_steps: updates the run was configured for (a progress bar's maximum).
        loss: mean training loss over the steps since the previous snapshot (at step 0, and when no
            step ran since the previous snapshot, the loss on the fixed evaluation batch).
        eval_loss: loss on the fixed evaluation batch.
        metric: the task's metric on the fixed evaluation batch (``metric_name``; exact match for
            the toy tasks: the fraction of sequences with every answer token right).
        token_accuracy: fraction of answer tokens predicted right on the evaluation batch.
        lr: learning rate of the last step (of the first step at step 0).
        tokens_per_s: training throughput since the previous snapshot (0.0 at step 0).
        elapsed_s: training wall time so far, paused time and snapshot time excluded.
        probe_trace: attention of the current model on the task's fixed probe input.
        device: where the model trains ("cpu", "cuda").
        metric_name: what ``metric`` measures, for labels.
        final: True for the last snapshot of a run.
        stopped: True when the run ended early because it was asked to stop.
    """

    step: int
    total_steps: int
    loss: float
    eval_loss: float
    metric: float
    token_accuracy: float
    lr: float
    tokens_per_s: float
    elapsed_s: float
    probe_trace: AttentionTrace | None
    device: str = "cpu"
    metric_name: str = "exact match"
    final: bool = False
    stopped: bool = False


@dataclass(frozen=True, eq=False)
class Seq2SeqTrace:
    """An encoder-decoder transformer translating one source sentence by greedy decoding.

    Attributes:
        model_id: the id the model was loaded with.
        source: source tokens (the key side of cross-attention).
        target: generated target tokens, starting with ``<bos>`` (the query side).
        output_text: the decoded translation, for display.
        encoder: self-attention of the encoder over ``source`` (not causal).
        decoder: causal self-attention of the decoder over ``target``.
        cross: cross-attention, queries = ``target``, keys = ``source``
            (``decoder.blocks.{L}.cross_attn.*``).
        notices: sentences for the UI (unknown words, truncation).
        family: always ``"encoder-decoder"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
        written: one token per row of ``decoder`` and ``cross``: the output token that step wrote
            (``target[1:]``, then the end token; :data:`CUT_TOKEN` where decoding was cut before the last
            row wrote anything). None: not recorded (then :meth:`rows_written` falls back to ``target``).
    """

    model_id: str
    source: Tokens
    target: Tokens
    output_text: str
    encoder: AttentionTrace
    decoder: AttentionTrace
    cross: AttentionTrace
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "encoder-decoder"
    device: str = "cpu"
    written: Tokens | None = None

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: encoder self-, decoder self- and cross-attention."""
        return {"encoder": self.encoder, "decoder": self.decoder, "cross": self.cross}

    def rows_written(self) -> Tokens:
        """What each decoder step wrote (:attr:`written`), or ``target`` when that was not recorded."""
        return self.target if self.written is None or len(self.written) != len(self.target) else self.written

    @cached_property
    def cross_by_output(self) -> AttentionTrace:
        """``cross`` with each row named by the token that step wrote (:meth:`rows_written`) instead of the
        token it read in: the labels a reader of a translation map expects ("rouge" reads "red"). Same
        arrays, no copy; made once per trace."""
        return replace(self.cross, tokens=self.rows_written())


#: the display token of a decoder step whose output was never written (decoding stopped at its token cap)
CUT_TOKEN = "(cut)"


def written_tokens(generated: Tokens, finished: bool) -> Tokens:
    """:attr:`Seq2SeqTrace.written` from the generated tokens (no start token; ending with the end token
    when ``finished``): unfinished output gets one :data:`CUT_TOKEN` row (id −1) for the last step."""
    if finished:
        return generated
    return Tokens(strings=(*generated.strings, CUT_TOKEN), ids=(*generated.ids, -1), special=(*generated.special, True))


@dataclass(frozen=True, eq=False)
class AlignmentTrace:
    """An RNN encoder-decoder with Bahdanau (additive) or Luong (dot) attention, decoding greedily.

    Step ``i`` (one per generated target token) computes, for every source position ``j``::

        additive:  e(i, j) = vᵀ tanh(W s(i−1) + U h(j))
        dot:       e(i, j) = s(i−1) · (W_h h(j))     (Luong's "general" score)
        α(i, j)   = softmax_j e(i, j)
        c(i)      = Σ_j α(i, j) h(j)

    Attributes:
        model_id: the id the model was loaded with.
        variant: ``"additive"`` (Bahdanau et al., 2015) or ``"dot"`` (Luong et al., 2015).
        source: source tokens (columns of the alignment map).
        target: generated target tokens (rows), without ``<bos>``; ends with ``<eos>`` when the model
            wrote it (that step attends too).
        output_text: the decoded translation, for display.
        encoder_states: ``[src_pos, d_enc]`` h(j) (both directions concatenated).
        decoder_states: ``[tgt_pos, d_dec]`` s(i−1), the state each step's attention reads.
        energies: ``[tgt_pos, src_pos]`` e(i, j) (``decoder.attn.hook_energies``).
        alignment: ``[tgt_pos, src_pos]`` α(i, j); rows sum to 1 (``decoder.attn.hook_alignment``).
        contexts: ``[tgt_pos, d_enc]`` c(i).
        output_probs: ``[tgt_pos]`` probability of the chosen output word at each step.
        notices: sentences for the UI (unknown words, truncation).
        family: always ``"rnn-attention"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
    """

    model_id: str
    variant: str
    source: Tokens
    target: Tokens
    output_text: str
    encoder_states: np.ndarray
    decoder_states: np.ndarray
    energies: np.ndarray
    alignment: np.ndarray
    contexts: np.ndarray
    output_probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "rnn-attention"
    device: str = "cpu"

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: none. One additive score per (step, source word) has no
        queries, keys or heads, so nothing here is an :class:`AttentionTrace`; pages read
        ``alignment`` and ``energies`` instead."""
        return {}


@dataclass(frozen=True, eq=False)
class VisionTrace:
    """A Vision Transformer classifying one image, with its patch attention.

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[H, W]`` or ``[H, W, 3]`` float32 in 0–1, as the model saw it (after resizing).
        patch_size: pixels per patch side.
        grid: ``(rows, cols)`` of patches.
        attention: self-attention over ``[CLS] + patches`` (row-major patch order); ``tokens``
            are ``"[CLS]", "p0", "p1", …``.
        labels: class names.
        probs: ``[n_classes]`` softmax of the logits.
        notices: sentences for the UI (resized, converted, not a digit, …).
    """

    model_id: str
    image: np.ndarray
    patch_size: int
    grid: tuple[int, int]
    attention: AttentionTrace
    labels: tuple[str, ...]
    probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def prediction(self) -> str:
        return self.labels[int(np.argmax(self.probs))]

    @property
    def family(self) -> Family:
        """The :class:`Trace` protocol; read from ``attention``, so the two cannot disagree."""
        return self.attention.family

    @property
    def device(self) -> str:
        """Where the forward pass ran; read from ``attention`` (the adapters set it there)."""
        return self.attention.device

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: self-attention over ``[CLS]`` + patches."""
        return {"self": self.attention}


@dataclass(frozen=True, eq=False)
class WindowBlock:
    """One Swin block: self-attention inside w×w windows of its stage's patch grid, shifted in odd blocks.

    The geometry (which patch sits in which window and slot, the shifted-window mask) and the lazy
    pattern are in :mod:`engine.analysis.windows`; per window and head::

        pattern = softmax(Q Kᵀ · scale + bias + shift mask)

    Attributes:
        stage: the stage it belongs to (Swin merges 2×2 patches between stages).
        block: its place in the stage, from 0; odd blocks shift their windows.
        grid: ``(rows, cols)`` of the stage's patch grid (before padding to a multiple of ``window``).
        window: w, the window's side in patches (N = w² tokens per window).
        shift: s, how far the grid is rolled up and left before it is cut (0, or w // 2 in odd blocks).
        queries, keys: ``[window, head, N, d_head]`` float32; windows row-major over the padded, shifted
            grid, tokens row-major inside a window.
        scale: the factor applied to QKᵀ.
        bias: ``[head, N, N]`` float32, the learned relative position bias added to every window's scores.
    """

    stage: int
    block: int
    grid: tuple[int, int]
    window: int
    shift: int
    queries: np.ndarray
    keys: np.ndarray
    scale: float
    bias: np.ndarray

    def __post_init__(self) -> None:
        from engine.analysis.windows import padded

        object.__setattr__(self, "grid", (int(self.grid[0]), int(self.grid[1])))  # hashable, for the mask cache
        w, n = self.window, self.window * self.window
        hp, wp = padded(self.grid, w) if w > 0 else (0, 0)
        if w < 1 or not 0 <= self.shift < w:
            raise ValueError(
                f"stage {self.stage} block {self.block}: window {w} and shift {self.shift} need 0 ≤ shift < window"
            )
        if self.queries.ndim != 4 or self.keys.shape != self.queries.shape:
            raise ValueError(
                f"queries and keys must both be [window, head, N, d_head], got {self.queries.shape}, {self.keys.shape}"
            )
        if self.queries.shape[0] != (hp // w) * (wp // w) or self.queries.shape[2] != n:
            raise ValueError(
                f"a {self.grid} grid in windows of {w}×{w} has {(hp // w) * (wp // w)} windows of {n} "
                f"tokens, got queries {self.queries.shape}"
            )
        if self.bias.shape != (self.queries.shape[1], n, n):
            raise ValueError(f"bias must be [head, N, N] = {(self.queries.shape[1], n, n)}, got {self.bias.shape}")

    @property
    def n_heads(self) -> int:
        return int(self.queries.shape[1])

    @property
    def n_windows(self) -> int:
        return int(self.queries.shape[0])

    @property
    def shifted(self) -> bool:
        return self.shift > 0

    def pattern(self, head: int | None = None) -> np.ndarray:
        """``[window, head, N, N]`` (or ``[window, N, N]`` for one head), rows summing to 1."""
        from engine.analysis.windows import block_pattern

        return block_pattern(self, head)


@dataclass(frozen=True, eq=False)
class WindowTrace:
    """A Swin Transformer classifying one image: attention inside local windows that shift between blocks.

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[H, W, 3]`` float32 in 0–1, as the model saw it (after resizing).
        patch_size: pixels per patch side at stage 0 (a stage-k patch covers ``patch_size · 2^k`` pixels).
        blocks: every block in forward order (stage by stage).
        labels: class names (empty without a classification head).
        probs: ``[n_classes]`` softmax of the logits.
        notices: sentences for the UI.
        device: where the forward pass ran ("cpu", "cuda").
        family: always ``"vit"`` (the catalog family of image models; the :class:`Trace` protocol).
    """

    model_id: str
    image: np.ndarray
    patch_size: int
    blocks: tuple[WindowBlock, ...]
    labels: tuple[str, ...]
    probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)
    device: str = "cpu"
    family: Family = "vit"

    def __post_init__(self) -> None:
        if not self.blocks:
            raise ValueError("WindowTrace needs at least one block")

    @property
    def grid(self) -> tuple[int, int]:
        """The patch grid of the first stage (what the image is cut into)."""
        return self.blocks[0].grid

    @property
    def n_stages(self) -> int:
        return max(b.stage for b in self.blocks) + 1

    def stage_blocks(self, stage: int) -> tuple[WindowBlock, ...]:
        return tuple(b for b in self.blocks if b.stage == stage)

    def block_at(self, stage: int, block: int) -> WindowBlock:
        """The ``block``-th block of ``stage``."""
        found = [b for b in self.blocks if b.stage == stage and b.block == block]
        if not found:
            raise EngineError(f"This Swin has no block {block} in stage {stage}.")
        return found[0]

    def cell_size(self, stage: int) -> int:
        """Pixels per patch side in ``stage``."""
        return self.patch_size * 2**stage

    @property
    def prediction(self) -> str:
        return self.labels[int(np.argmax(self.probs))]

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: none. Each block's attention is a set of small windows, not one
        sequence of tokens; pages read ``blocks`` instead."""
        return {}


@dataclass(frozen=True, eq=False)
class CaptionTrace:
    """An image captioner with soft attention ("Show, Attend and Tell") writing one caption.

    Step ``t`` (one per written word) computes, for every cell ``i`` of the encoder's L×L grid::

        e(t, i) = vᵀ tanh(W h(t−1) + U a(i))
        α(t, i) = softmax_i e(t, i)
        β(t)    = σ(f_β(h(t−1)))
        z(t)    = β(t) Σ_i α(t, i) a(i)

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[S, S, 3]`` float32 in 0–1, as the model saw it.
        words: the written words, without ``<bos>``; ends with ``<eos>`` when the model wrote it (that step
            attends too).
        caption: the caption as text (``<eos>`` left out).
        alphas: ``[word, L, L]`` α of the step that wrote each word, cells in image order (row 0 at the top);
            each map sums to 1. Cell ``(r, c)`` covers pixels ``r·S/L … (r+1)·S/L − 1`` down and likewise across.
        betas: ``[word]`` β of that step: how much of the attended context the word used (0–1).
        log_prob: the caption's summed log-probability.
        beam: 1 for greedy decoding, else the beam width it was the best of.
        notices: sentences for the UI.
        family: always ``"captioner"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
    """

    model_id: str
    image: np.ndarray
    words: Tokens
    caption: str
    alphas: np.ndarray
    betas: np.ndarray
    log_prob: float
    beam: int = 1
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "captioner"
    device: str = "cpu"

    @property
    def grid(self) -> int:
        """L, the side of the attention grid."""
        return int(self.alphas.shape[-1])

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: none (one additive score per word and cell, no heads); pages read
        ``alphas`` and ``betas``."""
        return {}


@dataclass(frozen=True, eq=False)
class PatchCaptionTrace:
    """A pretrained transformer captioner (ViT + GPT-2 ``VisionEncoderDecoder``, BLIP) writing one caption.

    Each written word ``t`` is predicted at decoder position ``t`` (whose input is the start token or word
    ``t − 1``); every decoder layer's cross-attention there weighs the image encoder's outputs::

        α(layer, head, t, j) = softmax_j(q_t · k_j · scale)      j over [CLS] and the patches

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[S, S, 3]`` float32 in 0–1: the pixels the model saw (its processor's resize, normalisation undone).
        patch_size: pixels per patch side.
        grid: ``(rows, cols)`` of patches; patch ``p`` is key ``prefix + p`` (row-major).
        prefix: keys before the patches ([CLS]: 1).
        words: the written tokens (no start token; ends with the end token when the model wrote it).
        caption: the caption as text (special tokens left out).
        cross: the decoder's cross-attention, an :class:`AttentionTrace` with one query row per written word
            (``tokens``: the decoder's inputs) and one key per encoder output (``key_tokens``: ``[CLS]``, ``p0`` …).
        log_prob: the written tokens' summed log-probability.
        beam: 1 for greedy decoding, else the beam width it was the best of.
        notices: sentences for the UI.
        family: always ``"captioner"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
    """

    model_id: str
    image: np.ndarray
    patch_size: int
    grid: tuple[int, int]
    prefix: int
    words: Tokens
    caption: str
    cross: AttentionTrace
    log_prob: float
    beam: int = 1
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "captioner"
    device: str = "cpu"

    def __post_init__(self) -> None:
        rows, cols = self.grid
        if len(self.cross.tokens) != len(self.words) or len(self.cross.key_tokens) != self.prefix + rows * cols:
            raise ValueError(
                f"PatchCaptionTrace: {len(self.words)} words and {self.prefix} + {rows}×{cols} keys; the "
                f"cross-attention has {len(self.cross.tokens)} rows and {len(self.cross.key_tokens)} keys"
            )

    @property
    def n_layers(self) -> int:
        return self.cross.n_layers

    @property
    def n_heads(self) -> int:
        return self.cross.n_heads

    def weights(self, layer: int) -> np.ndarray:
        """``[head, word, key]``: the cross-attention weights of decoder layer ``layer`` (rows sum to 1)."""
        return self.cross.pattern(layer)

    def patch_maps(self, layer: int, head: int | None = None) -> np.ndarray:
        """``[word, rows, cols]``: each written word's weights on the patches, laid on the image's grid (one head,
        or the mean over heads when ``head`` is None). Not renormalised: the rest went to the prefix
        (:meth:`prefix_weight`)."""
        w = self.weights(layer)  # (H, T, K)
        w = w.mean(axis=0) if head is None else w[head]  # (T, K)
        rows, cols = self.grid
        return np.ascontiguousarray(w[:, self.prefix :].reshape(len(self.words), rows, cols), dtype=np.float32)

    def prefix_weight(self, layer: int, head: int | None = None) -> np.ndarray:
        """``[word]``: the weight each word's row puts on the keys before the patches ([CLS])."""
        w = self.weights(layer)
        w = w.mean(axis=0) if head is None else w[head]
        return w[:, : self.prefix].sum(axis=1).astype(np.float32)

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: the decoder's cross-attention over the image (``"cross"``)."""
        return {"cross": self.cross}


@runtime_checkable
class Trace(Protocol):
    """What every trace type has, so pages and services ask instead of testing types.

    :class:`AttentionTrace`, :class:`Seq2SeqTrace`, :class:`AlignmentTrace`, :class:`VisionTrace`,
    :class:`WindowTrace`, :class:`CaptionTrace` and :class:`PatchCaptionTrace` all follow it; a new family's trace type must too (``tests/unit/test_trace_protocol.py``).

    Attributes:
        model_id: the id the model was loaded with.
        family: the model family.
        device: where the forward pass ran ("cpu", "cuda").
        notices: sentences for the UI.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def family(self) -> Family: ...

    @property
    def device(self) -> str: ...

    @property
    def notices(self) -> tuple[str, ...]: ...

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """``{name: AttentionTrace}`` for each block of transformer heads (``"self"``; or ``"encoder"``,
        ``"decoder"``, ``"cross"``); empty when the model has no Q/K heads (RNN attention)."""
        ...


@dataclass(frozen=True)
class ModelCard:
    """What a page may know about a loaded model: plain, read-only data, never the torch-backed
    :class:`engine.model.Model` (pages must not hold modules shared by every session).

    Attributes:
        spec: the catalog entry (id, family, label).
        default_causal: whether the model masks future tokens by itself (where a causal toggle starts).
        max_positions: the longest input the model accepts, in tokens.
    """

    spec: ModelSpec
    default_causal: bool
    max_positions: int

    @property
    def family(self) -> Family:
        return self.spec.family
