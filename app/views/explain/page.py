"""Is attention the explanation? Six ways to say which tokens mattered for one prediction (of three models), how
far their rankings agree, and Jain & Wallace's test: one head's attention permuted, made uniform or adversarial."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import pick_head
from app.figures import shared_build
from app.runtime.caches import has_map
from app.runtime.request import ExplainRequest
from app.state import bounded, choose, clamp, default, defaults
from app.ui.charts import set_source, show_chart
from app.ui.export import csv_button
from app.ui.guard import attempt
from app.ui.safe_text import md, quoted
from app.ui.theme import side_by_side
from app.views.explain import data
from app.views.explain.figures import agreement_heatmap, importance_bars, importance_heatmap, swap_scatter
from app.views.explain.keys import Explain as E

BASELINES = {"zero": "all-zero embeddings", "pad": "the padding token's embedding"}
LOO = {"remove": "remove the token", "replace": "replace it with `[MASK]` / `<unk>`"}
KINDS = {"permuted": "permuted (shuffled rows)", "uniform": "uniform", "adversarial": "adversarial (gradient search)"}

CLAIMS = """
| method | what it can claim | what it cannot |
|---|---|---|
| **raw attention** | how the last layer's heads mix the previous layer's vectors into the predicting position | which *input words* matter: after the first layer each vector is already a mixture, and a weight on a vector with a short value (or one the output projection shrinks) moves little |
| **attention rollout** | where information could have flowed through every layer, if heads were averaged and the residual were half of each step | it ignores the values, the MLPs and the output; rollout is an assumption about mixing, not a measurement of the output |
| **contributions ‖α·f(x)‖** | how large each token's vector is in the head's output, not just its weight (Kobayashi et al. 2020) | still one layer and no direction: a large contribution may point away from the prediction, or be cancelled by the residual |
| **leave-one-out** | how much the output really changes without the token: a measured cause | only one token at a time (two tokens that back each other up both look unimportant), and the gap left behind is itself an unusual input |
| **gradient × input** | which tokens the output is locally most sensitive to, weighted by the input | a first-order slope at one point: saturated softmaxes and LayerNorms make it blind to large changes |
| **integrated gradients** | how the output difference from a baseline splits among the tokens: the scores add up to f(input) − f(baseline) (completeness, checked below) | the answer depends on the baseline (zero or padding embeddings are not "no word"), and on the path |

Agreement between methods is not correctness: two methods can agree and both be wrong. The test at the bottom
asks the question from the other side: if this head's attention were the explanation, other weights should
change the prediction.
"""


def controls() -> ExplainRequest:
    """The prediction and the methods' settings as one request."""
    models = list(data.EXPLAIN_MODELS)
    choose(E.model, models, E.DEFAULTS[E.model])
    help = "Three models, three kinds of output."
    names = data.EXPLAIN_MODELS.get
    model_id = st.radio("What to explain", models, format_func=names, key=E.model, horizontal=True, help=help)
    index = models.index(model_id)
    text_key = f"{E.text}{index}"
    default(text_key, data.EXPLAIN_EXAMPLES[model_id])
    label = "Text with [MASK]" if model_id == "tiny-bert-stories" else "Text"
    helps = {
        "tiny-gpt-stories": "Our GPT predicts the word after this text; it knows the words of simple stories.",
        "tiny-bert-stories": "Our BERT fills the first [MASK]; it knows the words of simple stories.",
        "minilm": "MiniLM turns the text into one vector (the mean of its last layer, normalised).",
    }
    text = st.text_input(label, key=text_key, max_chars=300, help=helps[model_id]) or ""
    reference = ""
    if model_id == "minilm":
        default(E.reference, data.EXPLAIN_REFERENCE)
        help = "The number explained is the cosine similarity of the two embeddings."
        reference = st.text_input("Reference sentence", key=E.reference, max_chars=300, help=help) or ""
    with st.expander("Settings of the methods"):
        left, middle, right = st.columns(3)
        with left:
            clamp(E.steps, 4, 128)
            help = "Points on the path from the baseline to the input; more steps, smaller gap."
            steps = st.slider("Integrated gradients: steps", 4, 128, step=4, key=E.steps, help=help)
        with middle:
            choose(E.baseline, BASELINES, "zero")
            label = "Integrated gradients: baseline"
            baseline = st.radio(label, list(BASELINES), format_func=BASELINES.get, key=E.baseline)
        with right:
            choose(E.loo, LOO, "remove")
            loo = st.radio("Leave-one-out", list(LOO), format_func=LOO.get, key=E.loo)
        help = "They often draw much attention without carrying a word; left out of the rankings by default."
        st.checkbox("Rank special tokens too (`[CLS]`, `[SEP]`, `<bos>`)", key=E.special, help=help)
    set_source(model_id, text)
    return ExplainRequest(model_id, text, reference, data.EXPLAIN_MAX_TOKENS, bounded(steps, 4, 128), baseline, loo)


