"""The own transformer against independent references: torch SDPA, hand-built masks, a hand-worked trace."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.capture import HookPoint, capture
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.families.transformer.positional import sinusoidal
from engine.records import EmptyInputError, Tokens
from engine.traces.attention import AttentionTrace

POS_ENCODINGS = ["sinusoidal", "learned", "rope", "alibi", "none"]
N_HEADS, D_MODEL = 2, 16
D_HEAD = D_MODEL // N_HEADS
TOKEN_IDS = [3, 1, 4, 1, 5, 9, 2]
T = len(TOKEN_IDS)
ALIBI_SLOPES_2_HEADS = [2.0**-4, 2.0**-8]  # start 2^(-8/2), ratio 2^(-8/2)


def make_model(pos_encoding: str, *, causal: bool = True, norm: str = "pre", seed: int = 0) -> Transformer:
    """A 2-layer model whose weights are large enough for sharp, non-uniform patterns."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(
        vocab_size=23,
        d_model=D_MODEL,
        n_layers=2,
        n_heads=N_HEADS,
        d_mlp=32,
        max_len=12,
        pos_encoding=pos_encoding,
        causal=causal,
        norm=norm,
    )
    model = Transformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


def make_tokens(ids: list[int]) -> Tokens:
    return Tokens(tuple(f"w{i}" for i in ids), tuple(ids), (False,) * len(ids))


def reference_mask(n: int, *, causal: bool, alibi: bool, key_padding: torch.Tensor | None = None) -> torch.Tensor:
    """The additive mask from scratch: −∞ above the diagonal and on padding, −m_h·|i−j| for ALiBi."""
    mask = torch.zeros(1, 1, n, n)  # (1, 1, T, T)
    if causal:
        mask = mask.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    if key_padding is not None:
        mask = mask.masked_fill(key_padding[:, None, None, :], float("-inf"))  # (B, 1, T, T)
    if alibi:
        i = torch.arange(n)
        distance = -(i[:, None] - i[None, :]).abs().float()  # (T, T)
        mask = mask + torch.tensor(ALIBI_SLOPES_2_HEADS)[:, None, None] * distance  # (B, H, T, T)
    return mask


def qk_names(pos_encoding: str) -> tuple[str, str]:
    return ("hook_rot_q", "hook_rot_k") if pos_encoding == "rope" else ("hook_q", "hook_k")


def check_layers_against_sdpa(model: Transformer, acts: dict, mask: torch.Tensor) -> None:
    """Each layer's hook_scores_raw / attn_scores / pattern / z against SDPA on the captured q, k, v."""
    q_name, k_name = qk_names(model.cfg.pos_encoding)
    for layer in range(model.cfg.n_layers):
        a = f"blocks.{layer}.attn."
        q, k, v = (acts[a + name].transpose(1, 2) for name in (q_name, k_name, "hook_v"))  # (B, H, T, dh)
        B, H, n, _ = q.shape
        eye = torch.eye(n).expand(B, H, n, n)  # V = I turns SDPA's output into its pattern
        ref_pattern = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)  # (B, H, T, T)
        ref_z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2)  # (B, T, H, dh)
        torch.testing.assert_close(acts[a + "hook_pattern"], ref_pattern, atol=1e-5, rtol=0)
        torch.testing.assert_close(acts[a + "hook_z"], ref_z, atol=1e-5, rtol=0)
        raw = q @ k.transpose(-2, -1)  # (B, H, T, T)
        torch.testing.assert_close(acts[a + "hook_scores_raw"], raw, atol=1e-5, rtol=0)
        masked = (raw / math.sqrt(D_HEAD) + mask).expand(B, H, n, n)
        torch.testing.assert_close(acts[a + "hook_attn_scores"], masked, atol=1e-5, rtol=0)  # -inf must match


# ---- the model against SDPA and the lazy trace, for every encoding and mask --------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("pos_encoding", POS_ENCODINGS)
def test_own_attention_matches_sdpa_and_lazy_trace(pos_encoding: str, causal: bool) -> None:
    model = make_model(pos_encoding)
    ids = torch.tensor([TOKEN_IDS])
    with torch.no_grad(), capture(model) as acts:
        logits = model(ids, causal=causal)
    with torch.no_grad():
        sdpa_logits = model(ids, causal=causal, attn_impl="sdpa")
    torch.testing.assert_close(logits, sdpa_logits, atol=1e-5, rtol=0)

    mask = reference_mask(T, causal=causal, alibi=pos_encoding == "alibi")
    check_layers_against_sdpa(model, acts, mask)

    trace = trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS), model_id="own-test", causal=causal)
    assert trace.causal is causal and trace.family == ("decoder" if causal else "encoder")
    for layer in range(2):
        a = f"blocks.{layer}.attn."
        for head in range(N_HEADS):
            pattern, raw = acts[a + "hook_pattern"][0, head], acts[a + "hook_scores_raw"][0, head]
            masked, z = acts[a + "hook_attn_scores"][0, head], acts[a + "hook_z"][0, :, head]
            np.testing.assert_allclose(trace.pattern(layer, head), pattern, atol=1e-5)
            np.testing.assert_allclose(trace.scores(layer, head, "raw"), raw, atol=1e-5)
            np.testing.assert_allclose(trace.scores(layer, head, "masked"), masked, atol=1e-5)  # same -infs
            np.testing.assert_allclose(trace.z(layer, head), z, atol=1e-5)
        pattern = acts[a + "hook_pattern"][0]  # (H, T, T)
        above = torch.ones(T, T, dtype=torch.bool).triu(1)
        if causal:
            assert torch.all(pattern[:, above] == 0.0)  # exactly zero mass above the diagonal
        else:
            assert torch.all(pattern[:, above] > 0.0)


