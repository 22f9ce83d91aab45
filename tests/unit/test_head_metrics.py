"""Head metrics and head similarity on hand-made patterns with known answers, and against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from engine.analysis import metrics as M
from engine.analysis.similarity import cluster_order, coarsen, head_divergence, js_divergence

N = 6


def uniform(n: int = N) -> np.ndarray:
    return np.full((n, n), 1.0 / n)


def shift_previous(n: int = N) -> np.ndarray:
    """Row 0 looks at itself (nothing before it), every later row at the previous token."""
    p = np.zeros((n, n))
    p[0, 0] = 1.0
    p[np.arange(1, n), np.arange(n - 1)] = 1.0
    return p


def first_column(n: int = N) -> np.ndarray:
    p = np.zeros((n, n))
    p[:, 0] = 1.0
    return p


def random_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.gamma(0.5, size=shape)
    return x / x.sum(-1, keepdims=True)


# ---------------------------------------------------------------- single metrics


def test_uniform_pattern():
    p = uniform()
    assert M.entropy(p) == pytest.approx(math.log(N))
    assert M.entropy(p, bits=True) == pytest.approx(math.log2(N))
    # Σ_j |i − j| / n averaged over i, by a loop
    expected = sum(abs(i - j) for i in range(N) for j in range(N)) / N / N
    assert M.mean_distance(p) == pytest.approx(expected)
    assert M.broadness(p) == pytest.approx(1.0)
    assert M.offset_share(p, 0) == pytest.approx(1.0 / N)
    assert M.sink_share(p, [0, N - 1]) == pytest.approx(2.0 / N)
    labels, scores = M.label_heads(M.head_metrics(p, [0]))
    assert labels[()] == "broad" and scores[()] == pytest.approx(1.0)


def test_identity_pattern():
    p = np.eye(N)
    assert M.entropy(p) == pytest.approx(0.0)
    assert M.offset_share(p, 0) == pytest.approx(1.0)
    assert M.offset_share(p, -1) == pytest.approx(0.0)
    assert M.offset_share(p, 1) == pytest.approx(0.0)
    assert M.mean_distance(p) == pytest.approx(0.0)
    labels, scores = M.label_heads(M.head_metrics(p, [0]))
    assert labels[()] == "self" and scores[()] == pytest.approx(1.0)


def test_previous_token_pattern():
    p = shift_previous()
    assert M.offset_share(p, -1) == pytest.approx(1.0)
    assert M.entropy(p) == pytest.approx(0.0)
    # row 0 has distance 0, every other row distance 1
    assert M.mean_distance(p) == pytest.approx((N - 1) / N)
    labels, scores = M.label_heads(M.head_metrics(p, [0]))
    assert labels[()] == "previous-token" and scores[()] == pytest.approx(1.0)


def test_next_token_pattern():
    p = np.zeros((N, N))
    p[np.arange(N - 1), np.arange(1, N)] = 1.0
    p[N - 1, N - 1] = 1.0
    assert M.offset_share(p, 1) == pytest.approx(1.0)
    labels, _ = M.label_heads(M.head_metrics(p, [0]))
    assert labels[()] == "next-token"


def test_first_token_sink_pattern():
    p = first_column()
    assert M.sink_share(p, M.sink_positions([False] * N)) == pytest.approx(1.0)
    assert M.mean_distance(p) == pytest.approx(sum(range(N)) / N)
    labels, scores = M.label_heads(M.head_metrics(p, [0]))
    assert labels[()] == "first-token/sink" and scores[()] == pytest.approx(1.0)


def test_sink_positions_are_specials_and_the_first_token():
    assert M.sink_positions([True, False, False, True]) == (0, 3)
    assert M.sink_positions([False, False, True]) == (0, 2)
    assert M.sink_positions([]) == ()


# ---------------------------------------------------------------- unknown words are not sinks

# [CLS] the [UNK] cat [SEP]: rows sum to 1; the [UNK] column (index 2) carries a lot of weight
UNK_PATTERN = np.array(
    [
        [0.30, 0.05, 0.55, 0.05, 0.05],
        [0.10, 0.10, 0.70, 0.05, 0.05],
        [0.05, 0.05, 0.80, 0.05, 0.05],
        [0.10, 0.05, 0.70, 0.10, 0.05],
        [0.10, 0.05, 0.65, 0.05, 0.15],
    ]
)
UNK_TOKENS = ["[CLS]", "the", "[UNK]", "cat", "[SEP]"]


def _wordpiece(tmp_path):
    from transformers import BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]) + "\n")
    return BertTokenizerFast(vocab_file=str(vocab))


def _share_by_hand(pattern: np.ndarray, columns: list[int]) -> float:
    total = 0.0
    for i in range(pattern.shape[0]):
        total += sum(float(pattern[i, j]) for j in columns)
    return total / pattern.shape[0]


def test_an_unknown_word_in_the_middle_is_not_a_sink(tmp_path):
    from engine.text import special_flags

    tok = _wordpiece(tmp_path)
    ids = tok.convert_tokens_to_ids(UNK_TOKENS)
    assert ids[2] == tok.unk_token_id and tok.unk_token_id in tok.all_special_ids  # HF counts [UNK] as special
    flags = special_flags(tok, ids)
    assert flags == (True, False, False, False, True)
    sinks = M.sink_positions(flags)
    assert sinks == (0, 4)
    expected = _share_by_hand(UNK_PATTERN, [0, 4])  # [CLS] and [SEP] only: (0.35+0.15+0.10+0.15+0.25) / 5
    assert expected == pytest.approx(0.20)
    assert M.sink_share(UNK_PATTERN, sinks) == pytest.approx(expected, abs=1e-12)
    assert M.head_metrics(UNK_PATTERN, sinks)["sink"] == pytest.approx(expected, abs=1e-12)
    # counting [UNK] as a sink would have moved the share by 0.68 and relabelled the head
    assert _share_by_hand(UNK_PATTERN, [0, 2, 4]) - expected == pytest.approx(0.68)
    assert M.label_heads(M.head_metrics(UNK_PATTERN, sinks))[0][()] == "broad"
    assert M.label_heads(M.head_metrics(UNK_PATTERN, [0, 2, 4]))[0][()] == "first-token/sink"


def test_word_level_unk_is_not_special_but_the_markers_are():
    from engine.vocab import Vocab

    v = Vocab.from_words(["the", "cat"])
    toks = v.tokens_for_display(v.encode(["<bos>", "the", "zebra", "cat", "<eos>"]))
    assert toks.strings == ("<bos>", "the", "<unk>", "cat", "<eos>")
    assert toks.special == (True, False, False, False, True)
    assert M.sink_positions(toks.special) == (0, 4)


def test_an_unk_id_that_is_also_a_marker_stays_special():
    """GPT-2's ``<|endoftext|>`` is its unk, bos and eos token at once: still a marker."""
    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from engine.text import special_flags

    tok = build_tokenizer()
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    assert tok.unk_token_id == eot
    ids = [eot, *tok("a cat")["input_ids"], eot]
    assert special_flags(tok, ids) == (True,) + (False,) * (len(ids) - 2) + (True,)


