"""The Pretraining objectives page through AppTest: numbers against the engine and the formulas."""

from __future__ import annotations

import html

import numpy as np

import engine
from apptest_helpers import assert_clean, decode, figures, messages, open_page, run_until
from engine.analysis.cost import counts
from engine.analysis.fill_mask import attention_of, fill_mask


def open_tab(tab: str, **state):
    at = open_page("pretraining", pretraining_tab=tab, **state)
    assert_clean(at)
    return at


def test_fill_in_the_blank_shows_the_engines_guesses_and_attention():
    at = open_tab("Fill in the blank")
    text = at.text_input(key="fill_text").value
    ref = fill_mask(engine.load("tiny-bert-stories"), text)
    bars, heat = (
        [f for f in figures(at) if f["data"][0]["type"] == "bar"],
        [f for f in figures(at) if f["data"][0]["type"] == "heatmap"],
    )
    (blank,) = ref.blanks
    np.testing.assert_allclose(sorted(decode(bars[0]["data"][0]["x"]), reverse=True), blank.probs, rtol=1e-6)
    want = attention_of(ref.trace, blank.position).reshape(-1, len(ref.tokens))
    np.testing.assert_allclose(decode(heat[0]["data"][0]["z"]), want, atol=1e-6)
    assert any("it" in c for c in messages(at.caption))


def test_clicking_a_word_masks_it():
    at = open_tab("Fill in the blank", fill_text="lily found a red ball .")
    assert any("[MASK]" in m for m in messages(at.warning))  # no blank yet: says how to make one
    at.pills(key="fill_pick").set_value(4).run()
    assert_clean(at)
    assert at.text_input(key="fill_text").value == "lily found a red [MASK] ."
    assert [f for f in figures(at) if f["data"][0]["type"] == "bar"]


def test_html_and_odd_text_are_shown_literally():
    at = open_tab("Fill in the blank", fill_text="<b>lily</b> [MASK] **bold** 🙂")
    assert not [m for m in messages(at.markdown) if "<b>" in m and "&lt;" not in m and "\\<" not in m]


def test_objectives_side_by_side_draws_masks_and_real_attention():
    at = open_tab("Objectives side by side")
    figs = figures(at)
    assert len(figs) == 6, [f["layout"]["title"]["text"] for f in figs]
    captions = " ".join(messages(at.caption))
    assert "predict" in captions and "examples from one sentence" in captions and "<X>" in captions.replace("\\", "")
    masks = {
        f["layout"]["title"]["text"]: decode(f["data"][0]["z"]) for f in figs if "Mask" in f["layout"]["title"]["text"]
    }
    nxt = next(v for k, v in masks.items() if "before" in k)
    assert np.array_equal(np.isnan(nxt), np.triu(np.ones_like(nxt, bool), 1))  # blocked above the diagonal


def test_cost_table_follows_the_formulas_and_measures():
    at = open_tab("The cost of attention")
    table = at.dataframe[0].value
    attention, rnn, conv = counts(512, 64)
    assert table["operations (multiply-adds)"].tolist() == [f"{c.multiply_adds:,}" for c in (attention, rnn, conv)]
    at.select_slider(key="cost_n").set_value(64)
    at.select_slider(key="cost_d").set_value(32).run()
    at.button(key="cost_measure").click().run()
    assert_clean(at)
    bars = [f for f in figures(at) if f["data"][0]["type"] == "bar"]
    seconds, labels = decode(bars[0]["data"][0]["x"]), bars[0]["data"][0]["text"]
    assert len(seconds) == 3 and labels == [f"{t * 1e3:.1f} ms" for t in seconds]  # each bar its own time


def test_fine_tuning_tab_runs_and_shows_what_moved():
    from engine.training.finetune import finetune

    at = open_tab("Fine-tuning changes attention")
    at.slider(key="finetune_steps").set_value(50)
    at.button(key="finetune_go").click().run()
    run_until(at, lambda a: any(m.label == "Accuracy after" for m in a.metric), what="the fine-tuning result")
    assert_clean(at)
    model = engine.load("tiny-bert-stories")
    ref = list(finetune(model.module, model.tokenizer, steps=50, lr=1e-3))[-1]  # seeded: the same run
    heat = {
        html.unescape(f["layout"]["title"]["text"]): decode(f["data"][0]["z"])
        for f in figures(at)
        if f["data"][0]["type"] == "heatmap"
    }
    np.testing.assert_allclose(heat["How far each head's attention moved"], ref.change, atol=1e-5)
    np.testing.assert_allclose(heat["Weight <bos> puts on the colour word, after"], ref.colour_after, atol=1e-5)
    assert [m.value for m in at.metric][1] == f"{ref.accuracy_after:.0%}"
    assert any("Moved most" in c for c in messages(at.caption))


def test_next_sentence_tab_shows_pairs_fine_tunes_and_inspects_a_pair():
    from engine.corpora import story_corpus
    from engine.training.nsp import nsp_pairs

    at = open_tab("Next sentence and [CLS]")
    table = at.dataframe[0].value
    ref = nsp_pairs(story_corpus(200, 7), 6, 0, max_tokens=engine.load("tiny-bert-stories").max_positions)
    assert table["B"].tolist() == [" ".join(p.b) for p in ref]
    assert [v == "yes" for v in table["does B come next?"]] == [p.is_next for p in ref]
    assert any("segment embedding" in m for m in messages(at.info))  # our encoder has none: the page says so
    at.slider(key="nsp_steps").set_value(50)
    at.button(key="nsp_go").click().run()
    run_until(at, lambda a: any(m.label == "NSP accuracy after" for m in a.metric), what="the NSP result")
    assert_clean(at)
    result = at.session_state["nsp_result"]  # the job's NspResult, kept by the session
    assert result.curve.eval_steps[-1] == 50 and len(result.curve.train_loss) == 50
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["NSP accuracy before"] == f"{result.accuracy_before:.0%}"
    assert metrics["NSP accuracy after"] == f"{result.accuracy_after:.0%}"
    figs = {html.unescape(f["layout"]["title"]["text"]): f for f in figures(at)}
    np.testing.assert_allclose(
        decode(figs["How far each head's attention moved"]["data"][0]["z"]), result.change, atol=1e-6
    )
    np.testing.assert_allclose(
        decode(figs["How far [CLS]'s attention moved"]["data"][0]["z"]), result.cls_change, atol=1e-6
    )
    loss = figs["Loss while fine-tuning"]["data"]
    np.testing.assert_allclose(decode(loss[0]["y"]), result.curve.train_loss, rtol=1e-6)
    np.testing.assert_allclose(decode(loss[1]["y"]), result.curve.eval_loss, rtol=1e-6)
    at.selectbox(key="nsp_pair").set_value(1).run()
    assert_clean(at)
    probe = result.probes[1]
    figs = {html.unescape(f["layout"]["title"]["text"]): f for f in figures(at)}
    for when, rows in (("before", probe.cls_before), ("after", probe.cls_after)):
        heat = figs[f"[CLS]'s attention, {when}"]["data"][0]
        np.testing.assert_allclose(decode(heat["z"]), rows.reshape(-1, rows.shape[-1]), atol=1e-6)
        np.testing.assert_allclose(decode(heat["z"]).sum(-1), 1.0, atol=1e-5)  # each head's [CLS] row
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["P(is next) after"] == f"{probe.p_after:.0%}"
