"""Lessons: a guided path through the topics of a transformers lecture, one step at a time.

Each step (``app/components/lesson_plan.py``) is a short text, links that open the page showing it in
the right state (sentence, model, layer, head, tab) and a knowledge check; a few steps draw a small live
chart inline, from the same services the pages use. The current step is ``st.session_state["lesson_step"]``
(1-based) and the URL's ``?lesson_step=k``, so a teacher can send the class to step k with a link.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app import services
from app.components.charts import show_chart
from app.components.guard import show_error
from app.components.knowledge_check import answers, is_right, knowledge_check
from app.components.lesson_plan import IT_SENTENCE, QKV_HEAD, SOFTMAX_KEYS, SOFTMAX_SCORES, STEPS, Step
from app.links import open_page
from app.state import PERSIST, Lessons, bounded, clamp

URL_SEEN = "_lesson_step_url"  # the URL value this session last wrote or read


def current_step() -> int:
    """The step shown (1-based): the URL's ``lesson_step`` when a link or the user changed it, else the
    session's; written back to the URL so the address always names the step on screen."""
    url = st.query_params.get(Lessons.step)
    if url is not None and url != st.session_state.get(URL_SEEN):
        st.session_state[Lessons.step] = bounded(url, 1, len(STEPS))
    k = clamp(Lessons.step, 1, len(STEPS))
    st.query_params[Lessons.step] = str(k)
    st.session_state[URL_SEEN] = str(k)
    return k


def _go(k: int) -> None:
    """on_click of Previous/Next and the contents: show step ``k``."""
    st.session_state[Lessons.step] = bounded(k, 1, len(STEPS))


def navigation(k: int, where: str) -> None:
    """Previous / Next buttons (``where`` keeps the keys of the top and bottom rows apart)."""
    left, _, right = st.columns([1, 4, 1])
    with left:
        st.button("Previous", key=f"{Lessons.prev}{where}", on_click=_go, args=(k - 1,), disabled=k <= 1,
                  icon=":material/arrow_back:", width="stretch")
    with right:
        st.button("Next", key=f"{Lessons.next}{where}", on_click=_go, args=(k + 1,), disabled=k >= len(STEPS),
                  icon=":material/arrow_forward:", width="stretch", type="primary")


def progress(k: int) -> None:
    """"Step k of n", the score and a contents list to jump to any step."""
    done = answers()
    right = sum(is_right(step, done[step.id]) for step in STEPS if step.id in done)
    st.progress(k / len(STEPS), text=f"**Step {k} of {len(STEPS)}** · knowledge checks: {len(done)} of "
                                     f"{len(STEPS)} answered, {right} right")
    with st.expander("All steps"):
        for i, step in enumerate(STEPS, start=1):
            mark = " ✓" if step.id in done else ""
            st.button(f"{i}. {step.title}{mark}", key=f"{Lessons.goto}{i}", on_click=_go, args=(i,),
                      type="tertiary", disabled=i == k)


# ---------------------------------------------------------------- inline demos


def steps_demo() -> None:
    """The query "it" of the Q, K, V step's MiniLM head through q·k, the scale and the softmax: its 5 strongest
    keys (the numbers Step by step shows for the same head, cut to the keys that matter)."""
    layer, head = QKV_HEAD
    try:
        trace = services.get_trace(services.TraceRequest("minilm", IT_SENTENCE, False, services.LESSON_MAX_TOKENS))
        query = services.find_token(trace.tokens.strings, "it")
        steps = services.query_steps(trace, layer, head, query)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    keys = list(trace.key_tokens.strings)
    order = np.argsort(-steps.weights[0])[:5]
    frame = pd.DataFrame({"key": [f"{j} · {keys[j]}" for j in order], "q·k": steps.raw[0, order],
                          f"× {steps.scale:.3f}": steps.scaled[0, order], "softmax weight": steps.weights[0, order]})
    st.dataframe(frame, hide_index=True, key=Lessons.steps_table,
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns[1:]})
    st.caption(f"MiniLM, layer {layer} head {head}, query “it”: the raw dot products, times the scale 1/√d, "
               "then the softmax over all keys (only the five largest weights are listed).")


def softmax_demo() -> None:
    """Four fixed scores through the softmax at a scale the student moves (the calculator's own steps)."""
    st.slider("Scale (multiplies the scores)", 0.0, 5.0, 1.0, 0.1, key=Lessons.softmax_scale, **PERSIST)
    scale = float(np.clip(float(st.session_state.get("lesson_softmax_scale") or 0.0), 0.0, 5.0))
    k = np.array(SOFTMAX_SCORES, dtype=float)[:, None]  # (n, 1): one-number keys, so q·k = the score
    steps = services.calculator_steps(np.ones((1, 1)), k, np.eye(len(k)), scale, False)
    weights = steps.weights[0]
    fig = go.Figure(go.Bar(x=list(SOFTMAX_KEYS), y=weights, marker_color="#1f3b73",
                           text=[f"{w:.2f}" for w in weights], textposition="outside"))
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=10), yaxis=dict(range=[0, 1.1], title="weight"),
                      title=f"softmax({', '.join(f'{s:g}' for s in SOFTMAX_SCORES)} × {scale:.1f})")
    show_chart(fig, key=Lessons.softmax)
    st.caption("Scores 2, 1, 0.5 and −1 for four keys. Scale 0: every key gets 1/4. Scale 5: nearly all weight "
               "on the best key.")


DEMOS = {"steps": steps_demo, "softmax": softmax_demo}


# ---------------------------------------------------------------- page


def show_step(k: int, step: Step) -> None:
    """One step: its title, text, links, live chart and knowledge check."""
    st.header(f"{k}. {step.title}")
    st.markdown(step.text)
    for link in step.links:  # opens the page with the step's sentence, model, layer, head or tab
        open_page(link.page, link.label, link.params, icon=":material/open_in_new:")
    if step.demo in DEMOS:
        DEMOS[step.demo]()
    knowledge_check(step)


def main() -> None:
    st.title("Lessons")
    st.write("A guided path through attention, from why RNNs needed it to pretraining objectives. Each step says what "
             "to look at, opens the page that shows it, and ends with a question to check yourself.")
    k = current_step()
    progress(k)
    navigation(k, "top")
    show_step(k, STEPS[k - 1])
    st.divider()
    navigation(k, "bottom")


main()
