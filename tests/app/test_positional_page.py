"""The Positional encodings page through AppTest: every tab renders, numbers equal the formulas and
the engine, controls redraw, bad input gives messages; the Explore page links here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import assert_clean, decode, figures, messages, open_page, run_app, title
from engine.analysis import positional as P
from engine.analysis.order_blindness import order_blindness

PAGE = "positional"
STORY = "Lily found a red ball. She gave it to Tom. Tom was happy."


def fig_by_title(at: AppTest, prefix: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(prefix)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def dataframe(at: AppTest, column: str):
    """The first dataframe on the page with a column named ``column`` (AppTest gives dataframes no key)."""
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, [list(d.value.columns) for d in at.dataframe]
    return frames[0]


TABS = {  # tab label → (chart count, title prefixes of its charts)
    "Sinusoidal": (3, ("PE table", "Similarity PE(p)")),
    "Learned": (3, ("minilm: embeddings.position_embeddings", "Learned: cosine", "Sinusoidal (d=384)")),
    "RoPE": (1, ()),
    "ALiBi": (1, ()),
    "Order blindness": (3, ("P (original order)", "P shuffled (model run)", "Π P Πᵀ (P reordered)")),
}
LATEX = {"Sinusoidal": 2, "RoPE": 1, "ALiBi": 1}


def open_tab(tab: str, **state) -> AppTest:
    """The page with ``tab`` open (the tabs are bound to session state / the URL as ``pos_tab``)."""
    return open_page(PAGE, pos_tab=tab, **state)


def select_tab(at: AppTest, tab: str) -> None:
    """Click a tab: its session-state key and the URL parameter it is bound to (the URL wins once set)."""
    at.session_state["pos_tab"] = tab
    at.query_params["pos_tab"] = tab
    at.run()


@pytest.fixture(scope="module")
def page() -> AppTest:
    return open_page(PAGE)


def test_every_tab_renders(page: AppTest):
    assert page.segmented_control(key="pos_tab").options == list(TABS)
    for tab, (count, prefixes) in TABS.items():
        select_tab(page, tab)
        assert_clean(page)
        assert not page.error, (tab, messages(page.error))
        assert not page.warning, (tab, messages(page.warning))
        titles = [title(f) for f in figures(page)]
        assert len(titles) == count, (tab, titles)  # only the open tab runs
        for prefix in prefixes:
            assert any(t.startswith(prefix) for t in titles), (tab, prefix, titles)
        assert len(page.get("latex")) == LATEX.get(tab, 0), tab  # PE and shift formulas; RoPE score; ALiBi score
    select_tab(page, "Sinusoidal")


def test_sinusoidal_heatmap_is_the_formula(page: AppTest):
    z = decode(fig_by_title(page, "PE table")["data"][0]["z"])
    assert z.shape == (64, 64)
    for pos in (0, 1, 9, 63):
        for dim in (0, 1, 2, 3, 30, 31, 62, 63):
            angle = pos / 10000 ** (2 * (dim // 2) / 64)
            assert z[pos, dim] == pytest.approx(math.sin(angle) if dim % 2 == 0 else math.cos(angle), abs=1e-6)
    sim = decode(fig_by_title(page, "Similarity PE(p)")["data"][0]["z"])
    omegas = [1 / 10000 ** (2 * i / 64) for i in range(32)]
    for p, q in ((0, 0), (3, 17), (40, 12)):
        assert sim[p, q] == pytest.approx(sum(math.cos((p - q) * w) for w in omegas), abs=1e-4)


def test_changing_d_model_and_length_redraws():
    at = open_page(PAGE)
    at.select_slider(key="pos_sin_d").set_value(16).run()
    at.slider(key="pos_sin_len").set_value(30).run()
    assert_clean(at)
    fig = fig_by_title(at, "PE table")
    assert title(fig) == "PE table: 30 positions × 16 dimensions"
    z = decode(fig["data"][0]["z"])
    assert z.shape == (30, 16)
    assert z[29, 4] == pytest.approx(math.sin(29 / 10000 ** (4 / 16)), abs=1e-6)
    assert decode(fig_by_title(at, "Similarity PE(p)")["data"][0]["z"]).shape == (30, 30)
    # the shift check follows: its largest error is float32 rounding
    shift = dataframe(at, "pos + k")
    assert list(shift["pos"])[:2] == [0, 1]
    assert all(float(v) < 1e-5 for v in shift.iloc[:, 2])


def test_out_of_range_settings_are_clamped():
    state = dict(
        pos_sin_len=100_000,
        pos_sin_k=-3,
        pos_rope_k=999,
        pos_rope_m=-5,
        pos_alibi_heads=0,
        pos_blind_seed=-1,
        pos_blind_layer=99,
    )
    at = open_tab("Sinusoidal", **state)
    assert_clean(at)
    assert at.slider(key="pos_sin_len").value == 512
    assert at.number_input(key="pos_sin_k").value == 1
    select_tab(at, "RoPE")
    assert_clean(at)
    assert at.number_input(key="pos_rope_k").value == 20
    assert at.slider(key="pos_rope_m").value == 0
    select_tab(at, "ALiBi")
    assert_clean(at)
    assert at.slider(key="pos_alibi_heads").value == 1
    select_tab(at, "Order blindness")
    assert_clean(at)
    assert at.number_input(key="pos_blind_seed").value == 0
    assert at.selectbox(key="pos_blind_layer").value == 2


def test_learned_minilm_equals_the_engine():
    import engine

    page = open_tab("Learned")
    table = P.position_table(engine.load("minilm")).values
    z = decode(fig_by_title(page, "minilm: embeddings.position_embeddings")["data"][0]["z"])
    np.testing.assert_array_equal(z, table[:128].astype(np.float32))
    cos = decode(fig_by_title(page, "Learned: cosine")["data"][0]["z"])
    unit = table[:128] / np.linalg.norm(table[:128], axis=1, keepdims=True)
    np.testing.assert_allclose(cos, unit @ unit.T, atol=1e-5)


def test_learned_tab_for_our_decoder_and_offline_gpt2():
    at = open_tab("Learned", model="tiny-gpt-stories")
    assert_clean(at)
    assert decode(fig_by_title(at, "tiny-gpt-stories: pos_embed")["data"][0]["z"]).shape == (96, 128)
    at = open_tab("Learned", hub_id="gpt2")
    assert_clean(at)
    errors = messages(at.error)
    assert any("gpt2" in e and "HF_HUB_OFFLINE" in e for e in errors), errors


def test_learned_tab_caps_a_long_context_table():
    """tiny-random-gpt2 has 16,384 positions: the tab compares the first 1024, not 16,384² pairs."""
    at = open_tab("Learned", model="tiny-random-gpt2")
    assert_clean(at)
    assert at.slider(key="pos_learned_n").max == 1024
    assert "of 16384 positions" in title(fig_by_title(at, "tiny-random-gpt2: wpe"))


def test_rope_table_scores_are_equal_and_match_the_engine():
    page = open_tab("RoPE")
    frame = dataframe(page, "score q′·k′")
    scores = frame["score q′·k′"].to_numpy(dtype=float)
    assert (frame["key position p + k"] - frame["query position p"] == 2).all()
    q, k = P.rope_example_vectors(16, seed=0)
    expected = P.rope_relative_scores(q, k, 2, frame["query position p"].to_numpy())
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    assert np.ptp(scores) < 1e-4


def test_alibi_slopes_listed():
    page = open_tab("ALiBi")
    frame = dataframe(page, "slope m_h")
    assert frame["slope m_h"].tolist() == pytest.approx([1 / 2**h for h in range(1, 9)])
    at = open_tab("ALiBi")
    at.slider(key="pos_alibi_heads").set_value(12).run()
    assert_clean(at)
    assert len(dataframe(at, "slope m_h")) == 12


def test_order_blindness_numbers_match_the_engine():
    page = open_tab("Order blindness")
    frame = dataframe(page, "causal mask")
    result = order_blindness(STORY, seed=1, max_tokens=32)
    shown = frame.iloc[:, 3].tolist()
    assert shown == [f"{r.error:.2e}" for r in result.runs]
    assert float(shown[0]) < 1e-5 and float(shown[1]) > 1e-2
    # the three heatmaps are P, the shuffled run and the permuted P, for layer 0 head 0 of the blind copy
    z_perm = decode(fig_by_title(page, "Π P Πᵀ")["data"][0]["z"])
    z_shuf = decode(fig_by_title(page, "P shuffled")["data"][0]["z"])
    np.testing.assert_allclose(z_perm, result.runs[0].permuted(result.perm)[0, 0], atol=1e-6)
    np.testing.assert_allclose(z_shuf, z_perm, atol=1e-5)


def test_order_blindness_empty_text_is_a_warning():
    at = open_tab("Order blindness", pos_blind_text="   ")
    assert_clean(at)
    assert any("empty" in w for w in messages(at.warning)), messages(at.warning)


@pytest.mark.parametrize("text", ["<script>alert('x')</script> lily & tom 😀", "lily", "ball " * 3000])
def test_order_blindness_odd_input(text: str):
    at = open_tab("Order blindness", pos_blind_text=text[:2000])
    assert_clean(at)
    assert not at.error, messages(at.error)
    notes = messages(at.info) + messages(at.warning)
    if "script" in text:
        assert any("<unk>" in n or "know" in n or "vocabulary" in n.lower() for n in notes), notes
        labels = figures(at)[0]["layout"]["yaxis"]["ticktext"]
        assert not any("<script" in label for label in labels), labels
    elif text == "lily":
        assert any("nothing to shuffle" in n for n in notes), notes
    else:
        assert any("first 32 tokens" in n for n in notes), notes


def test_explore_links_here_for_minilm():
    at = run_app()
    assert_clean(at)
    links = [link.proto for link in at.get("page_link")]
    assert any(
        link.page == "positional" and "positional encodings" in link.label and link.query_string == "pos_tab=learned"
        for link in links
    ), links
    # following it: the Learned tab with the same (shared) model (the link spells the tab as the app writes it;
    # open_page sets the session's tab, which holds the tab's label)
    target = open_page(PAGE, pos_tab="Learned", model=at.selectbox(key="model").value)
    assert_clean(target)
    assert title(figures(target)[0]).startswith("minilm: embeddings.position_embeddings")


#: every control of every tab, with a value to set (the largest sinusoidal table: 2 × 512×512 cells)
CONTROLS = {
    "Sinusoidal": [
        ("select_slider", "pos_sin_d", 128),
        ("slider", "pos_sin_len", 200),
        ("number_input", "pos_sin_k", 9),
        ("select_slider", "pos_sin_d", 512),
        ("slider", "pos_sin_len", 512),
    ],
    "Learned": [("slider", "pos_learned_n", 512)],
    "RoPE": [("slider", "pos_rope_pair", 3), ("slider", "pos_rope_m", 20), ("number_input", "pos_rope_k", -4)],
    "ALiBi": [("slider", "pos_alibi_heads", 12), ("slider", "pos_alibi_len", 40)],
    "Order blindness": [
        ("number_input", "pos_blind_seed", 7),
        ("selectbox", "pos_blind_setting", "learned positions, no mask"),
    ],
}


def test_every_control_reruns_the_page_cleanly():
    """Every control change reruns the page without an error and keeps the value set, and the tab still
    draws its charts. How long a rerun takes is measured by bench/bench_responsiveness.py, not here."""
    at = open_page(PAGE)
    for tab, controls in CONTROLS.items():
        select_tab(at, tab)
        for kind, key, value in controls:
            getattr(at, kind)(key=key).set_value(value)
            at.run()
            assert_clean(at)
            assert getattr(at, kind)(key=key).value == value, (tab, key)
            assert figures(at) or at.get("plotly_chart") or at.get("vega_lite_chart"), (tab, key)
