"""``AttentionTrace.overview`` / ``pattern_rows``: the long-input view equals the full pattern pooled by hand.

Traces are built directly from random numpy Q/K/V (no model), small enough that ``trace.pattern()``
is the reference; the chunk size is shrunk in some tests so that chunks split output blocks. The
last section checks the offline long-context model and the causal toggle's limit on long inputs.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import engine
from engine.records import EngineError, Tokens
from engine.traces import overview as ov
from engine.traces.attention import AttentionTrace
from engine.traces.overview import overview_edges

RTOL, ATOL = 1e-5, 1e-7  # float32 rounding (the overview sums means in float64)


def toks(n: int) -> Tokens:
    return Tokens(strings=tuple(f"t{i}" for i in range(n)), ids=tuple(range(n)), special=(False,) * n)


def make_trace(
    n_q: int,
    n_k: int | None = None,
    *,
    causal: bool = False,
    padding: np.ndarray | None = None,
    slopes: np.ndarray | None = None,
    window: tuple[int | None, ...] = (),
    softcap: tuple[float | None, ...] = (),
    heads: int = 2,
    d: int = 8,
    seed: int = 0,
) -> AttentionTrace:
    """Random Q/K/V, two layers; scores spread wide enough that patterns are far from uniform."""
    n_k = n_q if n_k is None else n_k
    rng = np.random.default_rng(seed)

    def arr(n: int) -> np.ndarray:
        return (1.5 * rng.normal(size=(heads, n, d))).astype(np.float32)

    return AttentionTrace(
        model_id="test",
        family="decoder" if causal else "encoder",
        tokens=toks(n_q),
        key_tokens=toks(n_k),
        queries=(arr(n_q), arr(n_q)),
        keys=(arr(n_k), arr(n_k)),
        values=(arr(n_k), arr(n_k)),
        scales=(1 / math.sqrt(d), 0.5),
        causal=causal,
        window=window,
        softcap=softcap,
        key_padding=padding,
        alibi_slopes=slopes,
    )


def by_hand(
    trace: AttentionTrace,
    layer: int,
    head: int,
    size: int,
    reduce: str,
    *,
    q_range=None,
    k_range=None,
    keys=None,
    row_scale: bool = False,
) -> np.ndarray:
    """The full pattern, cut to the region, pooled with reduceat / block means over linspace edges."""
    p = trace.pattern(layer, head).astype(np.float64)
    q0, q1 = q_range or (0, trace.n_queries)
    k0, k1 = k_range or (0, trace.n_keys)
    cols = np.arange(k0, k1) if keys is None else np.asarray(keys)
    region = p[q0:q1][:, cols]
    if row_scale:
        peak = region.max(axis=1, keepdims=True)
        region = region / np.where(peak > 0, peak, 1.0)
    re = np.linspace(0, region.shape[0], min(region.shape[0], size) + 1).astype(int)
    ce = np.linspace(0, region.shape[1], min(region.shape[1], size) + 1).astype(int)
    if reduce == "max":
        return np.maximum.reduceat(np.maximum.reduceat(region, re[:-1], axis=0), ce[:-1], axis=1)
    return np.array([[region[a:b, c:e].mean() for c, e in zip(ce[:-1], ce[1:])] for a, b in zip(re[:-1], re[1:])])


def check(trace: AttentionTrace, size: int, reduce: str, layer: int = 1, head: int = 1, **kw) -> np.ndarray:
    got = trace.overview(layer, head, size, reduce, **kw)
    want = by_hand(trace, layer, head, size, reduce, **kw)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    return got


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 5 rows at 40 keys: blocks are split between chunks and chunks end mid-region."""
    monkeypatch.setattr(ov, "CHUNK_BYTES", 5 * 40 * 4)


