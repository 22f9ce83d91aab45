"""The lesson editor's knowledge check of a step: one field per key of a lesson file's ``[steps.check]`` table.

:func:`read_check` turns the submitted fields into the check; :func:`model_problem` asks the real model what a
student's answer will ask it, so a check it cannot answer is refused here, not in front of the class.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import fields as fields_of
from dataclasses import replace

import streamlit as st

from app.runtime.models import list_models
from app.state import DEFAULT_MODEL, defaults
from app.ui.guard import plain_error
from app.views.bahdanau.data import BAHDANAU_MODELS
from app.views.captions.data import CAPTION_MODEL, HELD_OUT_SCENES, where_it_looks
from app.views.lessons.data import lesson_attention, row_for
from app.views.lessons.keys import Draft
from app.views.lessons.lesson_file import (
    CHECK_NUMBERS,
    CHECK_TEXTS,
    MAX_NUMBER,
    MAX_OPTIONS,
    Check,
    Choice,
    Look,
    Predict,
    Step,
    kind_of,
    require,
)
from engine.families import text_families

KINDS = {
    "none": "No check",
    "choice": "Multiple choice",
    "predict": "Which token does a word look at?",
    "look": "Where does the captioner look?",
}
CAUSAL = {"own": "the model's own mask", "on": "causal (each token sees only earlier ones)", "off": "not causal"}
#: the predict check's fields after its model, row by row: {field: (column width, label)}
PREDICT_ROWS = (
    {"text": (1, "Sentence the model reads")},
    {"word": (3, "Word (the query token)"), "occurrence": (1, "Occurrence")},
    {"layer": (1, "Layer"), "head": (1, "Head"), "causal": (2, "Mask")},
    {"expect": (1, "Expected key token")},
)
PREDICT_HELP = {
    "word": "A token of the sentence as the model reads it; for a translator, a word of its French output.",
    "occurrence": "0: its first.",
    "expect": "The token your explanation talks about (the file's expect); the editor says if the head's top key "
    "is another one.",
}


#: each field's first value for a step without that key (the field's key: ``Draft.edit_<name>`` + the step's id)
BLANK = {"question": "", "options": "", "right": 1, "explain": "", "model": DEFAULT_MODEL, "text": "", "word": ""}
BLANK |= {"occurrence": 0, "layer": 0, "head": 0, "causal": None, "expect": "", "captioner": CAPTION_MODEL, "scene": 0}


def _defaults(step: Step) -> dict[str, object]:
    """Each field's first value: the step's own check where it has that key, else :data:`BLANK`'s."""
    check = step.check
    values = {**BLANK, "kind": kind_of(check)}
    if check is not None:
        values |= {f.name: getattr(check, f.name) for f in fields_of(check) if f.name in BLANK}
    if isinstance(check, Choice):
        values |= {"options": "\n".join(check.options), "right": check.answer + 1}
    if isinstance(check, Look):
        values |= {"captioner": check.model, "model": DEFAULT_MODEL}
    values["causal"] = {None: "own", True: "on", False: "off"}[values["causal"]]
    return {getattr(Draft, f"edit_{name}") + step.id: value for name, value in values.items()}


def _models(families: Collection[str], current: str | None, also: Collection[str] = ()) -> dict[str, str]:
    """{id: label} of the catalog's models of ``families`` and the ids in ``also``, ``current`` (a file's own) kept."""
    models = {spec.id: spec.label for spec in list_models() if spec.family in families or spec.id in also}
    return models if current is None or current in models else {current: current, **models}


def predict_models(current: str | None = None) -> dict[str, str]:
    """{id: label} of the models a predict check reads: a self-attention text model or an RNN translator."""
    return _models(text_families() - {"encoder-decoder"}, current, BAHDANAU_MODELS.values())


def kind_picker(step: Step) -> str:
    """The kind of check (above the step's form, so a change shows that kind's fields at once)."""
    defaults(_defaults(step))
    return st.radio(
        "Knowledge check",
        list(KINDS),
        format_func=KINDS.get,
        key=Draft.edit_kind + step.id,
        horizontal=True,
        help="Each kind has the fields of a lesson file's [steps.check] table. The model's checks are read from the "
        "real model when a student answers; the editor asks the model first, so a check it cannot answer is refused.",
    )


