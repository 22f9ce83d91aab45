"""Every trace type speaks :class:`engine.traces.Trace`, so pages ask the trace instead of testing its type."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.records import Tokens
from engine.traces import Trace
from engine.traces.alignment import AlignmentTrace
from engine.traces.attention import AttentionTrace
from engine.traces.caption import CaptionTrace, PatchCaptionTrace
from engine.traces.seq2seq import Seq2SeqTrace
from engine.traces.vision import VisionTrace, WindowBlock, WindowTrace


def _tokens(n: int) -> Tokens:
    return Tokens(tuple(f"t{i}" for i in range(n)), tuple(range(n)), (False,) * n)


def _attention(n_q: int = 3, n_k: int | None = None, family: str = "encoder", device: str = "cpu") -> AttentionTrace:
    n_k = n_q if n_k is None else n_k
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, n_q, 4)).astype(np.float32)
    k = rng.standard_normal((2, n_k, 4)).astype(np.float32)
    return AttentionTrace(
        model_id="m",
        family=family,
        tokens=_tokens(n_q),
        key_tokens=_tokens(n_k),
        queries=(q,),
        keys=(k,),
        values=(k,),
        scales=(0.5,),
        causal=False,
        device=device,
        notices=("a notice",),
    )


def _seq2seq() -> Seq2SeqTrace:
    return Seq2SeqTrace(
        model_id="m",
        source=_tokens(3),
        target=_tokens(2),
        output_text="x y",
        encoder=_attention(3),
        decoder=_attention(2, family="decoder"),
        cross=_attention(2, 3),
    )


def _alignment() -> AlignmentTrace:
    a = np.full((2, 3), 1 / 3, dtype=np.float32)
    return AlignmentTrace(
        model_id="m",
        variant="additive",
        source=_tokens(3),
        target=_tokens(2),
        output_text="x y",
        encoder_states=np.zeros((3, 4)),
        decoder_states=np.zeros((2, 4)),
        energies=a,
        alignment=a,
        contexts=np.zeros((2, 4)),
        output_probs=np.ones(2),
    )


def _vision() -> VisionTrace:
    return VisionTrace(
        model_id="m",
        image=np.zeros((4, 4), np.float32),
        patch_size=2,
        grid=(1, 2),
        attention=_attention(3, family="vit", device="cuda"),
        labels=("a", "b"),
        probs=np.array([0.2, 0.8]),
    )


def _windows() -> WindowTrace:
    q = np.zeros((4, 2, 4, 3), np.float32)  # a 4×4 grid in 2×2 windows: [window, head, N, d]
    block = WindowBlock(
        stage=0,
        block=0,
        grid=(4, 4),
        window=2,
        shift=0,
        queries=q,
        keys=q,
        scale=0.5,
        bias=np.zeros((2, 4, 4), np.float32),
    )
    return WindowTrace(
        model_id="m",
        image=np.zeros((8, 8, 3), np.float32),
        patch_size=2,
        blocks=(block,),
        labels=("a", "b"),
        probs=np.array([0.2, 0.8]),
        device="cuda",
    )


def _caption() -> CaptionTrace:
    return CaptionTrace(
        model_id="m",
        image=np.zeros((4, 4, 3), np.float32),
        words=_tokens(2),
        caption="t0",
        alphas=np.full((2, 2, 2), 0.25, np.float32),
        betas=np.ones(2, np.float32),
        log_prob=-1.0,
    )


def _patch_caption() -> PatchCaptionTrace:
    cross = _attention(2, 5, family="captioner")  # 2 words over [CLS] + 2×2 patches
    return PatchCaptionTrace(
        model_id="m",
        image=np.zeros((4, 4, 3), np.float32),
        patch_size=2,
        grid=(2, 2),
        prefix=1,
        words=_tokens(2),
        caption="t0",
        cross=cross,
        log_prob=-1.0,
    )


@pytest.mark.parametrize(
    "make, family, blocks",
    [
        (_attention, "encoder", ("self",)),
        (_seq2seq, "encoder-decoder", ("encoder", "decoder", "cross")),
        (_alignment, "rnn-attention", ()),
        (_vision, "vit", ("self",)),
        (_windows, "vit", ()),
        (_caption, "captioner", ()),
        (_patch_caption, "captioner", ("cross",)),
    ],
)
def test_every_trace_type_speaks_the_protocol(make, family, blocks) -> None:
    trace = make()
    assert isinstance(trace, Trace)
    assert trace.model_id == "m" and trace.family == family
    assert trace.device in ("cpu", "cuda") and isinstance(trace.notices, tuple)
    got = trace.attention_blocks()
    assert tuple(got) == blocks
    assert all(isinstance(block, AttentionTrace) for block in got.values())


def test_blocks_are_the_traces_own_parts() -> None:
    seq, vis, att = _seq2seq(), _vision(), _attention()
    assert seq.attention_blocks()["cross"] is seq.cross and seq.attention_blocks()["decoder"] is seq.decoder
    assert vis.attention_blocks()["self"] is vis.attention and vis.device == "cuda"
    assert att.attention_blocks()["self"] is att


def test_new_fields_keep_old_constructors_working() -> None:
    """Seq2SeqTrace and AlignmentTrace gained ``family``/``device`` (and Seq2SeqTrace ``written``) with
    defaults, after every old field."""
    seq, ali = _seq2seq(), _alignment()
    assert (seq.family, seq.device, ali.family, ali.device) == ("encoder-decoder", "cpu", "rnn-attention", "cpu")
    assert dataclasses.replace(seq, device="cuda").device == "cuda"
    assert seq.written is None and seq.rows_written() is seq.target
    names = [f.name for f in dataclasses.fields(Seq2SeqTrace)]
    assert names[names.index("notices") :] == ["notices", "family", "device", "written"]