PADDING = np.zeros(40, dtype=bool)
PADDING[[0, 17, 39]] = True
TRACES = {
    "encoder": lambda: make_trace(40),
    "causal": lambda: make_trace(40, causal=True),
    "key padding": lambda: make_trace(40, padding=PADDING),
    "causal + padding": lambda: make_trace(40, causal=True, padding=PADDING),
    "alibi": lambda: make_trace(40, causal=True, slopes=np.array([0.5, 0.125], dtype=np.float32)),
    "cross, causal offset": lambda: make_trace(23, 40, causal=True),  # query i sees keys <= i + 17
    "cross, rows fully blocked": lambda: make_trace(40, 23, causal=True),  # rows < 17 see nothing
    "sliding window": lambda: make_trace(40, causal=True, window=(3, 7)),  # row i sees keys i−6 … i
    "window + padding": lambda: make_trace(40, causal=True, padding=PADDING, window=(None, 5)),
    "cross, window": lambda: make_trace(23, 40, causal=True, window=(4, 9)),
    "window, no causal mask": lambda: make_trace(40, window=(3, 7)),  # row i sees keys i−7 … i+7
    "cross, window, no causal mask": lambda: make_trace(23, 40, window=(4, 9)),
    "softcap + window": lambda: make_trace(40, causal=True, window=(None, 6), softcap=(None, 1.5)),
}


# ---- equal to the pattern pooled by hand ---------------------------------------------------------
@pytest.mark.parametrize("kind", TRACES)
@pytest.mark.parametrize("reduce", ["max", "mean"])
@pytest.mark.parametrize("size", [1, 6, 13])
def test_overview_is_the_pattern_pooled(kind: str, reduce: str, size: int) -> None:
    check(TRACES[kind](), size, reduce)