def _field(place, sid: str, name: str, label: str, help_text: str | None = None) -> None:
    """One field of a check in ``place`` (``st`` or a column), its widget picked by its name."""
    key = getattr(Draft, f"edit_{name}") + sid
    if name in CHECK_NUMBERS:
        place.number_input(label, min_value=0, max_value=MAX_NUMBER, key=key, help=help_text)
    elif name == "causal":
        place.selectbox(label, list(CAUSAL), format_func=CAUSAL.get, key=key, help=help_text)
    elif name == "text":
        place.text_area(label, key=key, max_chars=CHECK_TEXTS[name], height=68, help=help_text)
    else:
        place.text_input(label, key=key, max_chars=CHECK_TEXTS[name], help=help_text)


def fields(step: Step, kind: str) -> None:
    """The fields of a ``kind`` check, inside the step's edit form."""
    sid = step.id
    if kind == "none":
        st.caption("This step ends without a check. Pick a kind above to add one; Save removes the step's check.")
        return
    _field(st, sid, "question", "Question")
    if kind == "choice":
        st.text_area("Its options, one per line", key=Draft.edit_options + sid, height=80)
        st.number_input("Number of the right option", min_value=1, max_value=MAX_OPTIONS, key=Draft.edit_right + sid)
    elif kind == "predict":
        models = predict_models(st.session_state[Draft.edit_model + sid])
        st.selectbox("Model", list(models), format_func=models.get, key=Draft.edit_model + sid)
        for row in PREDICT_ROWS:
            places = st.columns([width for width, _ in row.values()]) if len(row) > 1 else [st]
            for place, (name, (_, label)) in zip(places, row.items()):
                _field(place, sid, name, label, PREDICT_HELP.get(name))
    else:
        models = _models(("captioner",), st.session_state[Draft.edit_captioner + sid])
        st.selectbox("Captioner", list(models), format_func=models.get, key=Draft.edit_captioner + sid)
        scene, word = st.columns([1, 2])
        most = max(HELD_OUT_SCENES - 1, st.session_state[Draft.edit_scene + sid])  # a file's own, checked
        scene.number_input("Held-out scene", min_value=0, max_value=most, key=Draft.edit_scene + sid)
        _field(word, sid, "word", "Word it writes", "A word of the scene's caption.")
    st.text_area("Explanation (shown after the answer)", key=Draft.edit_explain + sid, max_chars=CHECK_TEXTS["explain"])


def clean(value: object, lines: bool = True) -> str:
    """Typed text without control characters, trimmed (``lines``: line breaks kept, else spaces folded)."""
    text = str(value or "").replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(c for c in text if c in "\n\t" or c.isprintable())
    return text.strip() if lines else " ".join(text.split())


def _whole(value: object, name: str, most: int) -> int:
    whole = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= most
    require(whole, f"{name} must be a whole number from 0 to {most}.")
    return value


def choice_from(question: object, options: object, right: object, explain: str = "") -> Choice | None:
    """A multiple-choice check from typed fields; None when both are empty, :class:`LessonFileError` if half-done."""
    question = clean(question, False)
    lines = [clean(line, False) for line in str(options or "").splitlines() if line.strip()]
    if not question and not lines:
        return None
    require(question, "Write the question, or clear its options.")
    require(
        2 <= len(lines) <= MAX_OPTIONS,
        f"A question needs 2 to {MAX_OPTIONS} options, one per line (it has {len(lines)}).",
    )
    number = right if isinstance(right, int) and not isinstance(right, bool) else 0
    require(1 <= number <= len(lines), f"The number of the right option must be 1 to {len(lines)}.")
    return Choice(question, tuple(lines), number - 1, explain)


