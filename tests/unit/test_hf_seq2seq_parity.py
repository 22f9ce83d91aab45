"""Pretrained encoder-decoders (T5, BART, Marian) traced through ``ap_capture`` equal their eager attention.

Each family is a tiny random model with a Metaspace BPE tokenizer trained offline, saved with
``save_pretrained`` and loaded through ``engine.load(folder)``. The reference is a second copy loaded
with ``attn_implementation="eager"``, run on the same source and decoder input with
``output_attentions=True``: its ``encoder_attentions``, ``decoder_attentions`` and
``cross_attentions`` must equal the engine's three traces for every layer and head. Decoding is
checked against transformers' own ``generate`` (greedy) and for repeatability (sampled).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.generation import DecodeSettings, candidate_probs
from engine.records import ModelUnavailableError
from engine.traces.seq2seq import Seq2SeqTrace
from tests.seq2seq_models import MAX_POS, save_tiny_seq2seq

ATOL = 1e-5
PAD, EOS = 0, 1  # the tiny models' pad and end ids (tests/seq2seq_models.py)
KINDS = ("t5", "bart", "marian")
SENTENCES = {
    "short": "the cat sat on the mat",
    "odd": "Héllo <b>wörld</b> 🙂 — le chat!",
    "long": " ".join(["the house is small and le chat est assis sur le tapis"] * 8),  # cut at the limit
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_seq2seq")
    return {kind: save_tiny_seq2seq(kind, root / kind) for kind in KINDS}


@pytest.fixture(scope="module")
def loaded(folders):
    return {kind: engine.load(str(folders[kind])) for kind in KINDS}


@pytest.fixture(scope="module")
def eager(folders):
    from transformers import AutoModelForSeq2SeqLM

    return {
        kind: AutoModelForSeq2SeqLM.from_pretrained(folders[kind], attn_implementation="eager").eval() for kind in KINDS
    }


def _reference(module, tr: Seq2SeqTrace):
    with torch.no_grad():
        return module(
            input_ids=torch.tensor([list(tr.source.ids)]),
            decoder_input_ids=torch.tensor([list(tr.target.ids)]),
            output_attentions=True,
        )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sentence", sorted(SENTENCES))
def test_three_attentions_equal_eager(loaded, eager, kind, sentence):
    tr = engine.trace(loaded[kind], SENTENCES[sentence], max_tokens=MAX_POS)
    assert isinstance(tr, Seq2SeqTrace) and tr.encoder.family == "encoder-decoder"
    if sentence == "long":
        assert len(tr.source) == MAX_POS and tr.encoder.truncated
    ref = _reference(eager[kind], tr)
    blocks = {"encoder": ref.encoder_attentions, "decoder": ref.decoder_attentions, "cross": ref.cross_attentions}
    for name, theirs in blocks.items():
        mine = getattr(tr, name)
        assert mine.n_layers == len(theirs)
        for layer in range(mine.n_layers):
            np.testing.assert_allclose(
                mine.pattern(layer), theirs[layer][0].numpy(), atol=ATOL, err_msg=f"{kind} {name} layer {layer}"
            )
        # the chunked overview (what long inputs draw) agrees with the exact pattern
        np.testing.assert_allclose(mine.overview(mine.n_layers - 1, 1), theirs[-1][0, 1].numpy(), atol=ATOL)
    assert tr.decoder.causal and not tr.encoder.causal and not tr.cross.causal
    assert tr.cross.tokens is tr.target and tr.cross.key_tokens is tr.source


def test_t5_relative_bias_is_captured_and_shared(loaded):
    tr = engine.trace(loaded["t5"], SENTENCES["short"], max_tokens=MAX_POS)
    enc, dec = tr.encoder, tr.decoder
    assert enc.scales == (1.0, 1.0)  # T5 does not scale QKᵀ; the bias carries the positions
    assert enc.relative_bias[0] is enc.relative_bias[1]  # one bias for the whole stack, one array
    assert dec.relative_bias and not tr.cross.relative_bias  # cross-attention has none
    bias = enc.bias(0)  # Toeplitz: depends on j − i only
    n = enc.n_queries
    for d in range(-(n - 1), n):
        diagonal = np.diagonal(bias, offset=d, axis1=1, axis2=2)
        assert np.allclose(diagonal, diagonal[:, :1])
    # equal to T5's own bias for these lengths (buckets: far keys share one)
    attention = loaded["t5"].module.encoder.block[0].layer[0].SelfAttention
    with torch.no_grad():
        want = attention.compute_bias(n, n, device=loaded["t5"].device)[0].cpu().numpy()
    np.testing.assert_allclose(bias, want, atol=1e-6)


def _generate(module, src_ids, n_new: int) -> list[int]:
    """transformers' own greedy ``generate``: the decoder start token and up to ``n_new`` tokens.

    A fresh cache is passed because ``generate`` sizes its own from the encoder's layer count, which a T5
    with a deeper decoder (ours: 2 and 3) overflows.
    """
    from transformers import DynamicCache, EncoderDecoderCache

    with torch.no_grad():
        out = module.generate(
            torch.tensor([list(src_ids)]),
            do_sample=False,
            num_beams=1,
            max_new_tokens=n_new,
            past_key_values=EncoderDecoderCache(DynamicCache(), DynamicCache()),
        )
    return out[0].tolist()


def _assert_greedy_equals_generate(model, reference, sentence: str, n_new: int = 10) -> list[int]:
    """The engine's greedy target equals ``generate``'s output (less a final end token, as the trace keeps it)."""
    tr = engine.generate(model, sentence, DecodeSettings(max_new_tokens=n_new))
    theirs = _generate(reference, tr.source.ids, n_new)
    assert list(tr.target.ids) == (theirs[:-1] if theirs[-1] == EOS else theirs)
    return theirs


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sentence", sorted(SENTENCES))
def test_greedy_decoding_equals_generate(loaded, eager, kind, sentence):
    """The config's own rules included: BART and Marian force their last token (``forced_eos_token_id``)."""
    _assert_greedy_equals_generate(loaded[kind], eager[kind], SENTENCES[sentence])


