"""Toy tasks: answers re-derived independently from the token strings, ideal patterns, metrics, vocab."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.records import Tokens
from engine.training.tasks import (
    IGNORE,
    TASKS,
    Batch,
    Task,
    exact_match,
    make_task,
    pattern_score,
    token_accuracy,
)
from engine.vocab import SPECIALS, Vocab, tokenize

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def words(task: Task, row: torch.Tensor) -> list[str]:
    return task.vocab.decode(row.tolist())


def scored(batch: Batch, i: int) -> dict[int, int]:
    """``{position: target id}`` of row ``i``'s scored positions."""
    return {t: int(v) for t, v in enumerate(batch.targets[i]) if v != IGNORE}


def sample(name: str, batch_size: int = 32, seed: int = 0, **kw) -> tuple[Task, Batch]:
    task = make_task(name, **kw)
    return task, task.sample(batch_size, torch.Generator().manual_seed(seed))


# ---- vocabulary --------------------------------------------------------------------------------------


def test_vocab_specials_round_trip_and_unknown():
    v = Vocab.from_words(["the", "cat", "the", "<sep>", "sat"])
    assert v.tokens[:5] == ("<pad>", "<bos>", "<eos>", "<sep>", "<unk>") == SPECIALS
    assert v.tokens[5:] == ("the", "cat", "sat")
    assert len(v) == 8
    ids = v.encode(["the", "dog", "sat"])
    assert ids == [5, 4, 7]
    assert v.decode(ids) == ["the", "<unk>", "sat"]
    assert Vocab.from_dict(v.to_dict()) == v
    import json

    assert Vocab.from_dict(json.loads(json.dumps(v.to_dict()))) == v


def test_vocab_display_tokens_flag_specials():
    v = Vocab.from_words("abc")
    toks = v.tokens_for_display([1, 5, 6, 3, 4])
    assert isinstance(toks, Tokens)
    assert toks.strings == ("<bos>", "a", "b", "<sep>", "<unk>")
    assert toks.special == (True, False, False, True, False)  # <unk> stands for a word of the text


@pytest.mark.parametrize(
    "bad, message",
    [
        (("a", "b"), "first tokens"),
        ((*SPECIALS, "x", "x"), "appears twice"),
        ((*SPECIALS, ""), "non-empty"),
    ],
)
def test_vocab_rejects_bad_tables(bad, message):
    with pytest.raises(ValueError, match=message):
        Vocab(bad)


def test_vocab_decode_out_of_range():
    with pytest.raises(ValueError, match="outside this vocabulary"):
        Vocab.from_words("ab").decode([99])


def test_tokenize():
    assert tokenize("The cat sat, OK?") == ["the", "cat", "sat", ",", "ok", "?"]
    assert tokenize("didn't") == ["didn", "'", "t"]
    assert tokenize("  Le chat était là.\n") == ["le", "chat", "était", "là", "."]
    assert tokenize("") == []


# ---- generators, answers re-derived from the strings ---------------------------------------------------


@pytest.mark.parametrize("name, answer", [("copy", lambda xs: xs), ("reverse", lambda xs: xs[::-1]), ("sort", sorted)])
def test_question_answer_tasks(name, answer):
    length = 5
    task, batch = sample(name, length=length, n_symbols=7)
    assert batch.inputs.shape == batch.targets.shape == (32, 2 * length + 2) == (32, task.seq_len)
    for i in range(len(batch.inputs)):
        w = words(task, batch.inputs[i])
        assert w[0] == "<bos>" and w[length + 1] == "<sep>"
        question, reply = w[1 : length + 1], w[length + 2 :]
        assert all(s in LETTERS[:7] for s in question)
        assert reply == answer(question)
        # the model is scored on predicting each answer token from the position before it
        expected = {length + 1 + j: task.vocab.id(s) for j, s in enumerate(reply)}
        assert scored(batch, i) == expected


def test_previous_token_task():
    task, batch = sample("previous-token", length=9)
    assert batch.inputs.shape == (32, 10)
    for i in range(32):
        w = words(task, batch.inputs[i])
        assert w[0] == "<bos>"
        assert scored(batch, i) == {t: task.vocab.id(w[t - 1]) for t in range(1, 10)}


def test_induction_task():
    L = 6
    task, batch = sample("induction", batch_size=64, length=L, n_symbols=10)
    assert batch.inputs.shape == (64, 2 * L + 1)
    runs = set()
    for i in range(64):
        w = words(task, batch.inputs[i])
        body = [s for s in w[1:] if s != "<pad>"]
        m = len(body) // 2
        runs.add(m)
        assert w[0] == "<bos>" and w[1 + 2 * m :] == ["<pad>"] * (2 * L - 2 * m)
        assert body[:m] == body[m:] and len(set(body[:m])) == m
        # predictable: every token of the repeat after its first, from the token before it
        want = {}
        for t in range(m + 1, 2 * m):
            prev = w.index(w[t])  # the previous (first) occurrence of the current token
            want[t] = task.vocab.id(w[prev + 1])
        assert scored(batch, i) == want
    assert runs == {3, 4, 5, 6}  # min_length defaults to length // 2


def test_induction_probe_is_full_length():
    task = make_task("induction", length=5, n_symbols=9)
    w = task.vocab.decode(task.probe())
    assert w[1:6] == w[6:] and "<pad>" not in w