@pytest.mark.parametrize("kind", TRACES)
def test_size_at_least_n_gives_the_exact_pattern(kind: str) -> None:
    trace = TRACES[kind]()
    for reduce in ("max", "mean"):
        got = trace.overview(1, 0, 40, reduce)
        np.testing.assert_allclose(got, trace.pattern(1, 0), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(trace.overview(0, -1, 4096), trace.pattern(0, -1), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("kind", TRACES)
def test_small_chunks_change_nothing(kind: str, small_chunks) -> None:
    trace = TRACES[kind]()
    for size in (1, 3, 7, 40):
        for reduce in ("max", "mean"):
            check(trace, size, reduce, q_range=(2, trace.n_queries - 1), row_scale=size == 7)


@pytest.mark.parametrize("kind", ["encoder", "causal", "alibi", "cross, causal offset"])
@pytest.mark.parametrize("reduce", ["max", "mean"])
def test_regions_keys_and_row_scale(kind: str, reduce: str) -> None:
    trace = TRACES[kind]()
    n_q = trace.n_queries
    check(trace, 4, reduce, q_range=(3, n_q - 2))
    check(trace, 4, reduce, k_range=(5, 31))
    check(trace, 50, reduce, q_range=(10, 19), k_range=(0, 12))  # a zoom: exact cells
    keys = np.array([1, 2, 3, 8, 13, 21, 22, 30, 38])
    check(trace, 4, reduce, keys=keys)
    check(trace, 100, reduce, keys=keys, q_range=(1, n_q))
    check(trace, 3, reduce, k_range=(8, 31), keys=keys[3:8], q_range=(6, 20))
    check(trace, 5, reduce, row_scale=True)
    check(trace, 5, reduce, row_scale=True, keys=keys)
    check(trace, 100, reduce, row_scale=True, k_range=(20, 40))


def test_hiding_keys_never_renormalises() -> None:
    trace = make_trace(30)
    keep = np.arange(1, 30)  # hide key 0
    rows = trace.overview(0, 0, 100, keys=keep)
    np.testing.assert_allclose(rows, trace.pattern(0, 0)[:, 1:], rtol=1e-6, atol=1e-12)
    assert np.all(rows.sum(axis=1) < 1.0)


def test_row_scale_makes_each_rows_largest_selected_weight_one() -> None:
    trace = make_trace(20, 25, causal=True)  # offset 5: every row sees keys 0-5 at least
    scaled = trace.overview(0, 1, 100, row_scale=True, k_range=(2, 25))
    np.testing.assert_allclose(scaled.max(axis=1), 1.0, rtol=1e-6)
    blocked_rows = make_trace(25, 20, causal=True).overview(0, 1, 100, row_scale=True)
    assert np.all(blocked_rows[:5] == 0.0) and np.allclose(blocked_rows[5:].max(axis=1), 1.0)


HAND_K = np.array([[[0.0], [math.log(3)], [math.log(3)]]], dtype=np.float32)


def hand_trace(values: np.ndarray) -> AttentionTrace:
    """Causal, one head of d_head 1, scale 1, q = 1 and k = (0, ln 3, ln 3): rows (1), (1/4, 3/4), (1/7, 3/7, 3/7)."""
    q = np.ones((1, 3, 1), dtype=np.float32)
    return AttentionTrace(
        model_id="hand",
        family="decoder",
        tokens=toks(3),
        key_tokens=toks(3),
        queries=(q,),
        keys=(HAND_K,),
        values=(values,),
        scales=(1.0,),
        causal=True,
    )


def test_hand_worked_three_tokens() -> None:
    """:func:`hand_trace`'s overview: its exact rows, and blocks of two."""
    trace = hand_trace(HAND_K)
    exact = [[1, 0, 0], [1 / 4, 3 / 4, 0], [1 / 7, 3 / 7, 3 / 7]]
    np.testing.assert_allclose(trace.overview(0, 0), exact, rtol=1e-6, atol=1e-7)
    # size 2: edges (0, 1, 3) on both sides, blocks {0}, {1, 2}
    np.testing.assert_array_equal(overview_edges(3, 2), [0, 1, 3])
    np.testing.assert_allclose(trace.overview(0, 0, 2, "max"), [[1, 0], [1 / 4, 3 / 4]], rtol=1e-6)
    mean = [[1, 0], [(1 / 4 + 1 / 7) / 2, (3 / 4 + 0 + 3 / 7 + 3 / 7) / 4]]
    np.testing.assert_allclose(trace.overview(0, 0, 2, "mean"), mean, rtol=1e-6, atol=1e-7)
    # keys 1 and 2 only, one cell: the max is 3/4, the mean (0 + 0 + 3/4 + 0 + 3/7 + 3/7) / 6 = 15/56
    np.testing.assert_allclose(trace.overview(0, 0, 1, "max", keys=np.array([1, 2])), [[3 / 4]], rtol=1e-6)
    np.testing.assert_allclose(trace.overview(0, 0, 1, "mean", keys=np.array([1, 2])), [[15 / 56]], rtol=1e-6)
    # row_scale over keys 0 and 1: (1, 0), (1/3, 1), (1/3, 1)
    got = trace.overview(0, 0, k_range=(0, 2), row_scale=True)
    np.testing.assert_allclose(got, [[1, 0], [1 / 3, 1], [1 / 3, 1]], rtol=1e-6, atol=1e-7)


# ---- edges, rows, validation ---------------------------------------------------------------------
def test_sliding_window_mask_convention() -> None:
    """transformers' convention: query i sees key j when 0 <= i − j < window (here 3)."""
    trace = make_trace(6, causal=True, window=(3, None))
    allowed = np.isfinite(trace.mask(0))
    i, j = np.indices((6, 6))
    np.testing.assert_array_equal(allowed, (j <= i) & (i - j < 3))
    np.testing.assert_array_equal(np.isfinite(trace.mask(1)), j <= i)  # no window in layer 1
    assert trace.window_of(-2) == 3 and trace.window_of(1) is None
    with pytest.raises(ValueError, match="one entry per layer"):
        make_trace(6, causal=True, window=(3,))
    bidirectional = make_trace(6, window=(2, None))  # no causal mask: |i − j| <= window
    np.testing.assert_array_equal(np.isfinite(bidirectional.mask(0)), np.abs(i - j) <= 2)
    assert np.isfinite(bidirectional.mask(1)).all()
    assert bidirectional.blocked_any() and not make_trace(6, window=(5, 5)).blocked_any()
    assert make_trace(1, 6, causal=True, window=(5, 5)).blocked_any()  # the one query sees keys 1–5
    assert not make_trace(1, 6, causal=True, window=(6, 6)).blocked_any()


def test_softcap_caps_the_masked_scores_only() -> None:
    trace = make_trace(12, causal=True, softcap=(None, 1.5))
    scaled, masked = trace.scores(1, 0, "scaled"), trace.scores(1, 0, "masked")
    allowed = np.isfinite(masked)
    np.testing.assert_allclose(masked[allowed], (np.tanh(scaled / 1.5) * 1.5)[allowed], rtol=1e-6)
    assert np.abs(scaled).max() > 1.5 and np.abs(masked[allowed]).max() <= 1.5  # tanh saturates at 1 in float32
    np.testing.assert_array_equal(trace.scores(0, 0, "masked"), make_trace(12, causal=True).scores(0, 0, "masked"))


def test_overview_edges() -> None:
    np.testing.assert_array_equal(overview_edges(10, 4), [0, 2, 5, 7, 10])
    np.testing.assert_array_equal(overview_edges(3, 1024), [0, 1, 2, 3])
    np.testing.assert_array_equal(overview_edges(5, 1), [0, 5])
    for n, size in [(16384, 1024), (1000, 7), (7, 7), (1025, 1024)]:
        edges = overview_edges(n, size)
        assert len(edges) == min(n, size) + 1 and edges[0] == 0 and edges[-1] == n
        sizes = np.diff(edges)
        assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1
    with pytest.raises(ValueError):
        overview_edges(0, 4)
    with pytest.raises(ValueError):
        overview_edges(4, 0)


@pytest.mark.parametrize("kind", TRACES)
def test_pattern_rows_are_the_patterns_rows(kind: str, small_chunks) -> None:
    trace = TRACES[kind]()
    full = trace.pattern(1, 1)
    np.testing.assert_allclose(trace.pattern_rows(1, 1, 0, trace.n_queries), full, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(trace.pattern_rows(-1, -1, 7, 8), full[7:8], rtol=1e-5, atol=1e-9)


def test_blocked_any() -> None:
    assert not make_trace(5).blocked_any()
    assert make_trace(5, causal=True).blocked_any()
    assert not make_trace(1, 4, causal=True).blocked_any()  # one query row sees every key
    assert make_trace(5, padding=np.array([False, False, True, False, False])).blocked_any()
    assert not make_trace(5, padding=np.zeros(5, dtype=bool)).blocked_any()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(reduce="sum"), ValueError, "reduce"),
        (dict(size=0), ValueError, "size"),
        (dict(size=2.5), ValueError, "size"),
        (dict(q_range=(5, 5)), ValueError, "empty"),
        (dict(q_range=(3, 41)), IndexError, "outside"),
        (dict(k_range=(-1, 4)), IndexError, "outside"),
        (dict(k_range=(4,)), ValueError, "pair"),
        (dict(keys=np.array([3, 2])), ValueError, "sorted"),
        (dict(keys=np.array([2, 2])), ValueError, "sorted"),
        (dict(keys=np.array([], dtype=int)), ValueError, "non-empty"),
        (dict(keys=np.array([0.5])), ValueError, "integer"),
        (dict(k_range=(5, 10), keys=np.array([4, 6])), ValueError, "k_range"),
        (dict(k_range=(5, 10), keys=np.array([6, 10])), ValueError, "k_range"),
        (dict(layer=2), IndexError, "layer"),
        (dict(head=-3), IndexError, "head"),
    ],
)
def test_bad_arguments_are_refused_clearly(kwargs: dict, error: type, match: str) -> None:
    trace = make_trace(40)
    args = dict(layer=0, head=0) | kwargs
    with pytest.raises(error, match=match):
        trace.overview(**args)


