r"""How well the captioner writes and where it looks: exact match, BLEU-4 and the localisation figure.

BLEU-4 (Papineni et al., 2002), corpus level, one reference per image::

    p_n  = Σ_captions Σ_{n-grams g of the candidate} min(count_cand(g), count_ref(g))
           / Σ_captions (number of n-grams of the candidate)             n = 1 … 4
    BP   = 1 if c > r else exp(1 − r / c)        c, r: total candidate / reference length
    BLEU = BP · exp(¼ Σ_n log p_n)               (0 when some p_n is 0)

Localisation: for every shape noun the model writes ("circle"), take the attention α of the step that
wrote it; its peak cell counts as a hit when the cell's centre lies inside the true box of the object
that noun names (the n-th noun names the scene's n-th object). The uniform baseline is what a map
with no preference scores: the fraction of grid cells whose centre lies in that box.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.corpora.scenes import SHAPES, Box, Scene
from engine.families.captioner import Captioner, greedy_decode, to_tensor
from engine.vocab import EOS_ID, Vocab


def _ngrams(words: Sequence[str], n: int) -> Counter:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def bleu4(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU-4 of ``candidates`` against one reference each (uniform weights, no smoothing)."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    matched, total = [0] * 4, [0] * 4
    for cand, ref in zip(candidates, references):
        for n in range(1, 5):
            cand_grams, ref_grams = _ngrams(cand, n), _ngrams(ref, n)
            matched[n - 1] += sum(min(k, ref_grams[g]) for g, k in cand_grams.items())
            total[n - 1] += max(len(cand) - n + 1, 0)
    if min(matched) == 0:
        return 0.0
    c, r = sum(len(x) for x in candidates), sum(len(x) for x in references)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(sum(math.log(m / t) for m, t in zip(matched, total)) / 4)


def cell_centres(grid: int, image_size: int) -> np.ndarray:
    """``[L², 2]`` (row, column) pixel centres of the grid cells, row-major."""
    side = image_size / grid
    centres = (np.arange(grid) + 0.5) * side - 0.5
    rows, cols = np.meshgrid(centres, centres, indexing="ij")
    return np.stack([rows.ravel(), cols.ravel()], axis=1)


def cells_in_box(box: Box, grid: int, image_size: int) -> np.ndarray:
    """``[L²]`` bool: cells whose centre lies inside ``box`` (inclusive)."""
    top, left, bottom, right = box
    centres = cell_centres(grid, image_size)
    return (centres[:, 0] >= top) & (centres[:, 0] <= bottom) & (centres[:, 1] >= left) & (centres[:, 1] <= right)


@dataclass(frozen=True)
class CaptionScores:
    """Held-out figures (fractions 0–1) and the captions they were measured on."""

    exact_match: float
    bleu4: float
    localisation: float  # share of shape nouns whose attention peak is in their object's box
    uniform_baseline: float  # mean fraction of cells inside those boxes
    object_words: int  # shape nouns measured
    captions: list[list[str]]


def evaluate(model: Captioner, scenes: Sequence[Scene], vocab: Vocab, *, batch_size: int = 250) -> CaptionScores:
    """Greedy captions of ``scenes`` scored against their true captions and boxes (model in eval mode)."""
    cfg = model.cfg
    written, hits, baseline = [], [], []
    for start in range(0, len(scenes), batch_size):
        part = scenes[start : start + batch_size]
        with torch.no_grad():
            captions = greedy_decode(model, to_tensor(np.stack([s.image for s in part])))
        for scene, cap in zip(part, captions):
            words = [w for i, w in zip(cap.ids, vocab.decode(cap.ids)) if i != EOS_ID]
            written.append(words)
            nouns = [t for t, w in enumerate(words) if w in SHAPES]
            for obj, t in zip(scene.objects, nouns):
                inside = cells_in_box(obj.box, cfg.grid, cfg.image_size)
                hits.append(bool(inside[int(np.argmax(cap.alphas[t]))]))
                baseline.append(float(inside.mean()))
    refs = [s.words for s in scenes]
    exact = float(np.mean([w == r for w, r in zip(written, refs)]))
    return CaptionScores(
        exact_match=exact,
        bleu4=bleu4(written, refs),
        localisation=float(np.mean(hits)) if hits else 0.0,
        uniform_baseline=float(np.mean(baseline)) if baseline else 0.0,
        object_words=len(hits),
        captions=written,
    )
