"""A head finder: every head's attention metrics averaged over a corpus, as HeadVis and Neuronpedia's Head Finder
rank heads by what they do on a whole distribution rather than on one sentence.

Two kinds of input, two kinds of metric (``w``: one head's pattern on one sequence, rows sum to 1)::

    on the corpus texts (each text's per-row mean, :mod:`engine.analysis.metrics`; then the mean over texts)
        previous_token   w(i, i−1)                       rows i ≥ 1
        self             w(i, i)
        first_token      w(i, 0)                         the first token (<bos>, [CLS]): the usual sink
        sink             Σ w(i, j) over the first token and every marker token ([CLS], [SEP], <bos>, …)
        entropy          −Σ_j w(i,j) ln w(i,j)           nats
        mean_distance    Σ_j w(i,j) |i − j|              tokens
    on repeated random tokens: <lead> x_1 … x_n x_1 … x_n (+ the tokenizer's closing marker), ``x`` drawn uniformly
    from the model's ordinary tokens (mean over the sequences)
        induction        TransformerLens's prefix-matching score (:func:`engine.analysis.induction.prefix_matching_score`):
                         the stripe w(q, q − n + 1), the token after the earlier copy of the query's token
        duplicate_token  Σ w(i, j) over earlier positions j holding the query's own token
                         (:func:`engine.analysis.metrics.duplicate_share`)

Cross-attention (the translator's) has no previous token, self, distance, duplicate or induction: they are None.
``python -m engine.analysis.head_finder MODEL`` writes ``assets/heads/<model-id>.json`` with the corpus (its texts
too), the settings and one row per head; :func:`head_table` computes the rows for any loaded model.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import engine
from engine.analysis import metrics as M
from engine.analysis.induction import prefix_matching_score
from engine.corpora.stories import generate_stories
from engine.corpora.translation.generator import generate_pairs
from engine.records import EngineError
from engine.registry import ASSETS
from engine.text import display_tokens
from engine.traces.kinds import softmax_layers
from engine.vocab import BOS_ID, MASK, SPECIALS, Vocab

if TYPE_CHECKING:
    from engine.model import Model

N_TEXTS, CORPUS_SEED = 200, 2042
#: repeated random tokens: how many sequences, the run's length n (at most what fits the model), the seed
SEQUENCES, PERIOD, REPEAT_SEED = 32, 20, 4321
MAX_BYTES = 1_000_000
TOP = 3  # snippets kept per head: the texts where it puts the most weight on one non-sink key
DIGITS = 4  # decimals kept in the JSON
CORPUS_METRICS = ("previous_token", "self", "first_token", "sink", "entropy", "mean_distance")
REPEAT_METRICS = ("induction", "duplicate_token")
METRICS = (*CORPUS_METRICS, *REPEAT_METRICS)
DEFINITIONS = {
    "previous_token": "weight from each token to the one just before it",
    "self": "weight from each token to itself",
    "first_token": "weight on the first token (<bos>, [CLS])",
    "sink": "weight on the first token and every marker token ([CLS], [SEP], <bos>, ...)",
    "entropy": "entropy of each token's row, in nats (0: one key; ln k: spread over k keys)",
    "mean_distance": "mean distance in tokens from each token to the keys it reads, weighted by attention",
    "induction": "on a random run repeated: weight from each token to the token after its earlier copy "
    "(TransformerLens's prefix-matching stripe)",
    "duplicate_token": "on a random run repeated: weight from each token to earlier copies of itself",
}
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Corpus:
    """Texts a head finder reads, with what they are and how they were made."""

    name: str
    description: str
    seed: int
    texts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "seed": self.seed, "texts": list(self.texts)}


def corpus_for(model_id: str, n: int = N_TEXTS, seed: int = CORPUS_SEED) -> Corpus:
    """The corpus a model's head table is measured on: repeated random letters for the letter model, English toy
    sentences for the translator, generated children's stories (English) for every other model."""
    if model_id == "induction-2l-attn-only":
        import torch

        from engine.training.induction import RepeatedLettersTask

        task = RepeatedLettersTask()
        rows = task.sample(n, torch.Generator().manual_seed(seed)).inputs[:, 1:]  # <bos> dropped: the model adds it
        texts = ["".join(task.vocab.decode(row.tolist())) for row in rows]
        what = (
            "runs of 8–24 random letters repeated to fill 63 letters (the model's training data, "
            "engine.training.induction.RepeatedLettersTask)"
        )
        return Corpus("repeated-letters", what, seed, tuple(texts))
    if model_id == "tiny-translator":
        texts = [english for english, _ in generate_pairs(n, seed)]
        what = "English sentences of the toy English→French grammar (engine.corpora.translation); the decoder reads "
        return Corpus("toy-english", what + "the model's own greedy translation", seed, tuple(texts))
    what = "children's stories of 2–5 sentences from the story grammar (engine.corpora.stories.generate_stories)"
    return Corpus("stories", what, seed, tuple(generate_stories(n, seed)))