def test_pattern_rows_refuses_bad_ranges() -> None:
    trace = make_trace(10)
    with pytest.raises(ValueError, match="empty"):
        trace.pattern_rows(0, 0, 4, 4)
    with pytest.raises(IndexError, match="outside"):
        trace.pattern_rows(0, 0, 8, 11)


# ---- memory ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("weighting", ["attention", "value"])
@pytest.mark.parametrize("extras", [{}, dict(causal=True, slopes=np.array([0.5], dtype=np.float32))])
def test_no_n_by_n_array_is_ever_allocated(extras: dict, weighting: str) -> None:
    n, size = 4096, 256
    trace = make_trace(n, heads=1, d=16, **extras)
    full_bytes = n * n * 4  # 64 MiB: one float32 pattern
    tracemalloc.start()
    try:
        grid = trace.overview(0, 0, size, "mean", keys=np.arange(1, n), weighting=weighting)
        row = trace.pattern_rows(0, 0, n // 2, n // 2 + 1, weighting=weighting)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grid.shape == (size, size) and row.shape == (1, n)
    assert peak < full_bytes / 6, f"peak {peak / 2**20:.1f} MiB for a {full_bytes / 2**20:.0f} MiB pattern"


# ---- the offline long-context model --------------------------------------------------------------
LONG_TEXT = "the cat sat on the mat because it was tired. " * 400


def test_tiny_random_gpt2_reads_past_1024_tokens(tiny_gpt2) -> None:
    assert tiny_gpt2.max_positions == 16384
    trace = engine.trace(tiny_gpt2, LONG_TEXT, max_tokens=1100)
    assert len(trace.tokens) == 1100 and trace.truncated and not trace.notices[0].startswith("This model reads")
    grid = trace.overview(-1, 0, 64)
    assert grid.shape == (64, 64)
    np.testing.assert_allclose(grid, by_hand(trace, -1, 0, 64, "max"), rtol=RTOL, atol=ATOL)


def test_causal_toggle_with_a_mask_is_refused_on_long_inputs(minilm, monkeypatch) -> None:
    from engine.families.hf_text import adapter as adapters

    monkeypatch.setattr(adapters, "MAX_MASK_TOKENS", 8)
    with pytest.raises(EngineError, match="shorter text"):
        engine.trace(minilm, "The cat sat on the mat because it was tired.", causal=True)
    assert engine.trace(minilm, "The cat sat on the mat because it was tired.").n_queries > 8  # default: fine
    assert engine.trace(minilm, "The cat sat.", causal=True).causal  # 6 tokens: under the limit


def test_gpt2_without_its_mask_needs_no_mask_tensor(tiny_gpt2, monkeypatch) -> None:
    """Off on SDPA passes ``is_causal=False`` (no n×n mask, no limit); it equals an all-zero 4D mask."""
    import torch

    from engine.capture.hf import recording
    from engine.families.hf_text import adapter as adapters

    monkeypatch.setattr(adapters, "MAX_MASK_TOKENS", 8)
    trace = engine.trace(tiny_gpt2, "The cat sat on the mat because it was tired.", causal=False)
    n = trace.n_queries
    assert n > 8 and not trace.causal
    adapter = tiny_gpt2.adapter
    with torch.inference_mode(), tiny_gpt2.lock, recording() as rec:
        adapter.base(tiny_gpt2.module)(
            input_ids=torch.tensor([list(trace.tokens.ids)], device=tiny_gpt2.device),
            attention_mask=torch.zeros(1, 1, n, n, device=tiny_gpt2.device),
        )
    np.testing.assert_allclose(trace.q(-1), rec.calls[-1][1].query, rtol=1e-5, atol=1e-5)
    causal = engine.trace(tiny_gpt2, "The cat sat on the mat because it was tired.")
    assert not np.allclose(causal.q(-1), trace.q(-1), atol=1e-3)  # the mask did change the later layers


# ---- value-weighted: α_ij·‖v_j‖ ------------------------------------------------------------------
def weighted_by_hand(trace: AttentionTrace, layer: int, head: int) -> np.ndarray:
    return trace.pattern(layer, head) * np.linalg.norm(trace.v(layer)[head], axis=-1)[None, :]


def test_value_weighting_hand_worked_three_tokens() -> None:
    """The causal 3-token head above, with value vectors of lengths 0.1, 2 and 5 (d_head 2)."""
    trace = hand_trace(np.array([[[0.06, 0.08], [0.0, 2.0], [3.0, 4.0]]], dtype=np.float32))  # ‖v‖ = 0.1, 2, 5
    norms = trace.value_norms(0, 0)
    assert norms.dtype == np.float32 and norms.shape == (3,)
    np.testing.assert_allclose(norms, [0.1, 2.0, 5.0], rtol=1e-6)
    # rows (1), (1/4, 3/4), (1/7, 3/7, 3/7) times (0.1, 2, 5)
    exact = np.array([[0.1, 0.0, 0.0], [0.025, 1.5, 0.0], [0.1 / 7, 6 / 7, 15 / 7]], dtype=np.float64)
    np.testing.assert_allclose(trace.overview(0, 0, weighting="value"), exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(trace.pattern_rows(0, 0, 1, 3, weighting="value"), exact[1:], rtol=1e-6, atol=1e-7)
    # row_scale divides by the row's largest weighted value: (1), (1/60, 1), (1/150, 2/5, 1)
    scaled = np.array([[1.0, 0.0, 0.0], [1 / 60, 1.0, 0.0], [1 / 150, 0.4, 1.0]], dtype=np.float64)
    np.testing.assert_allclose(trace.overview(0, 0, weighting="value", row_scale=True), scaled, rtol=1e-6, atol=1e-7)
    # size 2, blocks {0}, {1, 2}: max and mean of the weighted cells
    np.testing.assert_allclose(
        trace.overview(0, 0, 2, "max", weighting="value"), [[0.1, 0.0], [0.025, 15 / 7]], rtol=1e-6
    )
    mean = [[0.1, 0.0], [(0.025 + 0.1 / 7) / 2, (1.5 + 0 + 6 / 7 + 15 / 7) / 4]]
    np.testing.assert_allclose(trace.overview(0, 0, 2, "mean", weighting="value"), mean, rtol=1e-6)


@pytest.mark.parametrize("kind", ["encoder", "causal", "key padding", "sliding window", "cross, causal offset"])
def test_value_weighting_is_the_pattern_times_value_norms(kind: str, small_chunks) -> None:
    trace = TRACES[kind]()
    for layer, head in ((0, 0), (1, 1), (-1, -2)):
        want = weighted_by_hand(trace, layer, head)
        got = trace.overview(layer, head, 1000, weighting="value")
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)
        rows = trace.pattern_rows(layer, head, 3, trace.n_queries, weighting="value")
        np.testing.assert_allclose(rows, want[3:], rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("reduce", ["max", "mean"])
def test_value_weighting_pooled_with_causal_mask_and_keys(reduce: str, small_chunks) -> None:
    trace = make_trace(90, causal=True, seed=3)
    keys = np.array([0, 1, 5, 8, 13, 21, 34, 40, 41, 55, 60, 77, 89])
    region = weighted_by_hand(trace, 1, 0).astype(np.float64)[10:90][:, keys]
    for row_scale in (False, True):
        r = region / np.maximum(region.max(axis=1, keepdims=True), 1e-30) if row_scale else region
        re, ce = overview_edges(r.shape[0], 7), overview_edges(r.shape[1], 7)  # 13 keys: pooled too
        if reduce == "max":
            want = np.maximum.reduceat(np.maximum.reduceat(r, re[:-1], axis=0), ce[:-1], axis=1)
        else:
            want = [[r[a:b, c:e].mean() for c, e in zip(ce[:-1], ce[1:])] for a, b in zip(re[:-1], re[1:])]
        got = trace.overview(1, 0, 7, reduce, q_range=(10, 90), keys=keys, row_scale=row_scale, weighting="value")
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)


def test_value_weighting_is_refused_when_unknown() -> None:
    trace = make_trace(5)
    with pytest.raises(ValueError, match="weighting"):
        trace.overview(0, 0, weighting="norm")
    with pytest.raises(IndexError, match="head 2"):
        trace.value_norms(0, 2)