@pytest.mark.parametrize("pos_encoding", POS_ENCODINGS)
def test_own_trace_records_positions_and_slopes(pos_encoding: str) -> None:
    model = make_model(pos_encoding)
    with torch.no_grad(), capture(model) as acts:
        model(torch.tensor([TOKEN_IDS]))
    trace = trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS), model_id="own-test")
    assert trace.pos_encoding_kind == pos_encoding
    assert (trace.n_layers, trace.n_heads, trace.d_head) == (2, N_HEADS, D_HEAD)
    assert trace.scales == pytest.approx((1 / math.sqrt(D_HEAD),) * 2)
    assert trace.device == "cpu" and trace.n_input_tokens == T and trace.model_id == "own-test"
    if pos_encoding in ("learned", "sinusoidal"):
        assert trace.pos_encoding.shape == (T, D_MODEL)
        np.testing.assert_array_equal(trace.pos_encoding, acts["hook_pos_embed"][0].numpy())
    else:
        assert trace.pos_encoding is None and "hook_pos_embed" not in acts
    if pos_encoding == "sinusoidal":
        np.testing.assert_array_equal(trace.pos_encoding, sinusoidal(T, D_MODEL).numpy())
    if pos_encoding == "alibi":
        np.testing.assert_allclose(trace.alibi_slopes, ALIBI_SLOPES_2_HEADS, rtol=1e-7)
    else:
        assert trace.alibi_slopes is None
    if pos_encoding == "rope":  # the trace holds the rotated queries; position 0 is not rotated
        q, rot_q = acts["blocks.0.attn.hook_q"][0], acts["blocks.0.attn.hook_rot_q"][0]  # (T, H, dh)
        np.testing.assert_allclose(trace.q(0), rot_q.permute(1, 0, 2).numpy(), atol=1e-6)
        torch.testing.assert_close(rot_q[0], q[0])
        assert not torch.allclose(rot_q[1:], q[1:], atol=1e-3)


@pytest.mark.parametrize(("pos_encoding", "norm"), [("rope", "post"), ("alibi", "post"), ("learned", "post")])
def test_own_post_norm_paths_agree(pos_encoding: str, norm: str) -> None:
    model = make_model(pos_encoding, norm=norm)
    ids = torch.tensor([TOKEN_IDS])
    with torch.no_grad(), capture(model) as acts:
        logits = model(ids)
        sdpa_logits = model(ids, attn_impl="sdpa")
    torch.testing.assert_close(logits, sdpa_logits, atol=1e-5, rtol=0)
    trace = trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS), model_id="own-test")
    for layer in range(2):
        pattern = acts[f"blocks.{layer}.attn.hook_pattern"][0]  # (H, T, T)
        np.testing.assert_allclose(trace.pattern(layer), pattern, atol=1e-5)


@pytest.mark.parametrize("pos_encoding", ["rope", "alibi", "learned"])
def test_own_batched_key_padding_matches_sdpa(pos_encoding: str) -> None:
    model = make_model(pos_encoding, causal=False)
    ids = torch.tensor([TOKEN_IDS, [7, 7, 8, 0, 0, 0, 0]])
    key_padding = torch.tensor([[False] * T, [False] * 3 + [True] * 4])
    with torch.no_grad(), capture(model) as acts:
        model(ids, key_padding=key_padding)
    mask = reference_mask(T, causal=False, alibi=pos_encoding == "alibi", key_padding=key_padding)
    check_layers_against_sdpa(model, acts, mask)
    assert torch.all(acts["blocks.1.attn.hook_pattern"][1, :, :, 3:] == 0.0)


# ---- masks: causal, toggling, padding ----------------------------------------------------------


