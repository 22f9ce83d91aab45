"""Jain & Wallace's test: give a head other attention and see whether the prediction notices.

Jain and Wallace (2019, "Attention is not Explanation") asked: if attention explained a prediction,
replacing it with very different weights should change the prediction. Here one head (or every head) of
one layer gets, in the forward pass, instead of its weights α:

    permuted     each query row's weights shuffled among the keys the row may see (the causal mask kept),
                 a fresh random permutation per run (J&W's permutation test)
    uniform      every allowed key the same weight, 1 / (number of keys the row sees)
    adversarial  weights found by a few gradient steps that are as far from α as they can get (Jensen–Shannon
                 divergence, JSD ≤ ln 2) while the prediction moves by at most ε (J&W's adversarial attention,
                 as a penalty: loss = −JSD + λ · max(0, |Δ| − ε)²; Wiegreffe & Pinter 2019 argue such weights
                 exist because a head is one of many paths, so finding them does not prove attention is noise)

and the output is compared with the output under α: the probability of the predicted token and the total
variation distance ½Σ|p − p'| of the next-token distributions (decoders, masked LM), or the cosine with the
reference and 1 − cos(e, e') (the embedding). The attention change is the mean JSD(α', α) over the
changed heads and the rows that can reach the output (only the predicting row in a decoder's or the masked
LM's last layer; every row otherwise).

The weights are replaced by :func:`attention_override`: a forward hook on our transformer's ``hook_pattern``
(written-out attention), or ``engine.capture.hf.overriding`` for Hugging Face models (that call
runs written out instead of SDPA). Both are removed on exit and run under the model's lock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from engine.analysis.attribution import Prediction, value_of
from engine.analysis.embedding_runs import embed, is_own, outputs, with_grad
from engine.records import EngineError

SwapKind = Literal["permuted", "uniform", "adversarial"]
KINDS: tuple[str, ...] = ("permuted", "uniform", "adversarial")
MAX_RUNS = 200
EPSILON = 0.01  # the adversary's allowed change in p(target) or in the cosine
PENALTY = 1000.0  # λ


@dataclass(frozen=True, eq=False)
class SwapResult:
    """What other attention in one layer did to the prediction (plain data).

    Attributes:
        layer, heads, kind: where the weights were replaced, and by what (:data:`KINDS`).
        rows: the query rows measured (those that can reach the output).
        before: p(target) or cos(e, e_reference) with the model's own weights (same written-out path).
        after: ``[runs]`` the same number with the replaced weights.
        output_change: ``[runs]`` total variation distance of the next-token distributions, or 1 − cos(e, e').
        top_kept: ``[runs]`` bool: the most likely token is still the target (always True for the embedding).
        attention_change: ``[runs]`` mean JSD(α', α) in nats over the replaced heads and measured rows.
    """

    layer: int
    heads: tuple[int, ...]
    kind: str
    rows: tuple[int, ...]
    before: float
    after: np.ndarray
    output_change: np.ndarray
    top_kept: np.ndarray
    attention_change: np.ndarray


# ---- replacing the weights -------------------------------------------------------------------------------
@contextmanager
def attention_override(model, module, layer: int, replace: Callable[[Any], Any]) -> Iterator[None]:
    """While inside, layer ``layer``'s attention weights ``(B, H, T, T)`` are ``replace(weights)`` in every forward
    pass of ``module`` (our transformer: run it with ``attn_impl="explicit"``). The caller holds the lock."""
    if is_own(model):
        handle = module.blocks[layer].attn.hook_pattern.register_forward_hook(lambda _m, _i, out: replace(out))
        try:
            yield
        finally:
            handle.remove()
        return
    from engine.capture.hf import overriding

    owner = {id(m): i for i, block in enumerate(model.adapter.layers(module)) for m in block.modules()}
    with overriding(lambda called, weights: replace(weights) if owner.get(id(called)) == layer else None):
        yield


def allowed(n: int, causal: bool) -> np.ndarray:
    """Bool ``[n, n]``: the keys each query row may see."""
    return np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)


def row_permutations(n: int, causal: bool, rng: np.random.Generator) -> np.ndarray:
    """``[n, n]`` gather indices: row i's allowed keys in a random order, blocked keys left in place."""
    index = np.tile(np.arange(n), (n, 1))
    for i in range(n):
        seen = i + 1 if causal else n
        index[i, :seen] = rng.permutation(seen)
    return index


def permute_weights(weights, heads: Sequence[int], index: np.ndarray):
    """``weights (B, H, T, T)`` with the given heads' rows gathered by ``index [len(heads), T, T]`` (a copy)."""
    import torch

    idx = torch.as_tensor(index, dtype=torch.long, device=weights.device)  # (h, T, T)
    out = weights.clone()
    sel = list(heads)
    out[:, sel] = torch.gather(weights[:, sel], -1, idx[None].expand(weights.shape[0], -1, -1, -1))
    return out


def uniform_weights(weights, heads: Sequence[int], causal: bool):
    """``weights (B, H, T, T)`` with the given heads made uniform over each row's allowed keys (a copy)."""
    import torch

    ok = torch.as_tensor(allowed(weights.shape[-1], causal), dtype=weights.dtype, device=weights.device)
    out = weights.clone()
    out[:, list(heads)] = ok / ok.sum(dim=-1, keepdim=True)
    return out


def jsd(p, q):
    """Jensen–Shannon divergence (nats) of the last axis of two torch tensors of distributions."""
    import torch

    m = 0.5 * (p + q)
    return 0.5 * (torch.xlogy(p, p) - torch.xlogy(p, m)).sum(-1) + 0.5 * (torch.xlogy(q, q) - torch.xlogy(q, m)).sum(-1)


# ---- the test ------------------------------------------------------------------------------------------------
def _n_layers(model, module) -> int:
    return len(module.blocks) if is_own(model) else len(model.adapter.layers(module))


def measured_rows(pred: Prediction, layer: int, n_layers: int) -> tuple[int, ...]:
    """Rows whose change can reach the output: in the last layer only the predicting row (next token, blank)."""
    if pred.position is not None and layer == n_layers - 1:
        return (pred.position,)
    return tuple(range(len(pred.tokens)))


def shown(pred: Prediction, out):
    """What the test reports of outputs ``(B, V|D)``, differentiable: ``(B,)`` p(target), or the cosine with the
    reference."""
    value = value_of(pred, out)
    return value if pred.task == "embedding" else value.exp()


def with_heads(weights, heads: Sequence[int], alpha):
    """``weights (B, H, T, T)`` with the given heads' weights set to ``alpha (B, len(heads), T, T)`` (a copy)."""
    new = weights.clone()
    new[:, list(heads)] = alpha.to(weights.dtype)
    return new


def _summary(pred: Prediction, out, out0) -> tuple[float, float, bool]:
    """(p(target) or cos to the reference, output change, top kept) of one output ``(1, V|D)``."""
    if pred.task == "embedding":
        return float(shown(pred, out)[0]), float(1.0 - out[0] @ out0[0]), True
    p, p0 = out[0].exp(), out0[0].exp()
    return float(p[pred.target_id]), float(0.5 * (p - p0).abs().sum()), int(p.argmax()) == pred.target_id


def swap_test(
    model,
    pred: Prediction,
    layer: int,
    heads: Sequence[int] | None = None,
    kind: str = "permuted",
    *,
    runs: int = 20,
    seed: int = 0,
    steps: int = 40,
    progress: Callable[[float], None] | None = None,
) -> SwapResult:
    """Replace the attention of ``heads`` (None: all) in ``layer`` and compare the output (module docstring).

    Args:
        model, pred: the model and its :func:`~engine.analysis.attribution.predict` result.
        kind: ``"permuted"`` (``runs`` random permutations), ``"uniform"`` or ``"adversarial"`` (``steps``
            gradient steps) — the last two give one run.
        seed: the permutations' and the adversary's start's random seed.
        progress: called with the share done after each run or step.

    Raises:
        EngineError: a bad layer, head, kind or number of runs.
    """
    if kind not in KINDS:
        raise EngineError(f"The replacement is one of {', '.join(KINDS)}, got {kind!r}.")
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise EngineError(f"Runs must be a whole number from 1 to {MAX_RUNS}, got {runs!r}.")
    n_layers = _n_layers(model, model.module)
    if not 0 <= int(layer) < n_layers:
        raise EngineError(f"Layer {layer} is out of range: this model has {n_layers} layers (0–{n_layers - 1}).")
    n_heads = int(model.module.cfg.n_heads) if is_own(model) else model.adapter.n_heads(model.module.config)
    heads = tuple(range(n_heads)) if heads is None else tuple(sorted({int(h) for h in heads}))
    if not heads or not all(0 <= h < n_heads for h in heads):
        raise EngineError(f"Heads run from 0 to {n_heads - 1}, got {heads}.")
    rows = measured_rows(pred, int(layer), n_layers)
    ids, n = list(pred.ids), len(pred.ids)
    rng = np.random.default_rng(seed)
    seen: list = []  # the model's own weights of the layer, read on the first pass

    def run_with(module, device, replace):
        def hooked(weights):
            if not seen:
                seen.append(weights.detach().clone())
            return replace(weights)

        e = embed(model, module, ids, device)[None]
        with attention_override(model, module, int(layer), hooked):
            return outputs(model, module, pred.task, pred.causal, ids, e, pred.position, explicit=True)

    def change(new) -> float:
        sel = list(heads)
        return float(jsd(new[0, sel][:, list(rows)].double(), seen[0][0, sel][:, list(rows)].double()).mean())

    def fixed(module, device):
        out0 = run_with(module, device, lambda w: w)  # the model's own weights, on the same written-out path
        results = []
        count = 1 if kind == "uniform" else runs
        for r in range(count):
            if kind == "uniform":
                new = uniform_weights(seen[0], heads, pred.causal)
            else:
                index = np.stack([row_permutations(n, pred.causal, rng) for _ in heads])
                new = permute_weights(seen[0], heads, index)
            out = run_with(module, device, lambda w, new=new: new.to(w.dtype))
            results.append((*_summary(pred, out, out0), change(new)))
            if progress is not None:
                progress((r + 1) / count)
        return _summary(pred, out0, out0)[0], results

    if kind == "adversarial":
        before, results = with_grad(
            model,
            lambda module, device: _adversary(
                model, pred, module, device, run_with, seen, heads, rows, change, steps, seed, progress
            ),
        )
    else:
        (before, results), _device, _notice = model.run(fixed)
    after, out_change, kept, att = (np.array(col) for col in zip(*results))
    return SwapResult(
        layer=int(layer),
        heads=heads,
        kind=kind,
        rows=rows,
        before=before,
        after=after.astype(float),
        output_change=out_change.astype(float),
        top_kept=kept.astype(bool),
        attention_change=att.astype(float),
    )


def _adversary(model, pred, module, device, run_with, seen, heads, rows, change, steps, seed, progress):
    """A few Adam steps on the replaced heads' scores: far from α (JSD), the output within ε."""
    import torch

    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_RUNS:
        raise EngineError(f"Steps must be a whole number from 1 to {MAX_RUNS}, got {steps!r}.")
    with torch.no_grad():
        out0 = run_with(module, device, lambda w: w)
    before = _summary(pred, out0, out0)[0]
    own = seen[0][:, list(heads)].double()  # (1, h, T, T)
    ok = torch.as_tensor(allowed(own.shape[-1], pred.causal), device=own.device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    scores = own.clamp_min(1e-9).log() + torch.randn(own.shape, generator=gen, dtype=own.dtype).to(own.device)
    scores = scores.detach().requires_grad_(True)
    opt = torch.optim.Adam([scores], lr=0.3)
    sel, measured = list(heads), list(rows)
    best = (-math.inf, None)
    for step in range(steps):
        alpha = torch.softmax(scores.masked_fill(~ok, float("-inf")), dim=-1)  # (1, h, T, T)

        out = run_with(module, device, lambda w, alpha=alpha: with_heads(w, sel, alpha))
        moved = (shown(pred, out) - shown(pred, out0))[0]
        far = jsd(alpha[0][:, measured], own[0][:, measured]).mean()
        loss = -far + PENALTY * torch.relu(moved.abs() - EPSILON) ** 2
        (scores.grad,) = torch.autograd.grad(loss, [scores])  # only the scores: the shared weights get nothing
        opt.step()
        moved_by, far_by = abs(float(moved.detach())), float(far.detach())
        if moved_by <= EPSILON and far_by > best[0]:
            best = (far_by, alpha.detach().clone())
        if progress is not None:
            progress((step + 1) / steps)
    alpha = best[1] if best[1] is not None else alpha.detach()
    with torch.no_grad():
        out = run_with(module, device, lambda w: with_heads(w, sel, alpha))
        return before, [(*_summary(pred, out, out0), change(with_heads(seen[0], sel, alpha)))]
