"""The engine's lazy attention equals the model's own eager ``output_attentions``.

Every Hugging Face family the engine supports is built here as a tiny random model, saved with
``save_pretrained`` (plus a tokenizer), loaded through ``engine.load(folder)``, and compared with a
*separate* copy loaded by transformers with ``attn_implementation="eager"``. The engine runs its
models through ``ap_capture`` (transformers' SDPA, recording each attention call) and recomputes
patterns from the recorded Q/K/V and scale, so equality here shows that the capture, the scale, the
mask and the softmax are all the model's own. The models come from ``tests/hf_helpers.py``; their
patterns are checked to be far from uniform.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from tests.hf_helpers import ATOL, KINDS, MAX_POS, additive_causal_mask, assert_equals_eager, engine_and_eager, family

TRUNC_AT = 24
CUDA_Z_ATOL = 5e-5  # z from a CUDA trace against the CPU reference: float32 GPU kernels sum in a different order

SHORT = "The cat sat on the mat."
ODD = "Héllo, wörld!! — naïve café… 東京 🙂 (x+y)² = z; «quotes» e\u0301 שלום <b>&amp;</b>"
LONG = "The quick brown fox jumps over the lazy dog, and the cat watches it. " * 6
SENTENCES = {"short": SHORT, "odd": ODD}

# where the attention output projection (input = concatenated z of all heads) lives, per layer
OUT_PROJ = {
    "bert": "attention.output.dense",
    "roberta": "attention.output.dense",
    "electra": "attention.output.dense",
    "distilbert": "attention.out_lin",
    "gpt2": "attn.c_proj",
}


@dataclass
class Pair:
    kind: str
    path: Path
    model: object  # engine.model.Model (ap_capture, shared)
    ref: torch.nn.Module  # a separate eager copy
    tok: object  # a separately loaded tokenizer

    @property
    def family(self) -> str:
        return family(self.kind)

    @property
    def decoder(self) -> bool:
        return self.family == "gpt2"

    def layers(self, module=None):
        module = module if module is not None else self.ref
        return {
            "bert": lambda m: m.encoder.layer,
            "roberta": lambda m: m.encoder.layer,
            "electra": lambda m: m.encoder.layer,
            "distilbert": lambda m: m.transformer.layer,
            "gpt2": lambda m: m.transformer.h,
        }[self.family](module)

    def pos_table(self) -> torch.Tensor:
        if self.decoder:
            return self.ref.transformer.wpe.weight
        return self.ref.embeddings.position_embeddings.weight


_PAIRS: dict[str, Pair] = {}


def _pair(kind: str, folders: dict[str, Path]) -> Pair:
    if kind not in _PAIRS:
        from transformers import AutoTokenizer

        model, ref = engine_and_eager(kind, folders)  # loaded once for the session, as the capture tests have them
        assert model.module.config is not ref.config  # never share a config with the reference
        _PAIRS[kind] = Pair(kind, folders[kind], model, ref, AutoTokenizer.from_pretrained(folders[kind]))
    return _PAIRS[kind]


@pytest.fixture(params=KINDS)
def pair(request, tiny_hf_folders) -> Pair:
    return _pair(request.param, tiny_hf_folders)


@pytest.fixture(scope="module")
def bert(tiny_hf_folders) -> Pair:
    return _pair("bert", tiny_hf_folders)


@pytest.fixture(scope="module")
def gpt2(tiny_hf_folders) -> Pair:
    return _pair("gpt2", tiny_hf_folders)


@pytest.fixture(scope="module")
def minilm_ref(minilm_path):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval(), AutoTokenizer.from_pretrained(
        minilm_path
    )


def state_checksum(module: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def no_hooks_left(module: torch.nn.Module) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in module.modules())


# ---- tiny HF models: parity ------------------------------------------------------------------
@pytest.mark.parametrize("sentence", sorted(SENTENCES))
def test_pattern_equals_eager_output_attentions(pair: Pair, sentence: str) -> None:
    text = SENTENCES[sentence]
    tr = engine.trace(pair.model, text)
    expected_ids = pair.tok(unicodedata.normalize("NFC", text))["input_ids"]  # the engine NFC-normalises
    assert list(tr.tokens.ids) == expected_ids
    assert not tr.truncated and tr.n_input_tokens == len(expected_ids)
    assert tr.causal is pair.decoder
    assert_equals_eager(tr, pair.ref, peaked=True)


def test_truncated_at_max_tokens_matches_reference(pair: Pair) -> None:
    full = pair.tok(LONG)["input_ids"]
    assert len(full) > TRUNC_AT
    tr = engine.trace(pair.model, LONG, max_tokens=TRUNC_AT)
    assert tr.truncated
    assert len(tr.tokens) == TRUNC_AT
    assert tr.n_input_tokens == len(full) > TRUNC_AT
    assert any(str(len(full)) in note and str(TRUNC_AT) in note for note in tr.notices), tr.notices
    expected = pair.tok(LONG, truncation=True, max_length=TRUNC_AT)["input_ids"]
    assert list(tr.tokens.ids) == expected
    if not pair.decoder:  # the special tokens of an encoder survive truncation
        assert tr.tokens.special[0] and tr.tokens.special[-1]
        assert not any(tr.tokens.special[1:-1])
    assert_equals_eager(tr, pair.ref)


def test_scales_follow_the_config(pair: Pair) -> None:
    tr = engine.trace(pair.model, SHORT)
    d_head = 32 // 4
    assert tr.d_head == d_head
    base = d_head**-0.5
    expected = {
        "gpt2-layerscale": [base / (i + 1) for i in range(2)],
        "gpt2-upcast": [base / (i + 1) for i in range(2)],
        "gpt2-unscaled": [1.0, 1.0],
    }.get(pair.kind, [base, base])
    np.testing.assert_allclose(tr.scales, expected, rtol=1e-7)


def test_qkv_shapes_and_z_is_the_real_attention_output(pair: Pair) -> None:
    """z concatenated over heads is exactly what the model feeds its attention output projection."""
    tr = engine.trace(pair.model, ODD)
    n, heads, d_head = len(tr.tokens), 4, 8
    recorded: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    handles = []
    for i, layer in enumerate(pair.layers()):
        proj = dict(layer.named_modules())[OUT_PROJ[pair.family]]

        def hook(_m, inputs, output, i=i):
            recorded[i] = (inputs[0].detach()[0], output.detach()[0])

        handles.append(proj.register_forward_hook(hook))
    try:
        with torch.no_grad():
            pair.ref(input_ids=torch.tensor([list(tr.tokens.ids)]))
    finally:
        for h in handles:
            h.remove()
    assert sorted(recorded) == list(range(tr.n_layers))
    for layer in range(tr.n_layers):
        for get in (tr.q, tr.k, tr.v):
            arr = get(layer)
            assert arr.shape == (heads, n, d_head) and arr.dtype == np.float32
        z_all = tr.z(layer)
        assert z_all.shape == (heads, n, d_head)
        for head in range(heads):
            np.testing.assert_allclose(tr.z(layer, head), tr.pattern(layer, head) @ tr.v(layer)[head], atol=1e-6)
            np.testing.assert_allclose(z_all[head], tr.z(layer, head), atol=1e-6)
        concat = torch.from_numpy(z_all.transpose(1, 0, 2).reshape(n, heads * d_head).copy())
        proj_in, proj_out = recorded[layer]
        z_atol = ATOL if tr.device == "cpu" else CUDA_Z_ATOL
        np.testing.assert_allclose(concat.numpy(), proj_in.numpy(), atol=z_atol, err_msg=f"layer {layer} z")
        proj = dict(pair.layers()[layer].named_modules())[OUT_PROJ[pair.family]]
        with torch.no_grad():
            np.testing.assert_allclose(proj(concat[None])[0].numpy(), proj_out.numpy(), atol=1e-4)


def test_pos_encoding_is_the_position_table(pair: Pair) -> None:
    tr = engine.trace(pair.model, SHORT)
    n = len(tr.tokens)
    table = pair.pos_table().detach().numpy()
    start = pair.ref.config.pad_token_id + 1 if pair.family == "roberta" else 0
    assert tr.pos_encoding is not None and tr.pos_encoding_kind == "learned"
    assert tr.pos_encoding.shape == (n, table.shape[1])
    np.testing.assert_allclose(tr.pos_encoding, table[start : start + n], atol=0)


def test_max_positions(pair: Pair) -> None:
    assert pair.model.max_positions == MAX_POS


def test_stages_compose_to_the_pattern(pair: Pair) -> None:
    tr = engine.trace(pair.model, ODD)
    n = len(tr.tokens)
    for layer in range(tr.n_layers):
        mask = tr.mask(layer)
        assert mask.shape == (n, n)
        blocked = np.triu(np.ones((n, n), dtype=bool), 1) if pair.decoder else np.zeros((n, n), dtype=bool)
        assert np.all(np.isneginf(mask[blocked])) and np.all(mask[~blocked] == 0)
        stacked = []
        for head in range(tr.n_heads):
            raw = tr.scores(layer, head, "raw")
            np.testing.assert_allclose(raw, tr.q(layer)[head] @ tr.k(layer)[head].T, rtol=1e-5, atol=1e-5)
            scaled = tr.scores(layer, head, "scaled")
            np.testing.assert_allclose(scaled, raw * tr.scales[layer], rtol=1e-6, atol=1e-6)
            masked = tr.scores(layer, head, "masked")
            np.testing.assert_allclose(masked, scaled + mask, rtol=1e-6, atol=1e-6)
            p = tr.pattern(layer, head)
            ref = torch.softmax(torch.from_numpy(masked), dim=-1).numpy()
            np.testing.assert_allclose(p, ref, atol=1e-6)
            np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-5)
            assert np.all(p[blocked] == 0.0)
            stacked.append(p)
        np.testing.assert_allclose(tr.pattern(layer), np.stack(stacked), atol=0)
        for stage in ("raw", "scaled", "masked"):
            all_heads = tr.scores(layer, None, stage)
            one_by_one = np.stack([tr.scores(layer, h, stage) for h in range(tr.n_heads)])
            np.testing.assert_array_equal(all_heads, one_by_one)


# ---- causal toggle on GPT-2 ------------------------------------------------------------------
@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_gpt2_causal_toggle_never_touches_the_shared_model(gpt2: Pair) -> None:
    module = gpt2.model.module
    impl_before = module.config._attn_implementation
    checksum_before = state_checksum(module)

    default = engine.trace(gpt2.model, ODD)
    n = len(default.tokens)
    assert default.causal
    for layer in range(default.n_layers):
        assert np.all(np.triu(default.pattern(layer), 1) == 0.0)  # exactly zero above the diagonal
    assert_equals_eager(default, gpt2.ref)

    bidirectional = engine.trace(gpt2.model, ODD, causal=False)
    assert not bidirectional.causal
    atts = assert_equals_eager(bidirectional, gpt2.ref, torch.zeros(1, 1, n, n))
    assert float(np.triu(atts[0][0], 1).sum()) > 0.1  # the reference really looked ahead

    again = engine.trace(gpt2.model, ODD, causal=True)
    for layer in range(again.n_layers):
        np.testing.assert_array_equal(again.pattern(layer), default.pattern(layer))

    assert module.config._attn_implementation == impl_before
    assert state_checksum(module) == checksum_before
    assert not module.training
    assert not any(p.requires_grad for p in module.parameters())
    assert no_hooks_left(module)


def test_bert_causal_true_matches_additive_mask(bert: Pair) -> None:
    tr = engine.trace(bert.model, ODD, causal=True)
    n = len(tr.tokens)
    assert tr.causal
    for layer in range(tr.n_layers):
        assert np.all(np.triu(tr.pattern(layer), 1) == 0.0)
    assert_equals_eager(tr, bert.ref, additive_causal_mask(n))
    assert no_hooks_left(bert.model.module)


# ---- MiniLM (the real pretrained model) -------------------------------------------------------
@pytest.mark.parametrize("sentence", sorted(SENTENCES))
def test_minilm_parity(minilm, minilm_ref, sentence: str) -> None:
    ref, tok = minilm_ref
    text = SENTENCES[sentence]
    tr = engine.trace(minilm, text)
    assert list(tr.tokens.ids) == tok(unicodedata.normalize("NFC", text))["input_ids"]
    assert (tr.n_layers, tr.n_heads, tr.d_head) == (6, 12, 32)
    assert not tr.causal and not tr.truncated
    assert_equals_eager(tr, ref, peaked=True)
    n = len(tr.tokens)
    np.testing.assert_allclose(tr.pos_encoding, ref.embeddings.position_embeddings.weight[:n].detach().numpy(), atol=0)


def test_minilm_truncated_at_512(minilm, minilm_ref) -> None:
    ref, tok = minilm_ref
    paragraph = (
        "Attention lets every token look at every other token. The model compares a query with each key, "
        "scales the scores, applies a softmax, and mixes the values with the resulting weights. "
    )
    text = paragraph * 20
    full = tok(text)["input_ids"]
    assert len(full) > 512
    tr = engine.trace(minilm, text, max_tokens=512)
    assert tr.truncated and len(tr.tokens) == 512 and tr.n_input_tokens == len(full)
    assert tr.notices and any("512" in note for note in tr.notices)
    assert list(tr.tokens.ids) == tok(text, truncation=True, max_length=512)["input_ids"]
    assert_equals_eager(tr, ref)


def test_minilm_names_what_became_unk(minilm, minilm_ref) -> None:
    """MiniLM's WordPiece has no piece for emoji: the trace says which parts of the text became [UNK] (the
    tokenizer's own offsets are the reference), and a text with none says nothing of it."""
    _, tok = minilm_ref
    text = "I love pizza 🍕 and ∰ so much"
    enc = tok(text, return_offsets_mapping=True)
    unknown = [text[a:b] for i, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]) if i == tok.unk_token_id]
    assert unknown == ["🍕", "∰"]
    tr = engine.trace(minilm, text)
    assert tr.tokens.strings.count("[UNK]") == 2
    assert [n for n in tr.notices if "[UNK]" in n] == [
        "This model's vocabulary has no pieces for these, so they are shown as [UNK]: 🍕, ∰."
    ]
    assert not [n for n in engine.trace(minilm, "I love pizza").notices if "[UNK]" in n]


def test_minilm_causal_matches_additive_float_mask(minilm, minilm_ref) -> None:
    ref, _ = minilm_ref
    module = minilm.module
    impl_before = module.config._attn_implementation
    tr = engine.trace(minilm, ODD, causal=True)
    n = len(tr.tokens)
    assert tr.causal
    for layer in range(tr.n_layers):
        assert np.all(np.triu(tr.pattern(layer), 1) == 0.0)
    for att in assert_equals_eager(tr, ref, additive_causal_mask(n)):
        assert np.all(np.triu(att, 1) == 0.0)
    # and the shared model is still a bidirectional encoder
    assert module.config._attn_implementation == impl_before
    plain = engine.trace(minilm, ODD)
    assert not plain.causal
    assert float(np.triu(plain.pattern(0), 1).sum()) > 1.0
    assert no_hooks_left(module)