@pytest.mark.parametrize("default_causal", [True, False])
def test_own_causal_toggle_uses_the_same_weights_and_leaves_the_config(default_causal: bool) -> None:
    model = make_model("rope", causal=default_causal)
    cfg_before, dict_before = model.cfg, model.cfg.to_dict()
    ids = torch.tensor([TOKEN_IDS])
    patterns = {}
    for causal in (None, True, False):
        with torch.no_grad(), capture(model, names=["blocks.0.attn.hook_pattern"]) as acts:
            model(ids, causal=causal)
        patterns[causal] = acts["blocks.0.attn.hook_pattern"]
    assert torch.equal(patterns[None], patterns[default_causal])
    assert not torch.allclose(patterns[True], patterns[False], atol=1e-3)
    assert model.cfg is cfg_before and model.cfg.to_dict() == dict_before


@pytest.mark.parametrize("pos_encoding", POS_ENCODINGS)
def test_own_causal_logits_ignore_the_future(pos_encoding: str) -> None:
    model = make_model(pos_encoding)
    changed = TOKEN_IDS[:4] + [11, 12, 13]
    with torch.no_grad():
        a = model(torch.tensor([TOKEN_IDS]), causal=True)
        b = model(torch.tensor([changed]), causal=True)
        c = model(torch.tensor([TOKEN_IDS]), causal=False)
        d = model(torch.tensor([changed]), causal=False)
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=1e-5, rtol=0)
    assert not torch.allclose(c[:, :4], d[:, :4], atol=1e-3)  # an encoder does look ahead


@pytest.mark.parametrize("pos_encoding", POS_ENCODINGS)
def test_own_right_padding_leaves_real_positions_unchanged(pos_encoding: str) -> None:
    model = make_model(pos_encoding)
    real = TOKEN_IDS[:5]
    key_padding = torch.tensor([[False] * 5 + [True] * 2])
    for causal in (True, False):
        with torch.no_grad():
            plain = model(torch.tensor([real]), causal=causal)
            padded = model(torch.tensor([real + [0, 0]]), causal=causal, key_padding=key_padding)
        torch.testing.assert_close(padded[:, :5], plain, atol=1e-5, rtol=0)


@pytest.mark.parametrize("attn_impl", ["explicit", "sdpa"])
def test_own_fully_padded_key_row_gives_no_nan(attn_impl: str) -> None:
    model = make_model("alibi")
    ids = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    # causal + key 0 padded: query 0 of sequence 0 sees nothing; sequence 1 sees nothing at all
    key_padding = torch.tensor([[True, False, False, False], [True, True, True, True]])
    with capture(model) as acts:
        logits = model(ids, causal=True, key_padding=key_padding, attn_impl=attn_impl)
    assert torch.isfinite(logits).all()
    logits.square().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    for layer in range(2):
        z = acts[f"blocks.{layer}.attn.hook_z"]  # (B, T, H, dh)
        assert torch.all(z[0, 0] == 0.0) and torch.all(z[1] == 0.0)
        if attn_impl == "explicit":
            pattern = acts[f"blocks.{layer}.attn.hook_pattern"]  # (B, H, T, T)
            assert torch.all(pattern[0, :, 0] == 0.0) and torch.all(pattern[1] == 0.0)
            assert torch.all(pattern[0, :, 1:].sum(-1) - 1.0 < 1e-6)
            assert torch.isneginf(acts[f"blocks.{layer}.attn.hook_attn_scores"][1]).all()
        else:
            assert f"blocks.{layer}.attn.hook_pattern" not in acts  # the fused path never builds it


def test_own_trace_with_every_key_padded_gives_no_nan() -> None:
    model = make_model("learned", causal=False)
    trace = trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS), model_id="own-test")
    padded = dataclasses.replace(trace, key_padding=np.ones(T, dtype=bool))
    assert np.all(padded.pattern(0) == 0.0) and np.all(np.isfinite(padded.z(1)))


# ---- the model object: config, errors, hooks cleaned up ----------------------------------------


def test_own_config_round_trip_and_validation() -> None:
    cfg = TransformerConfig(pos_encoding="alibi", causal=False, norm="post", tie_embeddings=True)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.d_head == 16
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.causal = True  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['n_head'\]"):
        TransformerConfig.from_dict({"n_head": 4})
    with pytest.raises(ValueError, match="divisible by n_heads"):
        TransformerConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="pos_encoding must be one of"):
        TransformerConfig(pos_encoding="relative")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_layers must be a positive integer"):
        TransformerConfig(n_layers=0)
    with pytest.raises(ValueError, match="d_head .* must be even"):
        TransformerConfig(d_model=12, n_heads=4, pos_encoding="rope")
    with pytest.raises(ValueError, match="norm must be"):
        TransformerConfig(norm="sandwich")  # type: ignore[arg-type]


