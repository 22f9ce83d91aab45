"""Free-text questions on the Class page: the student's box, the words of the answers as the room sees them (a bar
per word, most frequent first), and the teacher's moderation list. What students type is shown as literal text:
Plotly labels HTML-escaped (``safe_label``), markdown escaped (``md``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable

import plotly.graph_objects as go
import streamlit as st

from app.runtime.rooms import class_store
from app.store.free_text import TEXT_CHARS, TextAnswer, TextAnswers
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import calm_errors, show_error
from app.ui.heatmap import safe_label
from app.ui.safe_text import md
from app.ui.theme import presenting
from app.views.classroom.browser_cookie import browser_id, refused
from app.views.classroom.keys import ROOM

TOP_WORDS = 15  # bars of the words chart
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")  # letters and digits, with inner apostrophes and hyphens
MODERATE_S = 1.0  # seconds between the moderation list's looks at the answers


@functools.cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # scikit-learn's list, loaded on first use

    return frozenset(ENGLISH_STOP_WORDS)


def word_counts(texts: Iterable[str]) -> list[tuple[str, int]]:
    """How many answers use each word (lower case; single letters and common English words left out), the most used
    first, then A→Z."""
    counts = Counter(
        w for text in texts for w in {m.casefold() for m in WORD.findall(text) if len(m) > 1} - _stop_words()
    )
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def answered(question) -> int:
    """How many students have answered the free-text question."""
    return len(TextAnswers(class_store()).answers(question.id))


def words_chart(question, key: str) -> None:
    """The words of the answers the class may see, a bar each (:data:`TOP_WORDS` at most)."""
    answers = TextAnswers(class_store()).answers(question.id)
    words = word_counts(a.text for a in answers if a.visible)[:TOP_WORDS]
    held = sum(not a.visible for a in answers)
    if words:
        labels, counts = [safe_label(w) for w, _ in words], [n for _, n in words]
        px = 22 if presenting() else 28
        fig = go.Figure(go.Bar(x=counts, y=labels, orientation="h", hovertemplate="%{y}: %{x} answers<extra></extra>"))
        fig.update_layout(
            height=80 + px * len(words),
            margin=dict(l=10, r=10, t=10, b=30),
            xaxis=dict(title="answers using the word", rangemode="tozero", dtick=1 if counts[0] < 10 else None),
            yaxis=dict(autorange="reversed", type="category"),
        )
        show_chart(fig, key=key, width="stretch")
    hidden = f" {held} answer{'' if held == 1 else 's'} hidden until the teacher shows them." if held else ""
    st.caption(
        "The words of the answers, the most used first: a bar's length is how many answers use the word (common "
        "words such as “the” left out)." + hidden
        if words
        else "No answer on screen yet." + hidden
    )


def text_box(code: str, question) -> None:
    """A student's "Your answer" box and "Send my answer" button, or their answer once the question is closed."""
    texts = TextAnswers(class_store())
    mine = texts.mine(question.id, browser_id())
    if question.closed or question.revealed:
        said = "You did not answer in time." if mine is None else f"Your answer is in: {md(mine.text)}"
        st.info(f"This question is closed: the teacher stopped taking answers. {said}", icon=":material/lock:")
        return
    text = st.text_input("Your answer", max_chars=TEXT_CHARS, key=f"{ROOM.write}{question.id}")
    if st.button("Send my answer", key=f"{ROOM.send}{question.id}", type="primary"):
        with refused():
            texts.answer(code, question.id, browser_id(), text)
            mine = texts.mine(question.id, browser_id())
    if mine is not None:
        wait = "" if mine.visible else " The teacher reads it before the class sees it."
        st.caption(f"Your answer is in: {md(mine.text)}.{wait} You can change it until the question closes.")


def _state(answer: TextAnswer) -> str:
    if answer.shown is not None:
        return "shown by you" if answer.shown else "hidden by you"
    return "held back by the word filter" if answer.flagged else "on screen"


@st.fragment(run_every=MODERATE_S)
def moderation(code: str, token: str, masked: bool) -> None:
    """The free-text question's answers for the teacher, each with Hide or Show; ``masked`` (the projector): a
    hidden answer's text is not printed."""
    with calm_errors("class moderation"), refused(level="error"):
        store = class_store()
        question = store.current_question(code)
        if question is None or question.kind != "text":
            return
        answers = TextAnswers(store).answers(question.id)
        st.markdown("**The answers, for you to moderate**")
        st.caption(
            "Hide any answer from the class's screens, or show one the word filter held back."
            + (" Hidden answers are not printed on the projector: read them on your control link." if masked else "")
        )
        for answer in answers:
            words, button = st.columns([5, 1], vertical_alignment="center")
            hide = masked and not answer.visible
            text = f"({len(answer.text)} characters)" if hide else md(answer.text)
            words.markdown(f"{text} · *{_state(answer)}*")
            button.button(
                "Hide" if answer.visible else "Show",
                key=f"{ROOM.moderate}{answer.handle}",
                on_click=once(_show),
                args=(code, token, question.id, answer.handle, not answer.visible),
            )
        if problem := st.session_state.pop(ROOM.moderate_error, None):
            show_error(problem)


def _show(code: str, token: str, question_id: str, handle: str, shown: bool) -> None:
    with refused(ROOM.moderate_error):
        TextAnswers(class_store()).show(code, token, question_id, handle, shown)