def test_minilm_sink_share_ignores_unk(minilm):
    """A sentence with an emoji MiniLM maps to [UNK]: the sink share is the share on [CLS] + [SEP] only."""
    import engine

    tr = engine.trace(minilm, "I love 🙂 pizza")
    strings = list(tr.tokens.strings)
    assert strings == ["[CLS]", "i", "love", "[UNK]", "pizza", "[SEP]"]
    unk, last = strings.index("[UNK]"), len(strings) - 1
    assert tr.tokens.ids[unk] == minilm.tokenizer.unk_token_id
    assert tr.tokens.special == (True, False, False, False, False, True)
    sinks = M.sink_positions(tr.tokens.special)
    assert sinks == (0, last)  # [CLS] (also the first token) and [SEP]
    biggest = 0.0
    for layer in range(tr.n_layers):
        got = M.head_metrics(tr.pattern(layer), sinks)["sink"]
        for head in range(tr.n_heads):
            p = tr.pattern(layer, head).astype(np.float64)
            expected = _share_by_hand(p, [0, last])
            assert got[head] == pytest.approx(expected, abs=1e-6), (layer, head)
            biggest = max(biggest, _share_by_hand(p, [0, unk, last]) - expected)
    assert biggest > 0.05  # counting [UNK] would have changed some head's share visibly
    assert engine.trace(minilm, "🙂").tokens.special == (True, False, True)  # only [UNK]: still the user's text


def test_metrics_on_a_random_pattern_match_loops():
    rng = np.random.default_rng(0)
    p = random_rows(rng, (5, 5))
    h = np.mean([-sum(w * math.log(w) for w in row if w > 0) for row in p])
    d = np.mean([sum(p[i, j] * abs(i - j) for j in range(5)) for i in range(5)])
    prev = np.mean([p[i, i - 1] for i in range(1, 5)])
    nxt = np.mean([p[i, i + 1] for i in range(4)])
    assert M.entropy(p) == pytest.approx(h)
    assert M.mean_distance(p) == pytest.approx(d)
    assert M.offset_share(p, -1) == pytest.approx(prev)
    assert M.offset_share(p, 1) == pytest.approx(nxt)
    assert M.sink_share(p, [0, 4]) == pytest.approx(np.mean(p[:, 0] + p[:, 4]))


def test_causal_broadness_counts_only_allowed_keys():
    """A causal "uniform over the past" head is perfectly broad; row 0 (one key) is skipped."""
    p = np.tril(np.ones((N, N)))
    p /= p.sum(-1, keepdims=True)
    blocked = np.triu(np.ones((N, N), dtype=bool), k=1)
    assert M.broadness(p, blocked) == pytest.approx(1.0)
    assert M.broadness(p) < 1.0  # measured against all N keys it is not