# ---- repeated random tokens --------------------------------------------------------------------------------------
def repeat_layout(model: "Model") -> tuple[list[int], list[int], list[int]] | None:
    """``(ordinary token ids, ids before the run, ids after it)`` for a model traced from ids; None where the model's
    adapter has no ``trace_ids`` (encoder-decoders, vision). The last id before the run is its lead token."""
    if getattr(model.adapter, "trace_ids", None) is None:
        return None
    tok = model.tokenizer
    if isinstance(tok, Vocab):
        return [i for i, t in enumerate(tok.tokens) if i >= len(SPECIALS) and t != MASK], [BOS_ID], []
    special = set(tok.all_special_ids)
    pieces = tok.convert_ids_to_tokens(list(range(len(tok))))
    pool = [
        i
        for i, p in enumerate(pieces)
        if i not in special and p and not (p[0] + p[-1] in ("[]", "<>") and len(p) > 2)  # [unused7], <extra_id_1>
    ]
    word = tok("a", add_special_tokens=False)["input_ids"]
    full = tok("a", add_special_tokens=True)["input_ids"]
    start = next(s for s in range(len(full) - len(word) + 1) if full[s : s + len(word)] == word)
    before, after = list(full[:start]), list(full[start + len(word) :])
    if not before:  # GPT-2 and others add nothing in front: lead with <bos> (or <|endoftext|>) as TransformerLens does
        lead = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        before = [] if lead is None else [int(lead)]
    return pool, before, after