def test_symbol_names_beyond_z():
    task = make_task("copy", n_symbols=30)
    assert task.vocab.tokens[5:] == (*LETTERS, "a2", "b2", "c2", "d2")


def test_sampling_is_seeded():
    _, a = sample("reverse", seed=3)
    _, b = sample("reverse", seed=3)
    _, c = sample("reverse", seed=4)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.inputs, c.inputs)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_defaults(name):
    task = make_task(name)
    batch = task.sample(4, torch.Generator().manual_seed(0))
    assert batch.inputs.dtype == batch.targets.dtype == torch.long
    assert batch.inputs.shape == (4, task.seq_len)
    assert int(batch.inputs.max()) < len(task.vocab)
    assert batch.n_scored > 0
    probe = task.probe()
    assert probe == task.probe() and len(probe) == task.seq_len
    assert len(task.vocab.tokens_for_display(probe)) == task.seq_len


def test_make_task_errors_are_readable():
    with pytest.raises(ValueError, match="unknown task 'nope'; known tasks"):
        make_task("nope")
    with pytest.raises(ValueError, match="unexpected keyword"):
        make_task("copy", colour="red")
    with pytest.raises(ValueError, match="n_symbols must be an integer between 2 and 104"):
        make_task("copy", n_symbols=105)
    with pytest.raises(ValueError, match="length must be an integer"):
        make_task("reverse", length=0)
    with pytest.raises(ValueError, match="cannot exceed n_symbols"):
        make_task("induction", length=12, n_symbols=8)
    with pytest.raises(ValueError, match="min_length must be an integer between 2 and 6"):
        make_task("induction", length=6, min_length=7)


# ---- ideal patterns ----------------------------------------------------------------------------------


def _check_ideal(task: Task) -> tuple[np.ndarray, np.ndarray]:
    ideal, rows = task.ideal_pattern(), task.ideal_rows()
    n = task.seq_len
    assert ideal.shape == (n, n) and rows.shape == (n,)
    np.testing.assert_allclose(ideal.sum(axis=1), 1.0)
    assert np.all(np.triu(ideal, k=1) == 0), "a causal pattern cannot look ahead"
    np.testing.assert_array_equal(ideal[~rows], np.eye(n, dtype=np.float32)[~rows])
    return ideal, rows


def test_ideal_pattern_previous_token():
    task = make_task("previous-token", length=7)
    ideal, rows = _check_ideal(task)
    assert not rows[0] and rows[1:].all()
    for q in range(1, 8):
        assert ideal[q, q - 1] == 1.0
    assert task.ideal_pattern(20).shape == (20, 20)


@pytest.mark.parametrize("name", ["copy", "reverse", "induction"])
def test_ideal_pattern_points_at_the_answer(name):
    """At every scored row, the ideal key holds the token the target asks for."""
    full = {"min_length": 5} if name == "induction" else {}  # the ideal is for full-length runs
    task = make_task(name, length=5, n_symbols=9, **full)
    ideal, rows = _check_ideal(task)
    probe = task.probe()
    batch = task.sample(8, torch.Generator().manual_seed(1))
    for i in range(8):
        for q, target in scored(batch, i).items():
            assert rows[q]
            assert int(batch.inputs[i, int(ideal[q].argmax())]) == target
    # and the probe's answer rows read distinct symbols (the probe has no repeats)
    keys = [int(ideal[q].argmax()) for q in np.flatnonzero(rows)]
    assert len({probe[k] for k in keys}) == len(keys)


def test_ideal_pattern_reverse_by_hand():
    task = make_task("reverse", length=3)  # <bos> x1 x2 x3 <sep> x3 x2 x1
    assert task.ideal_keys() == {4: 3, 5: 2, 6: 1}
    ideal = task.ideal_pattern()
    assert [int(ideal[q].argmax()) for q in (4, 5, 6)] == [3, 2, 1]
    assert task.ideal_rows().tolist() == [False] * 4 + [True] * 3 + [False]


def test_sort_has_no_ideal_pattern_and_lengths_are_checked():
    assert make_task("sort").ideal_pattern() is None
    with pytest.raises(ValueError, match="defined for"):
        make_task("copy", length=3).ideal_pattern(5)


def test_pattern_score():
    ideal = np.eye(3, dtype=np.float32)
    assert pattern_score(ideal, ideal) == 1.0
    half = np.full((3, 3), 0.0, dtype=np.float32)
    half[:, 0] = 0.5
    half[:, 1] = 0.5
    assert pattern_score(half, ideal) == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert pattern_score(half, ideal, rows=np.array([False, False, True])) == 0.0


# ---- metrics on hand-built logits --------------------------------------------------------------------


def test_metrics_on_hand_built_logits():
    targets = torch.tensor([[IGNORE, 2, 3], [IGNORE, 1, 1], [IGNORE, IGNORE, 0]])
    batch = Batch(torch.zeros(3, 3, dtype=torch.long), targets)
    predicted = torch.tensor([[0, 2, 3], [4, 1, 2], [4, 4, 0]])  # row 0 right, row 1 one wrong, row 2 right
    logits = torch.nn.functional.one_hot(predicted, 5).float()  # (3, 3, 5)
    assert exact_match(logits, batch) == pytest.approx(2 / 3)
    assert token_accuracy(logits, batch) == pytest.approx(4 / 5)


def test_batch_shape_check():
    with pytest.raises(ValueError, match="inputs and targets"):
        Batch(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long))