def show_prediction(pred) -> None:
    for notice in pred.notices:
        st.info(md(notice))
    if pred.task == "embedding":
        st.markdown(
            f"**Explained:** the cosine similarity of the text's sentence embedding with the reference's: "
            f"**{pred.value:.3f}**."
        )
        return
    where = "next" if pred.task == "next-token" else f"for the blank at position {pred.position}"
    st.markdown(
        f"The model predicts {quoted(pred.target)} {where} with probability **{pred.probability:.1%}**. "
        f"**Explained:** its log-probability, f = {pred.value:.3f}."
    )


@contextlib.contextmanager
def progress(text: str, cached: bool):
    """A progress bar while something is computed: yields its ``(share, label)`` callback (a no-op when cached)."""
    if cached:
        yield lambda share, label="": None
        return
    bar = st.progress(0.0, text=text)
    yield lambda share, label=text: bar.progress(min(1.0, share), text=label)
    bar.empty()


def importances(request: ExplainRequest) -> dict:
    """Every method's importance; a progress bar while some are still to compute."""
    methods = data.explain_methods()
    results = {}
    with progress("Computing the importances…", all(has_map(data.importance_key(request, m)) for m in methods)) as step:
        for i, (method, label) in enumerate(methods.items()):

            def report(share: float, i: int = i, label: str = label) -> None:
                step((i + share) / len(methods), f"{label}…")

            report(0.0)
            results[method] = data.explain_importance(request, method, progress=report)
    return results


def show_importances(pred, results: dict) -> None:
    methods = data.explain_methods()
    tokens = list(pred.tokens.strings)
    labels = list(methods.values())
    show_chart(shared_build(importance_heatmap, tokens, labels, [r.scores for r in results.values()]), key=E.heat)
    st.caption(
        "Each row is one method, divided by its largest score so that all share one colour scale (hover for "
        "the raw number). Blue: the token raises the explained number, red: it lowers it; the three attention "
        "readings are never negative. An empty cell is not scored (the blank being filled)."
    )
    items = list(results.items())
    for start in range(0, len(items), 3):
        for column, (method, result) in zip(side_by_side(3), items[start : start + 3]):
            with column:
                fig = shared_build(importance_bars, tokens, result.scores, methods[method])
                show_chart(fig, key=f"{E.bars}{method}", narrow=True)
    ig = results["integrated_gradients"]
    st.caption(
        f"Integrated gradients' completeness check ({ig.steps} steps): f(input) − f(baseline) = "
        f"{ig.f_input:.4f} − {ig.f_baseline:.4f} = {ig.f_input - ig.f_baseline:.4f}; the scores add up to "
        f"{ig.f_input - ig.f_baseline - ig.gap:.4f}; gap {ig.gap:+.2e}. More steps shrink the gap."
    )
    scores = {methods[m]: r.scores for m, r in results.items()}
    frame = pd.DataFrame({"position": range(len(tokens)), "token": tokens, **scores})
    csv_button("Download the scores as CSV", frame, "importances.csv", E.csv, index=False)