def repeated_runs(model: "Model", sequences: int = SEQUENCES, period: int = PERIOD, seed: int = REPEAT_SEED):
    """``(id sequences, lead position, n)``: each sequence ``before + run + run + after`` with a fresh random run of
    ``n`` ordinary tokens (``n`` = ``period`` or less, to fit the model); None where :func:`repeat_layout` is."""
    layout = repeat_layout(model)
    if layout is None:
        return None
    pool, before, after = layout
    rng = np.random.default_rng(seed)
    if not before:
        before = [int(pool[rng.integers(len(pool))])]  # no lead token at all: a random one
    n = min(period, (model.max_positions - len(before) - len(after)) // 2)
    runs = np.asarray(pool)[rng.integers(len(pool), size=(sequences, n))]
    return [[*before, *run, *run, *after] for run in runs.tolist()], len(before) - 1, n


def trace_ids(model: "Model", ids: Sequence[int]):
    """The model's ``AttentionTrace`` of exactly ``ids`` (its adapter's ``trace_ids``, the model's own mask)."""
    tok = model.tokenizer
    tokens = (
        tok.tokens_for_display(ids)
        if isinstance(tok, Vocab)
        else display_tokens(tok, ids, bool(getattr(model.adapter, "byte_level", False)))
    )
    return model.adapter.trace_ids(model, list(ids), tokens, causal=None)


# ---- the table ---------------------------------------------------------------------------------------------------
class _Means:
    """Running means of ``[layers, heads]`` arrays per (block, metric), NaNs skipped."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, str], np.ndarray] = {}
        self.counts: dict[tuple[str, str], np.ndarray] = {}

    def add(self, block: str, name: str, layer: int, values: np.ndarray, n_layers: int) -> None:
        key = (block, name)
        if key not in self.sums:
            self.sums[key] = np.zeros((n_layers, values.shape[0]))
            self.counts[key] = np.zeros((n_layers, values.shape[0]))
        ok = np.isfinite(values)
        self.sums[key][layer] += np.where(ok, values, 0.0)
        self.counts[key][layer] += ok

    def get(self, block: str, name: str) -> np.ndarray | None:
        if (block, name) not in self.sums:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sums[block, name] / self.counts[block, name]


def corpus_metrics(p: np.ndarray, special: Sequence[bool], square: bool = True) -> dict[str, np.ndarray]:
    """One layer's heads ``[H, q, k]`` on one text: each corpus metric, ``[H]`` (NaN where it does not apply).

    Args:
        p: the patterns.
        special: one marker flag per key token (``Tokens.special``), for ``sink``.
        square: False for cross-attention (no previous token, self or distance).
    """
    m = M.head_metrics(p, M.sink_positions(special), square=square)
    got = {"previous_token": m["previous"], "self": m["self"], "first_token": M.sink_share(p, [0])}
    got |= {"sink": m["sink"], "entropy": m["entropy"], "mean_distance": m["mean_distance"]}
    return {name: np.asarray(got[name], dtype=np.float64) for name in CORPUS_METRICS}


def repeat_metrics(p: np.ndarray, ids: Sequence[int], lead: int, n: int) -> dict[str, np.ndarray]:
    """One layer's heads ``[H, T, T]`` on one repeated run: induction and duplicate-token, ``[H]`` each, read on the
    window ``lead … lead + 2n`` (the lead token and both copies of the run)."""
    window = slice(lead, lead + 2 * n + 1)
    q = p[:, window, window]  # [H, 2n+1, 2n+1]
    return {"induction": prefix_matching_score(q, n), "duplicate_token": M.duplicate_share(q, list(ids)[window])}


def sentence_metrics(trace, layer: int) -> dict[str, np.ndarray]:
    """Every head of ``layer`` on a trace's own sentence (self-attention): the corpus metrics, and induction and
    duplicate-token read on the sentence's own repeats (NaN where no token repeats), ``[H]`` each."""
    p, ids = np.asarray(trace.pattern(layer), dtype=np.float64), np.asarray(trace.tokens.ids)
    got = corpus_metrics(p, trace.tokens.special)
    earlier = (ids[:, None] == ids[None, :]) & np.tri(ids.size, k=-1, dtype=bool)  # key j < i holds i's token
    after = np.zeros_like(earlier)
    after[:, 1:] = earlier[:, :-1]  # key j + 1 after such a copy, still before the query
    after &= np.tri(ids.size, k=-1, dtype=bool)
    for name, keys in (("duplicate_token", earlier), ("induction", after)):
        rows = keys.any(axis=-1)
        got[name] = (p * keys).sum(-1)[:, rows].mean(-1) if rows.any() else np.full(p.shape[0], np.nan)
    return got


def strongest_cells(p: np.ndarray, special: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per head of ``p`` ``[H, q, k]``, the cell with the most weight on a key that is not a sink (the first token or
    a marker): ``(query [H], key [H], weight [H])``, weight NaN where every key is a sink."""
    keep = np.ones(p.shape[-1], dtype=bool)
    keep[list(M.sink_positions(special))] = False
    masked = np.where(keep, p, -np.inf).reshape(p.shape[0], -1)  # [H, q·k]
    best = masked.argmax(axis=-1)
    weight = masked[np.arange(p.shape[0]), best]
    return best // p.shape[-1], best % p.shape[-1], np.where(np.isfinite(weight), weight, np.nan)


def head_table(
    model: "Model",
    texts: Sequence[str],
    *,
    progress: Progress | None = None,
    sequences: int = SEQUENCES,
    period: int = PERIOD,
    seed: int = REPEAT_SEED,
    batch: int = 16,
) -> list[dict[str, Any]]:
    """Every head's metrics: the corpus metrics averaged over ``texts``, induction and duplicate-token over
    ``sequences`` repeated random runs of ``period`` tokens drawn with ``seed``.

    Args:
        model: from ``engine.load``; each text is traced with the model's own mask.
        texts: the corpus (a text that cannot be traced raises; so does a model without Q/K heads: EngineError).
        progress: called as ``progress(fraction done, what)`` after each batch of texts and each run.
        batch: texts per ``engine.trace_many`` call.

    Returns:
        One dict per head, block by block, layer-major: ``{"block", "layer", "head", <METRICS>, "top"}``, a metric
        None where it does not apply (cross-attention; a linear-attention layer, which has no pattern; induction on a
        model that cannot be traced from ids); ``top``:
        up to :data:`TOP` ``[text index, query, key, weight]`` of :func:`strongest_cells`, one per text, strongest
        first (positions count the model's tokens, ``<bos>`` / ``[CLS]`` included).
    """
    if not texts:
        raise ValueError("the head finder needs at least one text")
    runs = repeated_runs(model, sequences, period, seed)
    total = len(texts) + (len(runs[0]) if runs else 0)
    means, shapes, tops = _Means(), {}, {}
    for start in range(0, len(texts), batch):
        for t, item in enumerate(engine.trace_many(model, texts[start : start + batch]), start):
            if isinstance(item, Exception):
                raise item
            for block, att in item.attention_blocks().items():
                shapes[block] = (att.n_layers, att.n_heads)
                special = att.key_tokens.special
                for layer in softmax_layers(att.layer_kinds):
                    p = att.pattern(layer)
                    for name, values in corpus_metrics(p, special, square=block != "cross").items():
                        means.add(block, name, layer, values, att.n_layers)
                    for head, cell in enumerate(zip(*strongest_cells(p, special))):
                        if math.isfinite(cell[2]):
                            tops.setdefault((block, layer, head), []).append(
                                [t, int(cell[0]), int(cell[1]), float(cell[2])]
                            )
        if progress:
            done = min(start + batch, len(texts))
            progress(done / total, f"{done} of {len(texts)} texts")
    for i, ids in enumerate(runs[0] if runs else ()):
        att = trace_ids(model, ids)
        for layer in softmax_layers(att.layer_kinds):
            for name, values in repeat_metrics(att.pattern(layer), ids, runs[1], runs[2]).items():
                means.add("self", name, layer, values, att.n_layers)
        if progress:
            progress((len(texts) + i + 1) / total, f"{i + 1} of {len(runs[0])} repeated random runs")
    if not shapes:
        raise EngineError(f"{model.spec.label} has no transformer attention heads to rank.")
    rows = []
    for block, (n_layers, n_heads) in shapes.items():
        values = {name: means.get(block, name) for name in METRICS}
        for layer in range(n_layers):
            for head in range(n_heads):
                row: dict[str, Any] = {"block": block, "layer": layer, "head": head}
                for name, v in values.items():
                    x = None if v is None else float(v[layer, head])
                    row[name] = None if x is None or not math.isfinite(x) else x
                row["top"] = sorted(tops.get((block, layer, head), []), key=lambda c: -c[3])[:TOP]
                rows.append(row)
    return rows


def finder_document(model: "Model", corpus: Corpus, *, progress: Progress | None = None) -> dict[str, Any]:
    """What ``assets/heads/<model-id>.json`` holds: the model, the corpus, the settings and the rounded rows."""
    runs = repeated_runs(model)
    rows = head_table(model, corpus.texts, progress=progress)
    rounded = [{k: round(v, DIGITS) if isinstance(v, float) else v for k, v in row.items()} for row in rows]
    for row in rounded:
        row["top"] = [[*cell[:3], round(cell[3], DIGITS)] for cell in row["top"]]
    repeats = (
        {"sequences": SEQUENCES, "period": runs[2], "seed": REPEAT_SEED, "example": runs[0][0]}
        if runs
        else "not measured: this model is not traced from token ids (induction and duplicate_token are null)"
    )
    return {
        "model": model.spec.id,
        "corpus": corpus.to_dict(),
        "settings": {
            "causal": bool(model.default_causal),
            "max_positions": model.max_positions,
            "averaging": "each metric is a mean over a sequence's query rows, then over the sequences",
            "repeated_random_tokens": repeats,
            "decimals": DIGITS,
            "top": f"per head, up to {TOP} [text index, query, key, weight]: the texts where the head puts the most "
            "weight on one key that is not a sink (not the first token, not a marker), strongest first; positions "
            "count the model's tokens (<bos> / [CLS] included)",
            "definitions": DEFINITIONS,
        },
        "heads": rounded,
    }


def table_path(model_id: str, folder: Path = ASSETS / "heads") -> Path:
    """Where a model's table is kept: ``folder/<model-id>.json`` (``/`` in a hub id becomes ``--``)."""
    return folder / f"{model_id.replace('/', '--')}.json"


def shipped_table(model_id: str) -> dict[str, Any] | None:
    """The table shipped in ``assets/heads`` for ``model_id`` (:func:`finder_document`'s dict), or None."""
    path = table_path(model_id)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def write_table(model_id: str, out: Path = ASSETS / "heads", *, progress: Progress | None = None) -> Path:
    """Compute and write :func:`table_path` in ``out``."""
    model = engine.load(model_id)
    doc = finder_document(model, corpus_for(model_id), progress=progress)
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) > MAX_BYTES:
        raise ValueError(f"{model_id}: the table is {len(text.encode()):,} bytes, over {MAX_BYTES:,}")
    out.mkdir(parents=True, exist_ok=True)
    path = table_path(model_id, out)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write every head's metrics over a corpus to assets/heads/.")
    parser.add_argument("models", nargs="+", help="model ids, e.g. minilm tiny-gpt-stories")
    parser.add_argument("--out", type=Path, default=ASSETS / "heads")
    args = parser.parse_args(argv)
    engine.set_threads(1)
    for model_id in args.models:
        path = write_table(model_id, args.out, progress=lambda f, what: print(f"\r{model_id}: {what}", end=""))
        print(f"\n{model_id}: {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
