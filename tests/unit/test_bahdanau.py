"""The GRU encoder-decoder with Bahdanau / Luong attention: the hooks show exactly the formula's tensors.

Fast tests use small random models; the last ones re-measure the shipped checkpoints when present.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.capture import capture, hook_point_names
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.corpora import translation_corpus
from engine.families.bahdanau import (
    RNNAttentionConfig,
    RNNAttentionModel,
    greedy_decode,
    load_model,
    record_steps,
    source_tokens,
)
from engine.records import CheckpointError, EmptyInputError, ModelSpec
from engine.registry import CHECKPOINTS
from engine.traces.alignment import AlignmentTrace
from engine.vocab import BOS_ID, PAD_ID, Vocab

torch.set_num_threads(1)

HOOKS = [
    "encoder.hook_states",
    "decoder.hook_state",
    "decoder.attn.hook_energies",
    "decoder.attn.hook_alignment",
    "decoder.attn.hook_context",
]
SRC = Vocab.from_words("the red car is fast . a dog sees".split())
TGT = Vocab.from_words("la voiture rouge est rapide . un chien voit".split())


def small_model(variant: str = "additive", seed: int = 0) -> RNNAttentionModel:
    cfg = RNNAttentionConfig(
        src_vocab=len(SRC),
        tgt_vocab=len(TGT),
        d_emb=8,
        d_enc=6,
        d_dec=10,
        d_attn=7,
        variant=variant,
        max_src=12,
        max_tgt=9,
    )
    torch.manual_seed(seed)
    return RNNAttentionModel(cfg).eval()


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.tensor([SRC.encode("the red car is fast .".split()), SRC.encode("a dog sees".split()) + [PAD_ID] * 3])
    tgt_in = torch.tensor(
        [[BOS_ID, *TGT.encode("la voiture rouge est".split())], [BOS_ID, *TGT.encode("un chien voit".split()), PAD_ID]]
    )
    return src, tgt_in


def run_hooks(model: RNNAttentionModel) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """Teacher-forced pass on a padded batch: ``(src, {hook: [B, T, …] stacked over steps}, h)``."""
    src, tgt_in = padded_batch()
    with torch.no_grad(), capture(model, names=["encoder.hook_states"]) as enc, record_steps(model) as steps:
        model(src, tgt_in)
    return src, {k: torch.stack(v, dim=1).double() for k, v in steps.items()}, enc["encoder.hook_states"].double()


def check_alignment_and_context(src, steps, h) -> None:
    e, alpha, c = (
        steps["decoder.attn.hook_energies"],
        steps["decoder.attn.hook_alignment"],
        steps["decoder.attn.hook_context"],
    )
    pad = (src == PAD_ID)[:, None, :].expand_as(e)
    assert torch.isneginf(e[pad]).all()
    assert (alpha[pad] == 0).all()  # exactly zero weight on padding
    assert torch.allclose(alpha, torch.softmax(e, dim=-1), atol=1e-6)
    assert torch.allclose(alpha.sum(-1), torch.ones_like(alpha[..., 0]), atol=1e-6)
    assert torch.allclose(c, torch.einsum("bts,bsd->btd", alpha, h), atol=1e-6)  # c(i) = Σ α h(j)


def test_hook_names_are_pinned():
    assert hook_point_names(small_model()) == HOOKS
    assert hook_point_names(small_model("dot")) == HOOKS


def test_additive_energies_follow_the_formula():
    model = small_model("additive")
    src, steps, h = run_hooks(model)
    attn = model.decoder.attn
    W, U, v = (m.weight.detach().double() for m in (attn.w, attn.u, attn.v))
    s_prev = steps["decoder.hook_state"]  # (B, T, d_dec)
    expected = torch.tanh((s_prev @ W.T)[:, :, None, :] + (h @ U.T)[:, None, :, :]) @ v[0]  # (B, T, S)
    real = (src != PAD_ID)[:, None, :].expand_as(expected)
    assert torch.allclose(steps["decoder.attn.hook_energies"][real], expected[real], atol=1e-5)
    check_alignment_and_context(src, steps, h)


def test_dot_energies_follow_the_formula():
    model = small_model("dot")
    src, steps, h = run_hooks(model)
    W_h = model.decoder.attn.w_h.weight.detach().double()  # (d_dec, 2·d_enc)
    expected = torch.einsum("btd,bsd->bts", steps["decoder.hook_state"], h @ W_h.T)  # s(i−1) · W_h h(j)
    real = (src != PAD_ID)[:, None, :].expand_as(expected)
    assert torch.allclose(steps["decoder.attn.hook_energies"][real], expected[real], atol=1e-5)
    check_alignment_and_context(src, steps, h)


def test_first_state_and_next_state():
    model = small_model()
    src, tgt_in = padded_batch()
    with torch.no_grad(), capture(model, names=["encoder.hook_states"]) as enc, record_steps(model) as steps:
        model(src, tgt_in)
    h = enc["encoder.hook_states"]
    d = model.cfg.d_enc
    back_first = h[:, 0, d:]  # ←h(1): the backward direction at the first word
    assert torch.allclose(steps["decoder.hook_state"][0], torch.tanh(model.decoder.init(back_first)), atol=1e-6)
    y = model.decoder.embed(tgt_in[:, 0])
    s1 = model.decoder.cell(torch.cat([y, steps["decoder.attn.hook_context"][0]], -1), steps["decoder.hook_state"][0])
    assert torch.allclose(steps["decoder.hook_state"][1], s1, atol=1e-6)


def test_padding_does_not_change_a_sentence():
    model = small_model()
    src, _ = padded_batch()
    alone = model.encode(src[1:, :3])
    batched = model.encode(src)
    assert torch.allclose(batched.h[1, :3], alone.h[0], atol=1e-6)
    assert torch.allclose(batched.s0[1], alone.s0[0], atol=1e-6)


def test_config_validation_and_round_trip():
    cfg = RNNAttentionConfig(variant="dot")
    assert RNNAttentionConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="d_enc.*variant"):
        RNNAttentionConfig(d_enc=0, variant="mlp")
    with pytest.raises(ValueError, match="unknown key"):
        RNNAttentionConfig.from_dict({"d_model": 4})


def save_small(tmp_path: Path, name: str, variant: str = "additive") -> RNNAttentionModel:
    model = small_model(variant)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    save_checkpoint(
        tmp_path,
        name,
        model,
        kind="rnn-attention",
        config=model.cfg.to_dict(),
        vocab={"source": SRC, "target": TGT},
        card={"family": "rnn-attention", "label": name},
    )
    return model


@pytest.mark.parametrize("variant", ["additive", "dot"])
def test_checkpoint_round_trip(tmp_path, variant):
    model = save_small(tmp_path, "rt", variant)
    loaded, vocab, document = load_checkpoint(tmp_path, "rt")
    assert document["kind"] == "rnn-attention" and vocab == {"source": SRC, "target": TGT}
    src, tgt_in = padded_batch()
    with torch.no_grad():
        assert torch.equal(model(src, tgt_in), loaded(src, tgt_in))


def test_checkpoint_without_two_vocabularies_is_refused(tmp_path):
    model = small_model()
    save_checkpoint(
        tmp_path,
        "one",
        model,
        kind="rnn-attention",
        config=model.cfg.to_dict(),
        vocab=SRC,
        card={"family": "rnn-attention"},
    )
    with pytest.raises(CheckpointError, match="source"):
        load_model(ModelSpec("one", "rnn-attention", "one", True), tmp_path, device=torch.device("cpu"))


@pytest.fixture()
def loaded(tmp_path):
    save_small(tmp_path, "small")
    return load_model(ModelSpec("small", "rnn-attention", "small", True), tmp_path, device=torch.device("cpu"))


def test_trace_matches_greedy_decoding_and_rows_sum_to_one(loaded):
    tr = loaded.adapter.trace(loaded, "The red car is fast.", causal=None, max_tokens=512)
    assert isinstance(tr, AlignmentTrace) and tr.variant == "additive"
    assert tr.source.strings == ("the", "red", "car", "is", "fast", ".")
    n_t, n_s = len(tr.target), len(tr.source)
    assert tr.alignment.shape == tr.energies.shape == (n_t, n_s)
    assert tr.decoder_states.shape == (n_t, 10) and tr.contexts.shape == (n_t, 12)
    assert tr.encoder_states.shape == (n_s, 12) and tr.output_probs.shape == (n_t,)
    np.testing.assert_allclose(tr.alignment.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(tr.contexts, tr.alignment @ tr.encoder_states, atol=1e-5)
    assert ((tr.output_probs > 0) & (tr.output_probs <= 1)).all()
    src = torch.tensor([list(tr.source.ids)])
    assert list(tr.target.ids) == greedy_decode(loaded.module, src)[0]
    assert tr.notices == ()
    assert not any(m._forward_hooks for m in loaded.module.modules())  # nothing left attached


def test_unknown_word_gives_a_notice_with_suggestions(loaded):
    tr = loaded.adapter.trace(loaded, "the red carr is fast", causal=True, max_tokens=512)
    assert (
        tr.source.strings[2] == "<unk>" and not tr.source.special[2]
    )  # an unknown word: the user's text, not a marker
    assert len(tr.notices) == 1 and "carr" in tr.notices[0] and "car" in tr.notices[0]


def test_empty_and_truncated_input(loaded):
    for text in ("", "   ", "\u200b"):
        with pytest.raises(EmptyInputError):
            loaded.adapter.trace(loaded, text, causal=None, max_tokens=512)
    tr = loaded.adapter.trace(loaded, "the red car is fast .", causal=None, max_tokens=3)
    assert len(tr.source) == 3 and any("only the first 3" in n for n in tr.notices)


def test_source_tokens_are_the_training_tokens():
    for src, _tgt in translation_corpus(400, seed=3, date_fraction=0.5):
        assert source_tokens(" ".join(src)) == src
    assert source_tokens("Saturday, 21 November 2026") == ["saturday", ",", "2", "1", "november", "2", "0", "2", "6"]


# ---- the shipped checkpoints ------------------------------------------------------------------------

SHIPPED = ["bahdanau-translator", "luong-translator"]  # in assets/checkpoints: a missing one fails


@pytest.fixture(scope="module")
def held_out_sample():
    from engine.training.recipes.bahdanau import held_out_pairs

    return held_out_pairs(seed=0)[::6]  # a fixed ~500-pair sample of the recipe's held-out side


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_checkpoint_matches_its_card(name, held_out_sample):
    import engine
    from engine.training.recipes.bahdanau import alignment_agreement, exact_match

    model = engine.load(name)
    assert model.spec.family == "rnn-attention"
    metrics = json.loads((CHECKPOINTS / f"{name}.json").read_text(encoding="utf-8"))["metadata"]["final_metrics"]
    with model.lock, torch.inference_mode():
        match = exact_match(model.module, held_out_sample, model.tokenizer)
        agreement = alignment_agreement(model.module, held_out_sample, model.tokenizer)
    assert match["all"] >= 0.95
    assert abs(match["all"] - metrics["held-out exact match (all)"]) <= 0.02
    assert abs(match["sentences"] - metrics["held-out exact match (sentences)"]) <= 0.02
    assert abs(agreement - metrics["alignment agreement with gold (held-out sentences)"]) <= 0.03


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_checkpoint_translates_and_aligns(name):
    import engine

    model = engine.load(name)
    tr = engine.trace(model, "the red car is fast .")
    assert tr.output_text == "la voiture rouge est rapide ."
    assert tr.variant == ("additive" if name == "bahdanau-translator" else "dot")
    np.testing.assert_allclose(tr.alignment.sum(-1), 1.0, atol=1e-5)
    looks_at = {t: tr.source.strings[int(row.argmax())] for t, row in zip(tr.target.strings, tr.alignment)}
    assert looks_at["rouge"] == "red" and looks_at["voiture"] == "car"  # the crossing of "red car"
    assert engine.trace(model, "The red car is fast").output_text == "la voiture rouge est rapide"
    assert engine.trace(model, "Saturday, 21 November 2026").output_text == "2026-11-21"