def read_check(sid: str) -> Check | None:
    """The check the step's submitted fields describe (None: "No check"); :class:`LessonFileError` names a field."""
    state = st.session_state

    def get(prefix: str) -> object:
        return state.get(prefix + sid)

    kind, explain = get(Draft.edit_kind), clean(get(Draft.edit_explain))
    if kind == "choice":
        check = choice_from(get(Draft.edit_question), get(Draft.edit_options), get(Draft.edit_right), explain)
        require(check, "Write the question and its options, or pick “No check”.")
        return check
    if kind not in ("predict", "look"):
        return None
    question, word = clean(get(Draft.edit_question), False), clean(get(Draft.edit_word), False)
    require(question, "Write the question students are asked.")
    require(word, "Write the word: " + ("the query token." if kind == "predict" else "a word it writes."))
    if kind == "look":
        scene = _whole(get(Draft.edit_scene), "The scene", HELD_OUT_SCENES - 1)
        return Look(question, str(get(Draft.edit_captioner) or ""), scene, word, explain)
    text, expect = clean(get(Draft.edit_text)), clean(get(Draft.edit_expect), False)
    require(text, "Write the sentence the model reads.")
    require(expect, "Write the expected key token: the token your explanation talks about.")
    numbers = {key: _whole(get(getattr(Draft, f"edit_{key}")), f"The {key}", MAX_NUMBER) for key in CHECK_NUMBERS}
    causal = {"on": True, "off": False}.get(get(Draft.edit_causal))
    return Predict(question, str(get(Draft.edit_model) or ""), text, word, expect, explain, causal=causal, **numbers)


def _tokens(strings) -> str:
    """The tokens as a student sees them, for a message."""
    return ", ".join(f"“{s.strip()}”" for s in strings)


def model_problem(check: Check | None) -> str | None:
    """What the real model says is wrong with a predict or look check, through the calls the Lessons page makes, or
    None (an empty ``expect`` is not asked)."""
    try:
        if isinstance(check, Predict):
            return _predict_problem(check)
        if isinstance(check, Look):
            if check.model not in {spec.id for spec in list_models() if spec.family == "captioner"}:
                return f"“{check.model}” is not a captioner of this server."
            where_it_looks(check.scene, check.word, check.model)
    except Exception as exc:  # noqa: BLE001 — a model that cannot run: its message, in the editor
        return plain_error(exc)
    return None


def _predict_problem(check: Predict) -> str | None:
    if check.model not in BAHDANAU_MODELS.values():
        attention = lesson_attention(check.model, check.text, check.causal)
        if not (check.layer < attention.n_layers and check.head < attention.n_heads):
            return (
                f"This model has layers 0–{attention.n_layers - 1} and heads 0–{attention.n_heads - 1} "
                f"(the check asks for layer {check.layer} head {check.head})."
            )
        queries = tuple(attention.tokens.strings)
        hits = sum(s.strip().casefold() == check.word.casefold() for s in queries)
        if hits == 0:
            return f"“{check.word}” is not one of the sentence's tokens as the model reads it: {_tokens(queries)}."
        if check.occurrence >= hits:
            return (
                f"“{check.word}” is {hits} time{'s' if hits != 1 else ''} in the sentence; the occurrence counts "
                f"from 0, so it is 0 to {hits - 1}."
            )
    try:
        row = row_for(check)
    except ValueError:  # the translator does not write the word
        return f"The translator does not write “{check.word}” for this sentence."
    if check.expect and not any(k.strip().casefold() == check.expect.casefold() for k in row.keys):
        return f"The expected key “{check.expect}” is not one of the keys: {_tokens(row.keys)}."
    return None


def _top_key(check: Predict) -> str:
    row = row_for(check)
    return row.keys[row.top].strip()


def with_top_key(check: Predict) -> Predict | str:
    """``check`` (a view's) with ``expect`` the head's real top key, or what the model says is wrong with it."""
    problem = model_problem(replace(check, expect=""))  # an empty expect is the one thing not asked
    try:
        return problem or replace(check, expect=_top_key(check))
    except Exception as exc:  # noqa: BLE001 — model_problem ran the same row: this is only a second failure
        return plain_error(exc)


def top_key_note(check: Check | None) -> str:
    """A note for a predict check whose ``expect`` is not the head's top key, else ""."""
    if not isinstance(check, Predict):
        return ""
    try:
        top = _top_key(check)
    except Exception:  # noqa: BLE001 — model_problem has spoken already
        return ""
    same = top.casefold() == check.expect.casefold()
    return "" if same else f" Note: the head's top key is “{top}”, not “{check.expect}”."