def test_own_model_basics() -> None:
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=13, d_model=8, n_heads=2, d_mlp=16, max_len=6, tie_embeddings=True)
    model = Transformer(cfg)
    assert model.unembed.weight is model.embed.weight
    assert model(torch.tensor([[1, 2, 3]])).shape == (1, 3, 13)
    with pytest.raises(ValueError, match="longer than this model's max_len"):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="attn_impl"):
        model(torch.tensor([[1]]), attn_impl="flash")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_padding must have shape"):
        model(torch.tensor([[1, 2]]), key_padding=torch.tensor([[False]]))


def test_own_trace_removes_its_hooks_and_checks_input() -> None:
    model = make_model("rope")
    trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS), model_id="own-test")
    assert all(not m._forward_hooks for m in model.modules() if isinstance(m, HookPoint))
    with pytest.raises(EmptyInputError):
        trace_own(model, [], make_tokens([]), model_id="own-test")
    with pytest.raises(ValueError, match="display tokens"):
        trace_own(model, TOKEN_IDS, make_tokens(TOKEN_IDS[:3]), model_id="own-test")


# ---- a trace worked out by hand ----------------------------------------------------------------


def test_three_token_trace_by_hand() -> None:
    """1 layer, 1 head, d_head = 2, causal. Every expected number is worked out in the comments."""
    q = np.array([[[1.0, 0.0], [1.0, 2.0], [0.0, 1.0]]], dtype=np.float32)  # [head, pos, d_head]
    k = np.array([[[0.5, 1.0], [1.0, 0.0], [2.0, 2.0]]], dtype=np.float32)
    v = np.array([[[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]], dtype=np.float32)
    trace = AttentionTrace(
        model_id="hand",
        family="decoder",
        tokens=make_tokens([0, 1, 2]),
        key_tokens=make_tokens([0, 1, 2]),
        queries=(q,),
        keys=(k,),
        values=(v,),
        scales=(1 / math.sqrt(2),),
        causal=True,
    )
    # raw[i, j] = q_i · k_j
    raw = [
        [1 * 0.5 + 0 * 1, 1 * 1 + 0 * 0, 1 * 2 + 0 * 2],  # 0.5, 1, 2
        [1 * 0.5 + 2 * 1, 1 * 1 + 2 * 0, 1 * 2 + 2 * 2],  # 2.5, 1, 6
        [0 * 0.5 + 1 * 1, 0 * 1 + 1 * 0, 0 * 2 + 1 * 2],  # 1,   0, 2
    ]
    np.testing.assert_array_equal(trace.scores(0, 0, "raw"), [[0.5, 1, 2], [2.5, 1, 6], [1, 0, 2]])
    np.testing.assert_allclose(trace.scores(0, 0, "raw"), raw)
    # scaled = raw / √2
    scaled = [
        [0.3535534, 0.7071068, 1.4142136],
        [1.7677670, 0.7071068, 4.2426407],
        [0.7071068, 0.0, 1.4142136],
    ]
    np.testing.assert_allclose(trace.scores(0, 0, "scaled"), scaled, atol=1e-6)
    # masked: −∞ above the diagonal (query i sees keys j ≤ i)
    inf = np.inf
    masked = [[0.3535534, -inf, -inf], [1.7677670, 0.7071068, -inf], [0.7071068, 0.0, 1.4142136]]
    np.testing.assert_allclose(trace.scores(0, 0, "masked"), masked, atol=1e-6)
    np.testing.assert_array_equal(trace.mask(0), [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]])
    assert trace.bias(0) is None
    # pattern: row 0 = [1, 0, 0]
    #   row 1 = softmax([2.5/√2, 1/√2]) = [1, e^(−1.5/√2)] / (1 + e^(−1.5/√2))
    #         = [0.7428167, 0.2571833]
    #   row 2 = [e^(1/√2), e^0, e^(2/√2)] / (2.0281150 + 1 + 4.1132504)
    #         = [0.2839954, 0.1400292, 0.5759753]
    assert 1 / (1 + math.exp(-1.5 / math.sqrt(2))) == pytest.approx(0.7428167, abs=1e-7)
    pattern = [[1.0, 0.0, 0.0], [0.7428167, 0.2571833, 0.0], [0.2839954, 0.1400292, 0.5759753]]
    np.testing.assert_allclose(trace.pattern(0, 0), pattern, atol=1e-6)
    # z = pattern V: row 1 = 0.7428167·[1, 0] + 0.2571833·[0, 1]
    #   row 2 = 0.2839954·[1, 0] + 0.1400292·[0, 1] + 0.5759753·[2, 2] = [1.4359461, 1.2919799]
    z = [[1.0, 0.0], [0.7428167, 0.2571833], [1.4359461, 1.2919799]]
    np.testing.assert_allclose(trace.z(0, 0), z, atol=1e-6)
    np.testing.assert_allclose(trace.z(0), [z], atol=1e-6)  # all heads: [head, pos, d_head]