def show_agreement(request: ExplainRequest) -> None:
    st.subheader("Do the methods agree?")
    agree = data.explain_agreement(request, bool(st.session_state.get(E.special)))
    labels = list(data.explain_methods().values())
    left, right = side_by_side(2)
    with left:
        show_chart(shared_build(agreement_heatmap, agree.spearman, labels, "Spearman's ρ of the rankings"), key=E.rho)
    with right:
        show_chart(shared_build(agreement_heatmap, agree.kendall, labels, "Kendall's τ_b of the rankings"), key=E.tau)
    st.caption(
        f"Rank correlations over {len(agree.compared)} tokens: 1 = the same order, 0 = unrelated, −1 = reversed "
        "(empty: a method gave every token the same score). Signed scores are ranked by size: a token that "
        "pushes the output down strongly matters as much as one that pushes it up."
    )


def show_swap(request: ExplainRequest, pred) -> None:
    st.subheader("Jain & Wallace's test: other attention, same prediction?")
    st.write(
        "Replace one head's attention (or a whole layer's) in the forward pass and watch the output. If attention "
        "explained the prediction, shuffled or very different weights should change it."
    )
    n_layers, n_heads = data.explain_layout(request.model_id)
    clamp(E.layer, 0, n_layers - 1, start=n_layers - 1)
    a, b, c, d = st.columns(4)
    layer = a.selectbox("Layer", list(range(n_layers)), key=E.layer)
    with b:
        head = pick_head(n_heads, E.head, "all heads", persist=False)
    choose(E.kind, KINDS, "permuted")
    kind = c.radio("Replace with", list(KINDS), format_func=KINDS.get, key=E.kind)
    clamp(E.runs, 5, 100)
    runs = d.slider("Permutations", 5, 100, step=5, key=E.runs, disabled=kind != "permuted")
    runs = bounded(runs, 5, 100) if kind == "permuted" else 1
    test = data.Swap(int(layer), head, kind, runs)
    with progress("Running the test…", has_map(test.key(request))) as step:
        result = data.explain_swap(request, test, step)
    embedding = pred.task == "embedding"
    what = "cosine" if embedding else f"p({pred.target})"
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(f"{md(what)}, own attention", f"{result.before:.3f}")
    after = np.median(result.after)
    m2.metric(f"{md(what)}, replaced (median)", f"{after:.3f}", delta=f"{after - result.before:+.3f}")
    change = "1 − cos(e, e′)" if embedding else "total variation"
    help = f"The largest {change} between the output with the model's own weights and with replaced ones: "
    help += "1 − the cosine of the two embeddings." if embedding else "½ Σ |p − p′| over the vocabulary."
    m3.metric("Output moved (max)", f"{np.max(result.output_change):.4f}", help=help)
    help = "Jensen–Shannon divergence of the new weights from the model's own, in nats (at most ln 2 ≈ 0.69)."
    m4.metric("Attention moved (median)", f"{np.median(result.attention_change):.3f}", help=help)
    label = f"output change: {change}"
    fig = shared_build(swap_scatter, result.attention_change, result.output_change, output_label=label)
    show_chart(fig, key=E.swap)
    kept = "" if embedding else f" The predicted word stayed on top in {np.mean(result.top_kept):.0%} of the runs."
    rows = "the predicting row" if len(result.rows) == 1 else "every row"
    st.caption(
        f"Layer {result.layer}, {'all heads' if len(result.heads) > 1 else f'head {result.heads[0]}'}, "
        f"{KINDS[result.kind]}; the attention change is measured on {rows} (the rows that can reach the "
        f"output).{kept} Large attention changes with small output changes mean these weights are not "
        "what the prediction rests on; the adversary looks for such weights on purpose (output within ±0.01). "
        "It does not follow that attention is meaningless (Wiegreffe & Pinter 2019): other heads, the values "
        "and the MLPs can carry the same information."
    )


def main() -> None:
    st.title("Is attention the explanation?")
    st.write(
        "Attention weights are often shown as *why* a model predicted something. Here six methods answer the "
        "same question — which input tokens mattered for this one prediction? — side by side, and a test asks "
        "whether the prediction even notices when the attention is replaced."
    )
    defaults(E.DEFAULTS)
    request = controls()
    if (pred := attempt(lambda: data.explain_prediction(request))) is None:
        return
    show_prediction(pred)
    if (results := attempt(lambda: importances(request))) is None:
        return
    show_importances(pred, results)
    show_agreement(request)
    with st.expander("What each method can and cannot claim", expanded=True):
        st.markdown(CLAIMS)
    attempt(lambda: show_swap(request, pred))


main()
