"""A config vocabulary larger than the tokenizer's (Qwen2.5, T5 and many Hub checkpoints pad theirs).

The ids at and above ``len(tokenizer)`` have no token: generation and the next-token candidates never
pick them, and if one is shown it reads as a placeholder instead of crashing the display. The models
are tiny random ones whose weights make an id without a token the best by far at every step, so a
decoder that did not leave those ids out would write one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.decoding import generated_text
from engine.generation import DecodeSettings, TokenPicker, named_only
from engine.text import display_tokens, named_ids, unnamed_token
from tests.hf_helpers import tiny_llama

PROMPT = "The cat sat on the mat"
PADDING = 64  # ids in the config beyond the tokenizer
UNNAMED = 37  # the padded id (counted from len(tokenizer)) the weights favour


@pytest.fixture(scope="module")
def tok():
    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="module")
def padded_llama(tok, tmp_path_factory):
    """A tiny random Llama whose config counts 64 ids more than its tokenizer, the id ``len(tok) + 37`` made best.

    Embedding dimension 0 is 100 for every token, so after the final RMSNorm that dimension is a large
    positive constant; the lm_head row of the favoured id reads it with weight 10 (a score near 55, the
    other rows' scores are a few units).
    """
    import transformers as tf

    cfg = tiny_llama(len(tok) + PADDING, tok.eos_token_id)
    torch.manual_seed(0)
    net = tf.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        net.model.embed_tokens.weight[:, 0] = 100.0
        net.lm_head.weight[len(tok) + UNNAMED, 0] = 10.0
    folder = tmp_path_factory.mktemp("padded_llama") / "llama"
    net.save_pretrained(folder)
    tok.save_pretrained(folder)
    return engine.load(str(folder))


def _logits(model, ids) -> np.ndarray:
    """The next-token scores of ``ids`` from a full forward pass, over every id of the config."""
    with torch.no_grad():
        out = model.module(input_ids=torch.tensor([list(ids)], device=model.device), use_cache=False)
    return out.logits[0, -1].float().cpu().numpy()


# ---- the pieces ------------------------------------------------------------------------------------
def test_unnamed_ids_show_as_a_placeholder(tok):
    n = named_ids(tok)
    assert n == len(tok) and unnamed_token(n + 5) == f"<id {n + 5}>"
    for byte_level in (True, False):
        shown = display_tokens(tok, [tok.eos_token_id, 44, n, n + 63], byte_level)
        assert shown.strings[2:] == (f"<id {n}>", f"<id {n + 63}>")
        assert shown.strings[1] == "L" and shown.special == (True, False, False, False)


def test_picker_never_picks_an_unnamed_id():
    logits = np.array([0.5, 2.0, 1.0, 50.0, 40.0])  # ids 3 and 4 have no token
    np.testing.assert_array_equal(named_only(logits, 3), [0.5, 2.0, 1.0, -np.inf, -np.inf])
    assert TokenPicker(DecodeSettings(), n_named=3)(logits) == 1
    assert TokenPicker(DecodeSettings())(logits) == 3  # without a tokenizer bound every id counts
    for seed in range(20):
        settings = DecodeSettings(sample=True, temperature=5.0, seed=seed)
        assert TokenPicker(settings, n_named=3)(logits) < 3


# ---- a decoder -------------------------------------------------------------------------------------
def test_the_weights_favour_an_unnamed_id(padded_llama, tok):
    """Without leaving them out, every pick would be the id without a token (the tests below mean something)."""
    assert padded_llama.module.config.vocab_size == len(tok) + PADDING
    ids = tok(PROMPT)["input_ids"]
    assert int(np.argmax(_logits(padded_llama, ids))) == len(tok) + UNNAMED


def test_greedy_writes_the_best_named_token(padded_llama, tok):
    tr = engine.generate(padded_llama, PROMPT, DecodeSettings(max_new_tokens=8))
    ids = list(tr.tokens.ids)
    assert len(ids) - tr.generated_from == 8
    for t in range(tr.generated_from, len(ids)):
        z = _logits(padded_llama, ids[:t])
        assert int(np.argmax(z)) == len(tok) + UNNAMED  # what an unguarded argmax would write
        assert ids[t] == int(np.argmax(z[: len(tok)]))
    assert all(isinstance(s, str) and not s.startswith("<id ") for s in tr.tokens.strings)


@pytest.mark.parametrize("seed", range(5))
def test_sampling_never_writes_an_unnamed_id(padded_llama, tok, seed):
    settings = DecodeSettings(max_new_tokens=8, sample=True, temperature=1.5, seed=seed)
    tr = engine.generate(padded_llama, PROMPT, settings)
    new = tr.tokens.ids[tr.generated_from :]
    assert len(new) == 8 and max(new) < len(tok)
    _prompt, rest = generated_text(padded_llama, tr)
    assert rest and "<id " not in "".join(tr.tokens.strings)


def test_next_token_candidates_leave_unnamed_ids_out(padded_llama, tok):
    from engine.analysis.ablation import ablate
    from engine.analysis.next_token import next_token_logits, probabilities

    nt = next_token_logits(padded_llama, PROMPT)
    assert max(nt.top_ids) < len(tok) and all(isinstance(s, str) for s in nt.top_tokens)
    p = probabilities(nt.logits, 0.7)
    assert np.all(p[len(tok) :] == 0) and abs(p.sum() - 1) < 1e-9
    assert nt.top_ids[0] == int(np.argmax(nt.logits))
    result = ablate(padded_llama, PROMPT, [(0, 1)])
    assert max(result.top_ids) < len(tok) and np.isfinite(result.kl) and np.isfinite(result.tv)


# ---- an encoder-decoder ----------------------------------------------------------------------------
def test_seq2seq_never_writes_an_unnamed_id(tmp_path, monkeypatch):
    """A T5 whose config counts 16 ids more than its tokenizer, with one of them made the best every step."""
    from tests.seq2seq_models import module, tokenizer

    tok = tokenizer("t5")
    torch.manual_seed(0)
    net = module("t5", len(tok) + 16)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.3)
    net.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    model = engine.load(str(tmp_path))
    real, favoured = model.module.forward, len(tok) + 3

    def favour_unnamed(*args, **kwargs):
        out = real(*args, **kwargs)
        out.logits[..., favoured] += 1e3
        return out

    monkeypatch.setattr(model.module, "forward", favour_unnamed)
    for settings in (DecodeSettings(max_new_tokens=6), DecodeSettings(max_new_tokens=6, sample=True, seed=2)):
        tr = engine.generate(model, "the cat sat on the mat", settings)
        assert len(tr.target) == 7 and max(tr.target.ids) < len(tok)
