"""Which heads carry the answer? Activation patching, guided: two prompts of one length (a clean one and a corrupted
one), the answer and a wrong word; each head's output, and the residual stream at each layer and position, taken
from the clean run into the corrupted one, and the share of the logit difference each restores."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.state import PERSIST, choose
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import attempt
from app.ui.heatmap import safe_label
from app.ui.safe_text import quoted
from app.views.why import data
from app.views.why.keys import MODELS, PROMPT_CHARS, Why

SCALE = [[0.0, "#b2182b"], [0.5, "#f7f7f7"], [1.0, "#2166ac"]]  # red: moves away from clean, blue: restores it


def grid(z: np.ndarray, x: list[str], y: list[str], title: str) -> dict:
    """A share grid with its numbers in the cells (−1 … 1 on one diverging scale: 0 white, 1 the clean run)."""
    return {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                "x": x,
                "y": y,
                "zmin": -1,
                "zmax": 1,
                "colorscale": SCALE,
                "text": [[f"{v:.2f}" for v in row] for row in z],
                "texttemplate": "%{text}",
                "hovertemplate": "%{y}, %{x}: restores %{z:.3f}<extra></extra>",
                "colorbar": {"title": {"text": "restored"}},
            }
        ],
        "layout": {
            "title": {"text": title},
            "height": max(280, 130 + 40 * len(y)),
            "xaxis": {"type": "category", "side": "top"},
            "yaxis": {"type": "category", "autorange": "reversed"},
            "margin": {"l": 80, "r": 20, "t": 110, "b": 20},
        },
    }


FIELDS = {Why.clean: "clean", Why.corrupt: "corrupt", Why.answer: "answer", Why.wrong: "wrong"}


def use_example() -> None:
    """The chosen model's built-in experiment in the four boxes (each model's words differ: the stories model's names,
    the induction model's letters)."""
    built_in = data.example(st.session_state[Why.model])
    for key, field in FIELDS.items():
        st.session_state[key] = getattr(built_in, field)


def main() -> None:
    st.title("Which heads carry the answer?")
    st.write(
        "Run the model on a **clean** prompt and on a **corrupted** one that differs in one place, then copy one "
        "head's output from the clean run into the corrupted run and see how much of the right answer comes back."
    )
    choose(Why.model, list(MODELS))
    if Why.clean not in st.session_state:  # a first visit (a link's prompts are already there)
        use_example()
    model_id = st.selectbox("Model", MODELS, key=Why.model, on_change=use_example, **PERSIST)
    built_in = data.example(model_id)
    st.button("Use this model's example", icon=":material/restart_alt:", on_click=once(use_example))
    left, right = st.columns(2)
    clean = left.text_input("Clean prompt", key=Why.clean, max_chars=PROMPT_CHARS, **PERSIST)
    corrupt = right.text_input("Corrupted prompt", key=Why.corrupt, max_chars=PROMPT_CHARS, **PERSIST)
    answer = left.text_input("Answer (the clean prompt's next word)", key=Why.answer, max_chars=40, **PERSIST)
    wrong = right.text_input("Wrong word (the corrupted prompt's)", key=Why.wrong, max_chars=40, **PERSIST)
    found = attempt(lambda: data.patched(model_id, clean, corrupt, answer, wrong), "Patching every head and site…")
    if found is None:  # the engine said what to change (prompts of different lengths, a word of two tokens, …)
        return
    heads, residual, tokens = found
    layers = [f"layer {i}" for i in range(heads.shape[0])]
    show_chart(
        grid(heads, [f"head {h}" for h in range(heads.shape[1])], layers, "Each head's output patched"),
        key=Why.heads_chart,
    )
    top = np.dstack(np.unravel_index(np.argsort(-heads, axis=None)[:3], heads.shape))[0]
    st.caption(
        f"Each cell: the share of the logit difference between {quoted(answer)} and {quoted(wrong)} that comes back "
        "when only that head's output is copied from the clean run (0: as corrupted, 1: as clean). The largest: "
        + ", ".join(f"head {layer}.{head} ({heads[layer, head]:.2f})" for layer, head in top)
        + "."
        + (
            f" {built_in.notice}"
            if (clean, corrupt, answer, wrong) == (built_in.clean, built_in.corrupt, built_in.answer, built_in.wrong)
            else ""
        )
    )
    labels = [f"{i} {safe_label(t)}" for i, t in enumerate(tokens)]
    rows = [f"layer {i} in" for i in range(residual.shape[0] - 1)] + ["after the last"]
    show_chart(
        grid(residual, labels, rows, "The residual stream patched, per layer and position"), key=Why.residual_chart
    )
    st.caption(
        "Row *layer L in*: the stream entering layer L (row 0: the embeddings), copied at one position. Follow the "
        "bright cells downwards: where the answer's information sits at each depth, and where it moves to the last "
        "position, which predicts the next word (its last row restores all of it)."
    )


main()