def test_batched_metrics_match_per_head():
    rng = np.random.default_rng(1)
    p = random_rows(rng, (2, 3, 7, 7))
    out = M.head_metrics(p, [0, 6])
    for layer in range(2):
        for head in range(3):
            single = M.head_metrics(p[layer, head], [0, 6])
            for name, value in out.items():
                assert value.shape == (2, 3)
                assert value[layer, head] == pytest.approx(float(single[name]), nan_ok=True)


def test_cross_attention_position_metrics_are_nan():
    rng = np.random.default_rng(2)
    p = random_rows(rng, (2, 4, 5, 7))  # 5 target queries, 7 source keys
    out = M.head_metrics(p, [0, 6], square=False)
    for name in M.SQUARE_ONLY:
        assert np.isnan(out[name]).all()
    assert np.isfinite(out["entropy"]).all() and np.isfinite(out["sink"]).all()
    np.testing.assert_allclose(out["alignment"], 1.0 - out["broad"])
    labels, scores = M.label_heads(out)
    assert set(labels.ravel()) <= {"broad", "first-token/sink", "alignment"}
    assert np.isfinite(scores).all()
    with pytest.raises(ValueError):
        M.mean_distance(p)
    # a sharp word-to-word alignment (target i → source i + 1) is an alignment head, not a sink
    sharp = np.zeros((5, 7))
    sharp[np.arange(5), np.arange(1, 6)] = 1.0
    labels, scores = M.label_heads(M.head_metrics(sharp, [0, 6], square=False))
    assert labels[()] == "alignment" and scores[()] == pytest.approx(1.0)
    # alignment is n/a for self-attention, where the positional labels apply
    assert np.isnan(M.head_metrics(np.eye(4), [0])["alignment"])


def test_fully_blocked_rows_are_skipped():
    p = np.eye(4)
    p[2] = 0.0
    assert M.offset_share(p, 0) == pytest.approx(1.0)
    assert M.entropy(p) == pytest.approx(0.0)


# ---------------------------------------------------------------- similarity


def test_js_divergence_matches_scipy_and_is_bounded():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, q = random_rows(rng, (2, 9))
        ours = float(js_divergence(p, q))
        assert ours == pytest.approx(jensenshannon(p, q) ** 2, abs=1e-12)
        assert ours == pytest.approx(float(js_divergence(q, p)), abs=1e-15)
        assert 0.0 <= ours <= math.log(2) + 1e-12
    p = random_rows(rng, (9,))
    assert float(js_divergence(p, p)) == pytest.approx(0.0, abs=1e-12)
    # disjoint supports reach the bound ln 2
    assert float(js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0]))) == pytest.approx(math.log(2))


def test_head_divergence_is_the_row_mean_of_scipy():
    rng = np.random.default_rng(4)
    heads = random_rows(rng, (5, 6, 6))
    d = head_divergence(heads)
    assert d.shape == (5, 5)
    np.testing.assert_allclose(d, d.T, atol=0)
    np.testing.assert_allclose(np.diag(d), 0.0)
    for a in range(5):
        for b in range(5):
            ref = np.mean([jensenshannon(heads[a, i], heads[b, i]) ** 2 for i in range(6)])
            assert d[a, b] == pytest.approx(ref, abs=1e-10)
    assert (d >= 0).all() and (d <= math.log(2)).all()


def test_cluster_order_puts_identical_heads_together():
    rng = np.random.default_rng(5)
    base = random_rows(rng, (4, 8, 8))
    # heads 0, 5 and 2 are copies of one pattern; 1 and 6 of another
    heads = np.stack([base[0], base[1], base[0], base[2], base[3], base[0], base[1]])
    d = head_divergence(heads)
    assert d[0, 5] == pytest.approx(0.0) and d[1, 6] == pytest.approx(0.0)
    order = cluster_order(d)
    assert sorted(order.tolist()) == list(range(7))
    pos = {h: i for i, h in enumerate(order.tolist())}
    group = sorted(pos[h] for h in (0, 2, 5))
    assert group[-1] - group[0] == 2, order
    assert abs(pos[1] - pos[6]) == 1, order


def test_cluster_order_small_inputs():
    assert cluster_order(np.zeros((1, 1))).tolist() == [0]
    assert cluster_order(np.zeros((2, 2))).tolist() == [0, 1]


def test_coarsen_keeps_rows_distributions():
    rng = np.random.default_rng(6)
    p = random_rows(rng, (3, 100, 130))
    small, changed = coarsen(p, 64, 64)
    assert changed and small.shape == (3, 64, 64)
    np.testing.assert_allclose(small.sum(-1), 1.0, atol=1e-12)
    same, changed = coarsen(p[:, :10, :10] / p[:, :10, :10].sum(-1, keepdims=True))
    assert not changed and same.shape == (3, 10, 10)
