"""Positional encodings as numpy, for looking at: tables, similarities, shifts, rotations, biases.

The formulas live in :mod:`engine.families.transformer.positional` (torch, used by the models); this module calls
them and returns numpy, adding the views that explain *why* each encoding works:

- Sinusoidal: ``PE(pos, 2i) = sin(pos·ω_i)``, ``PE(pos, 2i+1) = cos(pos·ω_i)``, ``ω_i = 10000^(−2i/d)``.
  A shift by ``k`` is a fixed linear map, one 2×2 rotation per frequency pair, whatever ``pos`` is::

      [sin((pos+k)ω), cos((pos+k)ω)] = [[cos kω, sin kω], [−sin kω, cos kω]] · [sin(pos·ω), cos(pos·ω)]

  and ``PE(p)·PE(q) = Σ_i cos((p − q)·ω_i)`` depends on ``|p − q|`` only.
- RoPE: ``q'(m)·k'(n)`` depends on ``m − n`` only (rotations by ``m·θ_i`` and ``n·θ_i``).
- ALiBi: ``bias[h, i, j] = −m_h·|i − j|`` with the paper's slopes ``m_h``.
- Learned: the position table a trained model holds (BERT's ``position_embeddings``, GPT-2's ``wpe``,
  our own models' ``pos_embed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from engine.families import hub_record
from engine.families.transformer import positional as pe_math
from engine.records import EngineError

Metric = Literal["dot", "cosine"]


def sinusoidal_table(n_pos: int, d_model: int) -> np.ndarray:
    """``[n_pos, d_model]`` float32 sinusoidal table (positions 0 … n_pos − 1)."""
    return pe_math.sinusoidal(int(n_pos), int(d_model)).numpy()


def frequencies(d_model: int) -> np.ndarray:
    """``ω_i = 1 / 10000^(2i / d_model)`` for each pair ``i = 0 … ceil(d/2) − 1`` (float64)."""
    return 1.0 / 10000.0 ** (np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def shift_matrix(k: int, d_model: int) -> np.ndarray:
    """The linear map ``R_k`` with ``PE(pos + k) = R_k · PE(pos)`` for every ``pos``.

    Args:
        k: the shift (any integer, negative too).
        d_model: an even width (an odd table's last sine has no cosine partner).

    Returns:
        float64 ``[d_model, d_model]``, block diagonal: block ``i`` is
        ``[[cos kω_i, sin kω_i], [−sin kω_i, cos kω_i]]``. It does not depend on ``pos``.
    """
    if d_model <= 0 or d_model % 2:
        raise EngineError(f"The shift is a rotation per (sin, cos) pair: d_model must be even, got {d_model}.")
    r = np.zeros((d_model, d_model))
    for i, w in enumerate(frequencies(d_model)):
        c, s = np.cos(k * w), np.sin(k * w)
        r[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return r


@dataclass(frozen=True)
class ShiftCheck:
    """How well ``R_k · PE(pos)`` reproduces ``PE(pos + k)``.

    Attributes:
        k: the shift.
        positions: the positions checked.
        errors: ``max_j |PE(pos + k)_j − (R_k PE(pos))_j|`` per position (float32-table rounding only).
        angles: ``k·ω_i`` per frequency pair, in radians: how far pair ``i`` turns.
        matrix: ``R_k`` itself.
    """

    k: int
    positions: np.ndarray
    errors: np.ndarray
    angles: np.ndarray
    matrix: np.ndarray


def shift_check(n_pos: int, d_model: int, k: int) -> ShiftCheck:
    """Apply ``R_k`` to every ``PE(pos)`` with ``pos + k < n_pos`` and compare with ``PE(pos + k)``.

    Raises:
        EngineError: an odd ``d_model``, or ``k`` not in ``1 … n_pos − 1``.
    """
    if not 1 <= k < n_pos:
        raise EngineError(f"The shift k must be between 1 and {n_pos - 1} for {n_pos} positions, got {k}.")
    table = pe_math.sinusoidal(n_pos, d_model).double().numpy()
    r = shift_matrix(k, d_model)
    moved = table[: n_pos - k] @ r.T  # (P-k, D): row pos is R_k · PE(pos)
    errors = np.abs(moved - table[k:]).max(axis=1)
    return ShiftCheck(k=k, positions=np.arange(n_pos - k), errors=errors, angles=k * frequencies(d_model), matrix=r)


def similarity(table: np.ndarray, metric: Metric = "dot") -> np.ndarray:
    """``[n_pos, n_pos]`` similarity of every pair of position vectors (rows of ``table``).

    Args:
        table: ``[n_pos, d]`` position vectors.
        metric: ``"dot"`` (``PE(p)·PE(q)``) or ``"cosine"`` (the dot product of unit vectors).

    Returns:
        float32 matrix, symmetric.
    """
    x = np.asarray(table, dtype=np.float64)
    if metric == "cosine":
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1.0)
    elif metric != "dot":
        raise EngineError(f"metric must be 'dot' or 'cosine', got {metric!r}")
    return (x @ x.T).astype(np.float32)


def by_offset_spread(sim: np.ndarray) -> float:
    """The largest spread (max − min) along any diagonal ``q − p = const`` of a similarity matrix.

    0 (up to rounding) means the similarity depends only on ``q − p``; with symmetry, on ``|p − q|``.
    """
    n = sim.shape[0]
    return float(max(np.ptp(np.diagonal(sim, offset=d)) for d in range(n))) if n else 0.0


# ---- RoPE -------------------------------------------------------------------------------------


def rope_example_vectors(d_head: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A reproducible random query and key ``(q, k)``, each ``[d_head]`` float32, standard normal."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d_head).astype(np.float32), rng.standard_normal(d_head).astype(np.float32)


def rope_rotate(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """``x`` rotated as RoPE rotates a query/key at each of ``positions``.

    Args:
        x: ``[d_head]`` vector (d_head even).
        positions: ``[n]`` non-negative integer positions.
        base: RoPE's base (10000 in the paper).

    Returns:
        float32 ``[n, d_head]``; row ``r`` is ``x`` with pair ``i`` turned by ``positions[r]·θ_i``.
    """
    positions = np.asarray(positions, dtype=np.int64)
    d_head = int(np.asarray(x).shape[-1])
    cos, sin = pe_math.rope_cos_sin(int(positions.max(initial=0)) + 1, d_head, base)  # (P, dh/2)
    idx = torch.tensor(positions)  # a copy: positions may be a read-only (cached) array
    vec = torch.as_tensor(np.asarray(x, dtype=np.float32))
    return pe_math.apply_rope(vec[None, :], cos[idx], sin[idx]).numpy()


def rope_thetas(d_head: int, base: float = 10000.0) -> np.ndarray:
    """``θ_i = base^(−2i / d_head)``, radians per position, one per pair (float64)."""
    return base ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)


def rope_relative_scores(
    q: np.ndarray, k: np.ndarray, offset: int, starts: np.ndarray, base: float = 10000.0
) -> np.ndarray:
    """``q'(p) · k'(p + offset)`` for each ``p`` in ``starts`` (float32 ``[len(starts)]``).

    RoPE makes these equal: the score depends on the offset, not on where the pair sits.
    """
    starts = np.asarray(starts, dtype=np.int64)
    if (starts < 0).any() or (starts + offset < 0).any():
        raise EngineError("RoPE positions must be non-negative.")
    qr = rope_rotate(q, starts, base)  # (n, dh)
    kr = rope_rotate(k, starts + offset, base)  # (n, dh)
    return np.einsum("nd,nd->n", qr.astype(np.float64), kr.astype(np.float64)).astype(np.float32)


# ---- ALiBi ------------------------------------------------------------------------------------


def alibi(n_heads: int, n_pos: int) -> tuple[np.ndarray, np.ndarray]:
    """ALiBi's slopes and bias matrices.

    Returns:
        ``(slopes [n_heads], bias [n_heads, n_pos, n_pos])`` float32, ``bias[h, i, j] = −m_h·|i − j|``.
    """
    if n_heads <= 0 or n_pos <= 0:
        raise EngineError(f"ALiBi needs at least one head and one position, got {n_heads} and {n_pos}.")
    slopes = pe_math.alibi_slopes(int(n_heads))
    return slopes.numpy(), pe_math.alibi_bias(slopes, int(n_pos), int(n_pos)).numpy()


# ---- learned tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionTable:
    """The position vectors a loaded model adds to its token embeddings.

    Attributes:
        values: ``[max_positions, d_model]`` float32 (a copy: the model is not touched).
        kind: ``"learned"`` or ``"sinusoidal"``.
        source: where the table lives in the model (``embeddings.position_embeddings``, ``wpe``, …).
    """

    values: np.ndarray
    kind: str
    source: str


def position_table(model) -> PositionTable:
    """Read a loaded model's position table as numpy (read only; nothing on the model changes).

    Args:
        model: an :class:`engine.model.Model`: a Hugging Face BERT/GPT-2-family model (through its
            adapter's position-embedding module) or one of our own transformers.

    Raises:
        EngineError: the model has no table of position vectors (RoPE, ALiBi, no encoding, RNNs, …).
    """
    module = model.module
    adapter = model.adapter
    pos_path = getattr(adapter, "pos_path", None)
    if pos_path is not None and hasattr(adapter, "base"):
        obj = adapter.base(module)
        for part in pos_path.split("."):
            obj = getattr(obj, part)
        weight = obj.weight.detach().to("cpu", torch.float32).numpy().copy()
        return PositionTable(values=weight, kind="learned", source=pos_path)
    cfg = getattr(module, "cfg", None)
    if cfg is not None and hasattr(module, "position_vectors"):
        vectors = module.position_vectors(cfg.max_len)
        if vectors is not None:
            name = "pos_embed" if cfg.pos_encoding == "learned" else "pos_table"
            values = vectors.detach().to("cpu", torch.float32).numpy().copy()
            return PositionTable(values=values, kind=cfg.pos_encoding, source=name)
        raise EngineError(f"{model.spec.id} uses {cfg.pos_encoding!r} positions: it adds no position vectors.")
    if hasattr(adapter, "position_table"):  # pretrained encoder-decoders (BART, Marian)
        found = adapter.position_table(module)
        if found is not None:
            values, kind, source = found
            return PositionTable(values=values, kind=kind, source=source)
    kind = getattr(adapter, "pos_encoding_kind", None)
    if kind == "rope":
        raise EngineError(
            f"{model.spec.id} uses rotary position embeddings (RoPE): it turns each query and key by "
            "an angle that grows with the position instead of adding position vectors; the RoPE tab "
            "shows how."
        )
    record = hub_record(str(getattr(adapter, "model_type", "")))
    if record is not None and record.positions == "relative":
        raise EngineError(
            f"{model.spec.id} (T5) adds a learned bias b(j − i) to each attention score, by the "
            "distance between query and key, instead of position vectors; Step by step shows it."
        )
    raise EngineError(f"{model.spec.id} has no table of position vectors to show.")
