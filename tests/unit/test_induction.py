"""Induction heads: the scores of engine.analysis.induction on hand-built inputs, the attention-only model, the
task, and the shipped checkpoint's card re-measured from its weights."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import engine
from engine.analysis.induction import (
    EARLY,
    LATE,
    copying_score,
    icl_score,
    phase_change_step,
    prefix_matching_score,
    previous_token_score,
)
from engine.capture import hook_point_names
from engine.checkpoint import load_checkpoint
from engine.families.transformer.network import Transformer
from engine.registry import CHECKPOINTS
from engine.training.induction import (
    CONTEXT,
    RepeatedLettersTask,
    eval_batch,
    head_scores,
    induction_config,
    loss_by_position,
    make_model,
    ov_circuits,
    patterns,
    repeated_run,
    train_induction,
)
from engine.training.recipes.induction import NAME, SNAPSHOTS

# ---- the scores on hand-built inputs ------------------------------------------------------------------------


def test_prefix_matching_is_transformerlens_stripe_on_a_hand_built_pattern() -> None:
    # <bos> a b c a b c: period 3, 7 positions. TL: pattern.diagonal(offset=1 - 3) = entries (q, q - 2) for
    # q = 2 … 6, i.e. (2,0) (3,1) (4,2) (5,3) (6,4): 5 = n + 2 entries, averaged
    n = 3
    p = np.zeros((7, 7))
    p[np.arange(7), 0] = 1.0  # every query starts on <bos>
    p[2] = [0.5, 0.5, 0, 0, 0, 0, 0]  # (2,0) = 0.5
    p[3] = [0.2, 0.8, 0, 0, 0, 0, 0]  # (3,1) = 0.8: the second "a" reads the "b" after the first "a"
    p[4] = [0.1, 0.0, 0.9, 0, 0, 0, 0]  # (4,2) = 0.9
    p[5] = [0.4, 0.0, 0.0, 0.6, 0, 0, 0]  # (5,3) = 0.6
    p[6] = [0.0, 0.0, 0.0, 0.0, 1.0, 0, 0]  # (6,4) = 1.0
    expected = (0.5 + 0.8 + 0.9 + 0.6 + 1.0) / 5  # = 0.76
    assert prefix_matching_score(p, n) == pytest.approx(0.76)
    assert prefix_matching_score(p, n) == pytest.approx(expected)
    # batched over [head, q, k]: a second head that only reads <bos> scores 1/5 (only (2,0) is on <bos>)
    bos_only = np.zeros((7, 7))
    bos_only[:, 0] = 1.0
    assert prefix_matching_score(np.stack([p, bos_only]), n) == pytest.approx([0.76, 0.2])


def test_prefix_matching_rejects_a_pattern_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="has 7 positions, the pattern has 6"):
        prefix_matching_score(np.eye(6), 3)
    with pytest.raises(ValueError, match="square"):
        prefix_matching_score(np.ones((7, 6)), 3)


def test_previous_token_score_on_a_hand_built_pattern() -> None:
    # 4 positions; weights on (1,0) (2,1) (3,2): 1.0, 0.5, 0.25 → mean 0.5833…
    p = np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0], [0.25, 0.5, 0.25, 0], [0.5, 0, 0.25, 0.25]])
    assert previous_token_score(p) == pytest.approx((1.0 + 0.5 + 0.25) / 3)
    shifted = np.eye(5, k=-1)
    shifted[0, 0] = 1.0
    assert previous_token_score(shifted) == pytest.approx(1.0)
    assert previous_token_score(np.eye(5)) == pytest.approx(0.0)


def test_icl_score_on_a_hand_built_loss_curve() -> None:
    curve = np.full(64, np.nan)
    curve[: CONTEXT - 1] = 3.0
    curve[EARLY[0] : EARLY[1] + 1] = [3.2, 3.3, 3.1, 3.4]  # mean 3.25
    curve[LATE[0] : LATE[1] + 1] = [0.5, 0.4, 0.6, 0.5, 0.3, 0.7, 0.5]  # mean 0.5
    assert EARLY == (4, 7) and LATE == (56, 62)
    assert icl_score(curve) == pytest.approx(0.5 - 3.25)
    assert icl_score(np.full(64, 2.0)) == pytest.approx(0.0)
    assert icl_score(np.arange(10.0), early=(0, 1), late=(8, 9)) == pytest.approx(8.5 - 0.5)
    with pytest.raises(ValueError, match="outside a curve of 10"):
        icl_score(np.arange(10.0))


def test_copying_score_on_matrices_with_known_eigenvalues() -> None:
    assert copying_score(np.eye(4)) == pytest.approx(1.0)
    assert copying_score(-2 * np.eye(3)) == pytest.approx(-1.0)
    assert copying_score(np.diag([3.0, -1.0])) == pytest.approx(0.5)  # (3 − 1) / (3 + 1)
    # a rotation by 90°: eigenvalues ±i, real parts 0 → no preference; in another basis the same
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert copying_score(rotation) == pytest.approx(0.0, abs=1e-12)
    basis = np.array([[2.0, 1.0], [1.0, 1.0]])
    assert copying_score(basis @ np.diag([3.0, -1.0]) @ np.linalg.inv(basis)) == pytest.approx(0.5)
    assert copying_score(np.zeros((3, 3))) == 0.0


def test_phase_change_step_is_the_first_point_halfway() -> None:
    steps = np.array([0, 20, 40, 60, 80, 100])
    icl = np.array([0.0, -0.4, -0.5, -2.0, -3.0, -3.0])  # halfway: −1.5, first reached at step 60
    assert phase_change_step(steps, icl) == 60
    assert phase_change_step(steps, np.array([0.0, -0.3, -0.5, -0.6, -0.8, -0.9])) is None  # no sudden fall
    assert phase_change_step(steps, np.array([0.0, -0.3, -0.5, -0.6, -0.8, -0.9]), min_drop=0.5) == 40


# ---- the model and the task ---------------------------------------------------------------------------------


def test_an_attention_only_model_has_no_mlps_and_is_attention_plus_residual() -> None:
    model = make_model(0)
    names = {n for n, _ in model.named_parameters()}
    assert not any(".mlp." in n or ".ln2." in n for n in names)
    assert model.cfg.attn_only and model.cfg.n_layers == 2
    hooks = hook_point_names(model)
    assert "blocks.1.attn.hook_pattern" in hooks and "blocks.1.hook_resid_post" in hooks
    assert not [h for h in hooks if "mlp" in h or "resid_mid" in h]
    ids = repeated_run(2, 5, torch.Generator().manual_seed(0))
    with torch.no_grad():  # the forward pass by hand: x + Attn(LN1(x)) per block, then LN_f and W_U
        x = model.embed(ids)
        for block in model.blocks:
            bias = model.attention_bias(ids.shape[1], True)
            rope = (model.rope_cos[: ids.shape[1], None, :], model.rope_sin[: ids.shape[1], None, :])
            x = x + block.attn(block.ln1(x), bias, rope)
        expected = model.unembed(model.ln_final(x))
        assert torch.allclose(model(ids), expected, atol=1e-6)
        assert torch.allclose(model(ids, attn_impl="sdpa"), expected, atol=1e-5)


def test_the_task_repeats_a_run_of_letters_to_fill_the_context() -> None:
    task = RepeatedLettersTask()
    batch = task.sample(16, torch.Generator().manual_seed(3))
    assert batch.inputs.shape == (16, CONTEXT)
    for row, target in zip(batch.inputs.tolist(), batch.targets.tolist()):
        letters = row[1:]
        period = next(
            m
            for m in range(task.min_period, task.max_period + 1)
            if all(letters[i] == letters[i % m] for i in range(len(letters)))
        )
        assert row[0] == 1 and all(5 <= t < 31 for t in letters) and period <= task.max_period
        assert target[:-1] == row[1:] and target[-1] == -100
    words = task.vocab.decode(task.probe())
    assert words[0] == "<bos>" and words[1:13] == words[13:25] and all(len(w) == 1 for w in words[1:])


def test_ov_circuits_match_the_modules_run_on_one_hot_letters() -> None:
    model = make_model(1)
    with torch.no_grad():
        for norm in (model.ln_final, *(b.ln1 for b in model.blocks)):  # non-trivial gains
            norm.weight.copy_(torch.rand(model.cfg.d_model) + 0.5)
        for block in model.blocks:  # no biases: the circuit leaves them out
            block.attn.w_v.bias.zero_()
            block.attn.w_o.bias.zero_()
    layer, head, dh = 1, 2, model.cfg.d_head
    letters = torch.arange(5, 31)
    with torch.no_grad():
        block = model.blocks[layer]
        x = model.embed.weight[letters].double() * block.ln1.weight.double()
        v = torch.nn.functional.linear(x, block.attn.w_v.weight.double())  # (26, D)
        keep = torch.zeros(model.cfg.d_model, dtype=torch.float64)
        keep[head * dh : (head + 1) * dh] = 1.0
        out = torch.nn.functional.linear(v * keep, block.attn.w_o.weight.double())  # only this head's slice
        logits = torch.nn.functional.linear(out * model.ln_final.weight.double(), model.unembed.weight.double())
    np.testing.assert_allclose(ov_circuits(model, layer)[head], logits[:, letters].numpy(), rtol=1e-9, atol=1e-12)


def test_head_scores_read_the_captured_patterns() -> None:
    model = make_model(2)
    ids = repeated_run(4, 20, torch.Generator().manual_seed(4321))
    p = patterns(model, ids).mean(axis=1)  # [L, H, T, T]
    scores = head_scores(model, batch_size=4)
    for layer in range(2):
        for head in range(4):
            stripe = [p[layer, head, q, q - 19] for q in range(19, 41)]
            assert scores.prefix_matching[layer, head] == pytest.approx(np.mean(stripe))
            assert scores.previous_token[layer, head] == pytest.approx(
                np.mean([p[layer, head, i, i - 1] for i in range(1, 41)])
            )


def test_a_few_training_steps_yield_points_with_every_score() -> None:
    updates = list(train_induction(50, 1e-2, 0, every=25, batch_size=4))
    points = updates[-1].points
    assert [p.step for p in points] == [0, 25, 50] and updates[-1].final
    assert all(p.scores.prefix_matching.shape == (2, 4) and p.probe.shape == (2, 4, 25, 25) for p in points)
    assert updates[-1].fraction == 1.0 and "ICL score" in updates[-1].text
    with pytest.raises(ValueError, match="^Steps must be a whole number from 50"):
        next(train_induction(10, 1e-2, 0))


# ---- the shipped checkpoint ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    model, vocab, document = load_checkpoint(CHECKPOINTS, NAME)
    return model, vocab, document


def test_the_card_is_re_measured_from_the_checkpoint(shipped) -> None:
    model, vocab, document = shipped
    card = document["metadata"]["final_metrics"]
    assert isinstance(model, Transformer) and model.cfg == induction_config()
    assert vocab.tokens[5:] == tuple("abcdefghijklmnopqrstuvwxyz")
    icl = icl_score(loss_by_position(model, eval_batch()))
    assert icl == pytest.approx(card["in-context-learning score (nats)"], abs=2e-3)
    assert icl < -2.5  # it learned from context: late letters cost far less than early ones
    scores = head_scores(model)
    prev_layer, prev_head = map(int, card["previous-token head"].split("."))
    ind_layer, ind_head = map(int, card["induction head"].split("."))
    assert (prev_layer, ind_layer) == (0, 1)
    assert scores.previous_token[0, prev_head] == pytest.approx(card["previous-token score"], abs=2e-3)
    assert scores.prefix_matching[1, ind_head] == pytest.approx(card["prefix-matching score"], abs=2e-3)
    assert scores.copying[1, ind_head] == pytest.approx(card["copying score"], abs=2e-3)
    assert np.argmax(scores.prefix_matching[1]) == ind_head and np.argmax(scores.previous_token[0]) == prev_head
    assert scores.prefix_matching[1, ind_head] > 0.5 and scores.copying[1, ind_head] > 0.5


def test_the_snapshot_file_agrees_with_the_card(shipped) -> None:
    _model, _vocab, document = shipped
    card = document["metadata"]["final_metrics"]
    doc = json.loads((SNAPSHOTS / f"{NAME}.json").read_text(encoding="utf-8"))
    curves = doc["curves"]
    assert doc["phase_change_step"] == card["phase change step"]
    assert doc["phase_change_step"] == phase_change_step(np.array(curves["step"]), np.array(curves["icl"]))
    assert doc["after"]["step"] == curves["step"][-1] == document["metadata"]["steps"]
    assert doc["before"]["step"] < doc["phase_change_step"]
    assert doc["after"]["icl"] == pytest.approx(card["in-context-learning score (nats)"], abs=2e-3)
    assert doc["before"]["icl"] > doc["after"]["icl"] + 1.5  # the change is visible between the two moments
    ind_head = int(card["induction head"].split(".")[1])
    after = doc["after"]["scores"]["prefix_matching"][1][ind_head]
    before = doc["before"]["scores"]["prefix_matching"][1][ind_head]
    assert after == pytest.approx(card["prefix-matching score"], abs=2e-3) and before < after - 0.3
    # the curve by position: ln 26 early, far lower late (after), and the ICL score is its windows' difference
    curve = np.array([np.nan if v is None else v for v in doc["after"]["loss_by_position"]])
    assert icl_score(curve) == pytest.approx(doc["after"]["icl"], abs=1e-3)
    assert np.nanmean(curve[EARLY[0] : EARLY[1] + 1]) == pytest.approx(math.log(26), abs=0.15)


def test_the_shipped_model_loads_and_traces_letters_as_tokens() -> None:
    model = engine.load(NAME, device="cpu")
    trace = engine.trace(model, "qfkzw qfkzw")
    assert list(trace.tokens.strings) == ["<bos>", *"qfkzwqfkzw"]
    assert trace.n_layers == 2 and trace.n_heads == 4 and not trace.notices
    pattern = trace.pattern(1)  # [H, T, T]: the induction head reads the letter after the first copy
    doc = json.loads((SNAPSHOTS / f"{NAME}.json").read_text(encoding="utf-8"))
    head = int(np.argmax(doc["after"]["scores"]["prefix_matching"][1]))
    stripe = [pattern[head, q, q - 4] for q in range(6, 11)]  # second-copy letters → key after the first copy
    assert np.mean(stripe) > 0.5
