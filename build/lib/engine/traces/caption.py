"""The captioners' traces: soft attention over an image's cells per written word (ours), or a pretrained
decoder's cross-attention over the image's patches."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.records import Family, Tokens
from engine.traces.attention import AttentionTrace


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
        log_prob, beam, notices, family, device: as in :class:`CaptionTrace` (``log_prob`` over the written tokens).
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

    def head_weights(self, layer: int, head: int | None = None) -> np.ndarray:
        """``[word, key]``: one head's cross-attention weights in ``layer``, or their mean over heads (``None``)."""
        w = self.weights(layer)  # (H, T, K)
        return w.mean(axis=0) if head is None else w[head]

    def patch_maps(self, layer: int, head: int | None = None) -> np.ndarray:
        """``[word, rows, cols]``: each written word's weights on the patches, laid on the image's grid (one head,
        or the mean over heads when ``head`` is None). Not renormalised: the rest went to the prefix
        (:meth:`prefix_weight`)."""
        w = self.head_weights(layer, head)  # (T, K)
        rows, cols = self.grid
        return np.ascontiguousarray(w[:, self.prefix :].reshape(len(self.words), rows, cols), dtype=np.float32)

    def prefix_weight(self, layer: int, head: int | None = None) -> np.ndarray:
        """``[word]``: the weight each word's row puts on the keys before the patches ([CLS])."""
        return self.head_weights(layer, head)[:, : self.prefix].sum(axis=1).astype(np.float32)

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: the decoder's cross-attention over the image (``"cross"``)."""
        return {"cross": self.cross}