def _pad_after_other_tokens(monkeypatch, module) -> None:
    """Make the pad token the best next token after any other token, so pad and other tokens alternate."""
    real = module.forward

    def forward(*args, **kwargs):
        out = real(*args, **kwargs)
        previous = kwargs["decoder_input_ids"]  # (1, m): the token each row of logits follows
        out.logits[..., PAD] += 1e3 * (previous != PAD).to(out.logits.dtype)
        return out

    monkeypatch.setattr(module, "forward", forward)


@pytest.mark.parametrize("kind", ["t5", "bart"])
def test_greedy_writes_pad_where_generate_does(loaded, eager, kind, monkeypatch):
    """Nothing in T5's or BART's config forbids the pad token: when the scores make it best, it is written."""
    for module in (loaded[kind].module, eager[kind]):
        _pad_after_other_tokens(monkeypatch, module)
    theirs = _assert_greedy_equals_generate(loaded[kind], eager[kind], SENTENCES["short"])
    assert theirs[1:].count(PAD) >= 3 and len(set(theirs[1:])) > 1


def test_marian_bad_words_keep_pad_out(folders, tmp_path, monkeypatch):
    """Marian checkpoints ban their pad token with ``bad_words_ids: [[pad]]``; the engine reads the ban."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    reference = AutoModelForSeq2SeqLM.from_pretrained(folders["marian"], attn_implementation="eager").eval()
    reference.generation_config.bad_words_ids = [[PAD]]
    reference.generation_config.forced_eos_token_id = EOS  # as opus-mt: the forced last token is the end token
    reference.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(folders["marian"]).save_pretrained(tmp_path)
    model = engine.load(str(tmp_path))
    for module in (model.module, reference):
        _pad_after_other_tokens(monkeypatch, module)
    theirs = _assert_greedy_equals_generate(model, reference, SENTENCES["short"])
    assert PAD not in theirs[1:] and theirs[-1] == EOS


def test_sampled_decoding_is_seeded_and_stays_in_top_k(loaded, eager):
    from engine.families.hf_seq2seq import generation_rules

    settings = DecodeSettings(max_new_tokens=8, sample=True, temperature=1.5, top_k=3, seed=11)
    a = engine.generate(loaded["marian"], SENTENCES["short"], settings)
    b = engine.generate(loaded["marian"], SENTENCES["short"], settings)
    assert a.target.ids == b.target.ids and "sampled" in " ".join(a.notices)
    # each generated token is among the 3 most likely after what came before, under the config's rules
    ref = _reference(eager["marian"], a)
    rules = generation_rules(eager["marian"].generation_config, [EOS], 8, torch.device("cpu"))
    ids = list(a.target.ids)
    for step in range(1, len(ids)):
        scores = rules(torch.tensor([ids[:step]]), ref.logits[:, step - 1].float())
        assert candidate_probs(scores[0].numpy(), settings)[ids[step]] > 0


def test_unsupported_architecture_names_what_is_supported(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "pegasus_x"}))
    with pytest.raises(ModelUnavailableError, match="supported here: .*bart.*marian.*t5"):
        engine.load(str(tmp_path))


def test_positional_page_says_how_t5_and_rope_models_encode_positions(loaded, tmp_path):
    from engine.analysis.positional import position_table
    from engine.records import EngineError

    with pytest.raises(EngineError, match=r"learned bias b\(j − i\)"):
        position_table(loaded["t5"])
    bart = position_table(loaded["bart"])  # learned, after fairseq's offset of 2 rows
    weight = loaded["bart"].module.model.encoder.embed_positions.weight.detach().cpu().numpy()
    assert bart.kind == "learned" and bart.values.shape == (MAX_POS, 32)
    np.testing.assert_array_equal(bart.values, weight[2:])
    marian = position_table(loaded["marian"])  # fixed sinusoids: rebuilt by transformers' own init
    assert marian.kind == "sinusoidal"
    # the formula, as Marian lays it out: sines in the first half of the dimensions, cosines in the second
    pos, j = np.arange(MAX_POS)[:, None], np.arange(16)[None, :]
    angle = pos / np.power(10000.0, 2 * j / 32)
    np.testing.assert_allclose(marian.values, np.concatenate([np.sin(angle), np.cos(angle)], axis=1), atol=1e-5)
