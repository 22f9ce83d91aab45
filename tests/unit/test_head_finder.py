"""The head finder (engine.analysis.head_finder): each metric on a hand-worked pattern, the induction checkpoint's
scores against its own hooked attention pattern, the shipped tables' schema and size, and one shipped table against
a fresh computation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.analysis import head_finder as F
from engine.analysis.metrics import duplicate_share
from engine.training.induction import patterns as hooked_patterns
from engine.vocab import BOS_ID

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHIPPED = ("minilm", "tiny-gpt-stories", "tiny-bert-stories", "induction-2l-attn-only", "tiny-translator")
HEADS_DIR = Path(__file__).resolve().parents[2] / "assets" / "heads"

# ---- hand-worked: <bos> a b c a b c (lead 0, n = 3), two heads ---------------------------------------------------
IDS = [1, 7, 8, 9, 7, 8, 9]
ROWS = [  # head 0, causal; each row sums to 1
    [1.0],
    [0.5, 0.5],
    [0.2, 0.6, 0.2],
    [0.1, 0.1, 0.7, 0.1],
    [0.1, 0.2, 0.5, 0.1, 0.1],  # second a: earlier a at 1 (0.2), the b after it at 2 (0.5)
    [0.1, 0.0, 0.1, 0.6, 0.1, 0.1],  # second b: earlier b at 2 (0.1), the c after it at 3 (0.6)
    [0.05, 0.0, 0.0, 0.15, 0.7, 0.1, 0.0],  # second c: earlier c at 3 (0.15), the a after it at 4 (0.7)
]


def hand_patterns() -> np.ndarray:
    p = np.zeros((2, 7, 7))
    for i, row in enumerate(ROWS):
        p[0, i, : len(row)] = row
    p[1, 0, 0] = 1.0
    p[1, np.arange(1, 7), np.arange(0, 6)] = 1.0  # head 1: a pure previous-token head
    return p


def test_each_corpus_metric_on_a_hand_worked_pattern() -> None:
    special = (True, False, False, False, False, False, True)  # a marker at the end too, for "sink"
    got = F.corpus_metrics(hand_patterns(), special)
    assert got["previous_token"] == pytest.approx([(0.5 + 0.6 + 0.7 + 0.1 + 0.1 + 0.1) / 6, 1.0])
    assert got["self"] == pytest.approx([(1 + 0.5 + 0.2 + 0.1 + 0.1 + 0.1 + 0) / 7, 1 / 7])
    assert got["first_token"] == pytest.approx([(1 + 0.5 + 0.2 + 0.1 + 0.1 + 0.1 + 0.05) / 7, 2 / 7])
    assert got["sink"] == pytest.approx([(1 + 0.5 + 0.2 + 0.1 + 0.1 + 0.1 + 0.05) / 7, 2 / 7])  # column 6 is 0
    distance = [0, 0.5, 0.2 * 2 + 0.6, 0.1 * 3 + 0.1 * 2 + 0.7, 0.4 + 0.6 + 1.0 + 0.1, 0.5 + 0.3 + 1.2 + 0.1, 2.25]
    assert got["mean_distance"] == pytest.approx([sum(distance) / 7, 6 / 7])
    entropy = [-sum(w * math.log(w) for w in row if w > 0) for row in ROWS]
    assert got["entropy"] == pytest.approx([sum(entropy) / 7, 0.0])


def test_induction_and_duplicate_token_on_a_hand_worked_pattern() -> None:
    got = F.repeat_metrics(hand_patterns(), IDS, lead=0, n=3)
    # TransformerLens's stripe (q, q − 2) for q = 2 … 6: 0.2, 0.1, 0.5, 0.6, 0.7
    assert got["induction"] == pytest.approx([(0.2 + 0.1 + 0.5 + 0.6 + 0.7) / 5, 0.0])
    # rows 4, 5, 6 have an earlier copy of their token (at 1, 2, 3)
    assert got["duplicate_token"] == pytest.approx([(0.2 + 0.1 + 0.15) / 3, 0.0])
    # a closing marker after the window changes nothing; a lead at 1 shifts the window
    wide = np.zeros((2, 9, 9))
    wide[:, 1:8, 1:8] = hand_patterns()
    assert F.repeat_metrics(wide, [0, *IDS, 2], lead=1, n=3)["induction"] == pytest.approx(got["induction"])
    assert np.isnan(duplicate_share(np.eye(3), [4, 5, 6]))  # no token repeats


def test_strongest_cells_skip_the_sinks() -> None:
    q, k, w = F.strongest_cells(hand_patterns(), (True, False, False, False, False, False, False))
    # row 0's 1.0 sits on the first token: skipped; 0.7 at (3, 2) and (6, 4): the first, row-major
    assert (q[0], k[0], w[0]) == (3, 2, pytest.approx(0.7))
    assert (q[1], k[1], w[1]) == (2, 1, 1.0)  # the first 1.0 off the first token, row-major


# ---- the induction checkpoint against its own hooked patterns ----------------------------------------------------
@pytest.fixture(scope="module")
def induction_model():
    return engine.load("induction-2l-attn-only")


def test_induction_and_previous_token_match_the_model_s_own_pattern(induction_model) -> None:
    model = induction_model
    texts = F.corpus_for(model.spec.id, n=12).texts
    rows = F.head_table(model, texts, sequences=6)
    table = {(r["layer"], r["head"]): r for r in rows}
    seqs, lead, n = F.repeated_runs(model, sequences=6)
    assert lead == 0 and all(s[0] == BOS_ID and s[1 : n + 1] == s[n + 1 :] for s in seqs)
    hooked = hooked_patterns(model.module, torch.tensor(seqs))  # [L, B, H, T, T]: blocks.L.attn.hook_pattern
    corpus = [hooked_patterns(model.module, torch.tensor([[BOS_ID, *model.tokenizer.encode(t)]]))[:, 0] for t in texts]
    for layer in range(2):
        for head in range(4):
            stripe = [
                np.mean([hooked[layer, b, head, q, q - n + 1] for q in range(n - 1, 2 * n + 1)]) for b in range(6)
            ]
            dup = []  # per run: the mean, over queries whose letter occurred before, of the weight on those copies
            for b, ids in enumerate(seqs):
                shares = [
                    sum(hooked[layer, b, head, q, j] for j in range(q) if ids[j] == ids[q])
                    for q in range(len(ids))
                    if ids[q] in ids[:q]
                ]
                dup.append(np.mean(shares))
            prev = [np.mean([c[layer, head, i, i - 1] for i in range(1, c.shape[-1])]) for c in corpus]
            assert table[layer, head]["induction"] == pytest.approx(np.mean(stripe), abs=1e-5)
            assert table[layer, head]["previous_token"] == pytest.approx(np.mean(prev), abs=1e-5)
            assert table[layer, head]["duplicate_token"] == pytest.approx(np.mean(dup), abs=1e-5)
    # the card names 0.1 the previous-token head and 1.2 the induction head: the finder ranks them first
    assert max(table, key=lambda h: table[h]["previous_token"]) == (0, 1)
    assert max(table, key=lambda h: table[h]["induction"]) == (1, 2)


def test_the_shipped_table_equals_a_fresh_computation(induction_model) -> None:
    doc = F.shipped_table("induction-2l-attn-only")
    repeats = doc["settings"]["repeated_random_tokens"]
    assert (repeats["sequences"], repeats["period"], repeats["seed"]) == (F.SEQUENCES, F.PERIOD, F.REPEAT_SEED)
    fresh = F.head_table(induction_model, doc["corpus"]["texts"])
    assert [(r["layer"], r["head"]) for r in fresh] == [(r["layer"], r["head"]) for r in doc["heads"]]
    for new, old in zip(fresh, doc["heads"]):
        for name in F.METRICS:
            assert old[name] == pytest.approx(new[name], abs=0.6 * 10**-F.DIGITS), (new["layer"], new["head"], name)
        assert old["top"][0][3] == pytest.approx(new["top"][0][3], abs=0.6 * 10**-F.DIGITS)
        for t, q, k, w in old["top"]:  # each stored cell holds the weight it says, in the text it names
            p = engine.trace(induction_model, doc["corpus"]["texts"][t]).pattern(new["layer"], new["head"])
            assert p[q, k] == pytest.approx(w, abs=0.6 * 10**-F.DIGITS)


# ---- the shipped tables ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", SHIPPED)
def test_shipped_table_schema_and_size(model_id: str) -> None:
    path = F.table_path(model_id)
    assert path.stat().st_size <= F.MAX_BYTES
    doc = F.shipped_table(model_id)
    assert doc["model"] == model_id
    corpus = F.corpus_for(model_id)
    assert doc["corpus"]["texts"] == list(corpus.texts) and len(corpus.texts) >= 200  # the generator remakes them
    assert doc["corpus"]["name"] == corpus.name and doc["corpus"]["description"]
    assert set(doc["settings"]["definitions"]) == set(F.METRICS)
    blocks = {"tiny-translator": ("encoder", "decoder", "cross")}.get(model_id, ("self",))
    keys = [(b, layer, h) for b in blocks for layer in range(doc_layers(doc, b)) for h in range(doc_heads(doc, b))]
    assert [(r["block"], r["layer"], r["head"]) for r in doc["heads"]] == keys
    repeats = model_id != "tiny-translator"
    for row in doc["heads"]:
        square = row["block"] != "cross"
        assert set(row) == {"block", "layer", "head", "top", *F.METRICS}
        for name in ("previous_token", "self", "mean_distance"):
            assert (row[name] is not None) == square
        for name in F.REPEAT_METRICS:
            assert (row[name] is not None) == repeats
        for name in ("previous_token", "self", "first_token", "sink", "induction", "duplicate_token"):
            assert row[name] is None or 0.0 <= row[name] <= 1.0
        assert row["entropy"] >= 0.0 and (row["mean_distance"] is None or row["mean_distance"] >= 0.0)
        assert 1 <= len(row["top"]) <= F.TOP and all(0 <= t < len(corpus.texts) for t, *_ in row["top"])


def doc_layers(doc: dict, block: str) -> int:
    return 1 + max(r["layer"] for r in doc["heads"] if r["block"] == block)


def doc_heads(doc: dict, block: str) -> int:
    return 1 + max(r["head"] for r in doc["heads"] if r["block"] == block)


def test_shipped_shapes_are_the_models() -> None:
    # layers × heads per block, read from the checkpoints' configs (MiniLM: 6 × 12, its card)
    for model_id in SHIPPED[1:]:
        cfg = json.loads((HEADS_DIR.parent / "checkpoints" / f"{model_id}.json").read_text())["model_config"]
        doc = json.loads((HEADS_DIR / f"{model_id}.json").read_text())
        for block in {row["block"] for row in doc["heads"]}:  # the translator: as many layers per block
            assert (doc_layers(doc, block), doc_heads(doc, block)) == (cfg["n_layers"], cfg["n_heads"])
    minilm = json.loads((HEADS_DIR / "minilm.json").read_text())
    assert (doc_layers(minilm, "self"), doc_heads(minilm, "self")) == (6, 12)


# ---- tracing given ids, and the progress callback ----------------------------------------------------------------
def test_trace_ids_equals_tracing_the_text(tiny_stories, minilm) -> None:
    for model in (tiny_stories, minilm):
        text = F.corpus_for(model.spec.id, n=1).texts[0]
        tr = engine.trace(model, text)
        again = F.trace_ids(model, tr.tokens.ids)
        assert again.tokens.ids == tr.tokens.ids
        for layer in range(tr.n_layers):
            np.testing.assert_allclose(again.pattern(layer), tr.pattern(layer), atol=1e-6)


def test_minilm_runs_are_cls_run_run_sep(minilm) -> None:
    seqs, lead, n = F.repeated_runs(minilm, sequences=3)
    tok = minilm.tokenizer
    assert lead == 0 and n == F.PERIOD
    for s in seqs:
        assert (s[0], s[-1], len(s)) == (tok.cls_token_id, tok.sep_token_id, 2 * n + 2)
        assert s[1 : n + 1] == s[n + 1 : 2 * n + 1] and not set(s[1:-1]) & set(tok.all_special_ids)


def test_progress_runs_to_one(induction_model) -> None:
    seen: list[float] = []
    F.head_table(
        induction_model,
        F.corpus_for(induction_model.spec.id, n=5).texts,
        sequences=2,
        batch=2,
        progress=lambda f, _: seen.append(f),
    )
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 3 + 2


def test_the_script_writes_the_table(tmp_path: Path, capsys) -> None:
    F.main(["induction-2l-attn-only", "--out", str(tmp_path)])
    written = json.loads(F.table_path("induction-2l-attn-only", tmp_path).read_text())
    shipped = F.shipped_table("induction-2l-attn-only")
    assert written["corpus"] == shipped["corpus"] and written["settings"] == shipped["settings"]
    assert len(written["heads"]) == len(shipped["heads"]) and "bytes" in capsys.readouterr().out
    assert F.shipped_table("no-such-model") is None


def test_a_model_without_heads_is_refused() -> None:
    with pytest.raises(engine.EngineError, match="no transformer attention heads"):
        F.head_table(engine.load("bahdanau-translator"), ["the red car is fast."])


def test_a_sentence_s_own_repeats_give_its_induction_and_duplicate_token_scores() -> None:
    """Explore's "doing its job?" reads the typed sentence: the hand-worked run's second copy (rows 4–6) has an
    earlier copy of its token (duplicate-token) and the token after that copy (induction); a sentence with no
    repeat has neither (NaN)."""
    from types import SimpleNamespace

    p = hand_patterns()

    def trace(ids):
        tokens = SimpleNamespace(ids=tuple(ids), special=(True,) + (False,) * (len(ids) - 1))
        return SimpleNamespace(pattern=lambda layer: p[:, : len(ids), : len(ids)], tokens=tokens)

    got = F.sentence_metrics(trace(IDS), 0)
    assert got["duplicate_token"] == pytest.approx([(0.2 + 0.1 + 0.15) / 3, 0.0])
    assert got["induction"] == pytest.approx([(0.5 + 0.6 + 0.7) / 3, 0.0])
    assert got["previous_token"] == pytest.approx(F.corpus_metrics(p, trace(IDS).tokens.special)["previous_token"])
    fresh = F.sentence_metrics(trace([1, 7, 8, 9]), 0)
    assert np.isnan(fresh["induction"]).all() and np.isnan(fresh["duplicate_token"]).all()


def test_the_induction_checkpoint_s_heads_light_up_on_a_repeated_sentence() -> None:
    """On the induction model's own letters, repeated: its card's induction head 1.2 scores high on the sentence and
    far above the layer's other heads, as over the corpus."""
    model = engine.load("induction-2l-attn-only")
    text = "qwertyuiop" * 2
    got = F.sentence_metrics(engine.trace(model, text), 1)
    assert got["induction"][2] > 0.5 and got["induction"][2] == max(got["induction"])
