"""Lessons as data, and as a readable TOML file a teacher can keep under version control (issue 21, 3).

A lesson is a title and steps. A step is a heading, a note (markdown for the built-in lesson, shown literally
for any other), links that open a page of the app in a given state (the page and its URL parameters,
``app/url_params.py``) and, optionally, a knowledge check:

- ``choice``: a multiple-choice question, its answer (the option's number, counting from 1) and an explanation;
- ``predict``: "click the token the query looks at". The file names the model, sentence, layer, head and query
  word; the answer is computed from the real model when a student answers, never written in the file
  (``expect`` is the key the explanation talks about; tests check the model still agrees);
- ``look``: "where will the captioner look when it writes this word?" on a held-out scene (model, scene, word);
  the answer is the region of the word's attention peak in the real model, read when a student answers.

The built-in lesson is such a file (``assets/lessons/attention-in-eleven-steps.toml``), read by the same
:func:`read_lesson` as a teacher's upload or a lesson saved in the class store. It checks the size, the TOML
syntax, every key (an unknown one is named, with the keys allowed there), types, lengths, the page of each
link and each link parameter with the page's own reader, and raises :class:`LessonFileError`, whose message
names the step and the key. :func:`write_lesson` writes TOML by hand (Python's ``tomllib`` reads, it does not
write), escaping every string, so ``read_lesson(write_lesson(lesson)) == lesson``.

Plain data and parsing only: no widgets (pages draw lessons: ``app/views/lessons/page.py``,
``app/views/lessons/draft.py``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from app.routes import PAGES
from app.url_params import TEXT_LINK_MAX, catalog_model
from app.url_state import BY_NAME
from app.views.lessons.keys import ID_RE, MAX_STEPS

FORMAT = 1  # the file format's version (``format = 1`` at the top of a file)
MAX_BYTES = 200_000  # a lesson file (the built-in one is ~15 kB)
MAX_LINKS = 4  # per step
MAX_PARAMS = 24  # per link
TITLE_CHARS, TEXT_CHARS, LABEL_CHARS = 160, 4_000, 200
QUESTION_CHARS, OPTION_CHARS, EXPLAIN_CHARS = 400, 160, 1_000
MIN_OPTIONS, MAX_OPTIONS = 2, 8
SENTENCE_CHARS, WORD_CHARS = 400, 40
PARAM_CHARS = TEXT_LINK_MAX  # a link's longest value
DEMOS = ("steps", "softmax")  # the small live charts the Lessons page can draw inside a step (lessons.DEMOS)


class LessonFileError(ValueError):
    """A lesson file (or a lesson's text) that cannot be read, with a message for the person who gave it."""


@dataclass(frozen=True)
class Link:
    """A link that opens one page in a given state.

    Attributes:
        page: the page file under ``app/views/`` (``"explore.py"``).
        label: the link's text.
        params: URL query parameters (widget session keys → values, as strings).
    """

    page: str
    label: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Predict:
    """ "Click the token you think the query looks at", then the real head's row is revealed.

    Attributes:
        question: what the student is asked.
        model: model id (``"bahdanau-translator"`` reads the RNN's alignment instead of a head).
        text: the sentence.
        word: the query token (its ``occurrence``-th appearance); for the RNN, the French target word.
        expect: the key token the explanation talks about (tests check it is the head's top key).
        explain: shown after the reveal.
        layer, head: the head (ignored for the RNN).
        causal: the causal mask as Explore would trace it (None: the model's own setting).
    """

    question: str
    model: str
    text: str
    word: str
    expect: str
    explain: str
    layer: int = 0
    head: int = 0
    causal: bool | None = None
    occurrence: int = 0


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question with an explained answer (``answer``: the option's index, from 0)."""

    question: str
    options: tuple[str, ...]
    answer: int
    explain: str = ""


@dataclass(frozen=True)
class Look:
    """ "Where will it look?": the student picks the region of a held-out scene the captioner looks at while it writes
    ``word``; the answer is read from the model when the student answers (``services.where_it_looks``), never written.

    Attributes:
        question: what the student is asked.
        model: the captioner's id.
        scene: the held-out scene's number.
        word: the written word whose attention map is revealed.
        explain: shown after the reveal.
    """

    question: str
    model: str
    scene: int
    word: str
    explain: str = ""


@dataclass(frozen=True)
class Step:
    """One step of a lesson.

    Attributes:
        id: a stable name (answers are kept under it).
        title: the step's heading ("" : the page says "Step k").
        text: what to look at and why (the teacher's note).
        links: pages that show it, opened in the right state.
        check: the knowledge check that ends the step, or None.
        demo: the name of a small live chart drawn inline (:data:`DEMOS`), or "".
    """

    id: str
    title: str
    text: str
    links: tuple[Link, ...]
    check: Predict | Choice | Look | None = None
    demo: str = ""


@dataclass(frozen=True)
class Lesson:
    """A lesson: a title, an optional description and its steps in order."""

    title: str
    steps: tuple[Step, ...]
    description: str = ""


# ---------------------------------------------------------------- reading


def read_lesson(data: bytes | str, *, check_values: bool = True) -> Lesson:
    """The lesson in ``data`` (a file's bytes or its text); :class:`LessonFileError` says what is wrong.

    Args:
        data: the TOML text (UTF-8 bytes, or a string).
        check_values: read every link parameter with its page's reader and every model id against the
            catalog (off only for tests of the format itself).
    """
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise LessonFileError(f"The file is {size:,} bytes long; a lesson file may be at most {MAX_BYTES:,} bytes.")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise LessonFileError("The file is not UTF-8 text: a lesson file is a TOML text file (.toml).") from None
    data = data.removeprefix("\ufeff")
    try:
        doc = tomllib.loads(data)
    except tomllib.TOMLDecodeError as exc:
        raise LessonFileError(
            f"The file is not readable TOML: {exc}. A lesson file starts with "
            'format = 1 and title = "…", then one [[steps]] table per step.'
        ) from None
    return _lesson(doc, check_values)


def _lesson(doc: dict, check_values: bool) -> Lesson:
    _keys(doc, ("format", "title", "description", "steps"), ("title", "steps"), "The file")
    version = doc.get("format", FORMAT)
    if version != FORMAT:
        raise LessonFileError(f"The file says format = {_show(version)}; this app reads format = {FORMAT}.")
    title = _text(doc, "title", "The file", TITLE_CHARS)
    description = _text(doc, "description", "The file", TEXT_CHARS, required=False)
    steps = doc["steps"]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise LessonFileError("The file has no steps: each step is a [[steps]] table.")
    if len(steps) > MAX_STEPS:
        raise LessonFileError(f"The file has {len(steps)} steps; a lesson may have at most {MAX_STEPS}.")
    out = tuple(_step(raw, i, check_values) for i, raw in enumerate(steps, start=1))
    seen: set[str] = set()
    for i, step in enumerate(out, start=1):
        if step.id in seen:
            raise LessonFileError(
                f"Step {i}: the id {_show(step.id)} is used by an earlier step; give each step its own."
            )
        seen.add(step.id)
    return Lesson(title, out, description)


def _step(raw: dict, number: int, check_values: bool) -> Step:
    where = f"Step {number}"
    _keys(raw, ("id", "title", "text", "links", "check", "demo"), (), where)
    sid = raw.get("id", f"step-{number}")
    if not isinstance(sid, str) or not ID_RE.fullmatch(sid):
        raise LessonFileError(f"{where}: id must be 1 to 40 letters, digits, - or _ (it is {_show(sid)}).")
    title = _text(raw, "title", where, TITLE_CHARS, required=False)
    text = _text(raw, "text", where, TEXT_CHARS, required=False)
    if not title and not text:
        raise LessonFileError(f"{where}: give it a title or a text.")
    links = raw.get("links", [])
    if not isinstance(links, list) or not all(isinstance(link, dict) for link in links):
        raise LessonFileError(f"{where}: links must be [[steps.links]] tables.")
    if len(links) > MAX_LINKS:
        raise LessonFileError(f"{where} has {len(links)} links; a step may have at most {MAX_LINKS}.")
    demo = _text(raw, "demo", where, 40, required=False)
    if demo and demo not in DEMOS:
        raise LessonFileError(f"{where}: there is no demo {_show(demo)}; the demos are {', '.join(DEMOS)}.")
    check = raw.get("check")
    return Step(
        sid,
        title,
        text,
        tuple(_link(link, f"{where}, link {k}", check_values) for k, link in enumerate(links, 1)),
        None if check is None else _check(check, f"{where}, check", check_values),
        demo,
    )


def page_stems() -> tuple[str, ...]:
    """The app's pages as their file stems in ``app/views/`` (``explore``, ``lessons``, ...)."""
    return tuple(file.removesuffix(".py") for file, _, _ in PAGES)


def _link(raw: dict, where: str, check_values: bool) -> Link:
    _keys(raw, ("page", "label", "params"), ("page", "label"), where)
    page = _text(raw, "page", where, 40)
    if page not in page_stems():
        raise LessonFileError(f"{where}: there is no page {_show(page)}; the pages are {', '.join(page_stems())}.")
    label = _text(raw, "label", where, LABEL_CHARS)
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise LessonFileError(f'{where}: params must be a table, e.g. params = {{ layer = "3", head = "1" }}.')
    if len(params) > MAX_PARAMS:
        raise LessonFileError(f"{where} has {len(params)} parameters; a link may have at most {MAX_PARAMS}.")
    out: dict[str, str] = {}
    for name, value in params.items():
        if isinstance(value, bool):
            value = "1" if value else "0"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str) or len(value) > PARAM_CHARS:
            raise LessonFileError(
                f"{where}: the parameter {_show(name)} must be text of at most {PARAM_CHARS:,} characters."
            )
        check_param(page, name, value, where, check_values)
        out[name] = value
    return Link(f"{page}.py", label, out)


def check_param(page: str, name: str, value: str, where: str, check_values: bool = True) -> None:
    """:class:`LessonFileError` unless ``page``'s links carry ``name`` and (``check_values``) its reader accepts ``value``
    (its ``check`` where the reader depends on the session, e.g. a lesson step's bound)."""
    param = BY_NAME.get(name)
    if param is None or (param.pages is not None and page not in param.pages):
        raise LessonFileError(f"{where}: the page {page} has no link parameter {_show(name)}.")
    if not check_values:
        return
    try:
        (param.check or param.read)(value)
    except ValueError as exc:  # every reader refuses a value with ValueError (app/url_params.py; a test pins it)
        raise LessonFileError(
            f"{where}: {name} = {_show(value)} is not a value the page reads ({_short(exc)})."
        ) from None


def _check(raw: object, where: str, check_values: bool) -> Predict | Choice | Look:
    if not isinstance(raw, dict):
        raise LessonFileError(f"{where}: a check is a [steps.check] table.")
    kind = raw.get("kind")
    if kind == "choice":
        _keys(raw, ("kind", "question", "options", "answer", "explain"), ("question", "options", "answer"), where)
        options = raw["options"]
        if not isinstance(options, list) or not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
            raise LessonFileError(f"{where}: options must be a list of {MIN_OPTIONS} to {MAX_OPTIONS} answers.")
        for k, option in enumerate(options, start=1):
            if not isinstance(option, str) or not option.strip() or len(option) > OPTION_CHARS:
                raise LessonFileError(f"{where}: option {k} must be text of 1 to {OPTION_CHARS} characters.")
        if len({o.strip().casefold() for o in options}) < len(options):
            raise LessonFileError(f"{where}: two options are the same; make each one different.")
        answer = raw["answer"]
        if isinstance(answer, bool) or not isinstance(answer, int) or not 1 <= answer <= len(options):
            raise LessonFileError(
                f"{where}: answer is the number of the right option, 1 to {len(options)} (it is {_show(answer)})."
            )
        return Choice(
            _text(raw, "question", where, QUESTION_CHARS),
            tuple(options),
            answer - 1,
            _text(raw, "explain", where, EXPLAIN_CHARS, required=False),
        )
    if kind == "predict":
        allowed = (
            "kind",
            "question",
            "model",
            "text",
            "word",
            "occurrence",
            "layer",
            "head",
            "causal",
            "expect",
            "explain",
        )
        _keys(raw, allowed, ("question", "model", "text", "word", "expect"), where)
        model = _text(raw, "model", where, 300)
        if check_values:
            check_model(model, where)
        numbers = {name: raw.get(name, 0) for name in ("layer", "head", "occurrence")}
        for name, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4096:
                raise LessonFileError(f"{where}: {name} must be a whole number from 0 (it is {_show(value)}).")
        causal = raw.get("causal")
        if causal is not None and not isinstance(causal, bool):
            raise LessonFileError(f"{where}: causal must be true or false, or left out (the model's own mask).")
        return Predict(
            _text(raw, "question", where, QUESTION_CHARS),
            model,
            _text(raw, "text", where, SENTENCE_CHARS),
            _text(raw, "word", where, WORD_CHARS),
            _text(raw, "expect", where, WORD_CHARS),
            _text(raw, "explain", where, EXPLAIN_CHARS, required=False),
            numbers["layer"],
            numbers["head"],
            causal,
            numbers["occurrence"],
        )
    if kind == "look":
        _keys(
            raw,
            ("kind", "question", "model", "scene", "word", "explain"),
            ("question", "model", "scene", "word"),
            where,
        )
        model = _text(raw, "model", where, 300)
        if check_values:
            check_model(model, where)
        scene = raw["scene"]
        if isinstance(scene, bool) or not isinstance(scene, int) or not 0 <= scene <= 100_000:
            raise LessonFileError(
                f"{where}: scene is a held-out scene's number, a whole number from 0 (it is {_show(scene)})."
            )
        return Look(
            _text(raw, "question", where, QUESTION_CHARS),
            model,
            scene,
            _text(raw, "word", where, WORD_CHARS),
            _text(raw, "explain", where, EXPLAIN_CHARS, required=False),
        )
    raise LessonFileError(f'{where}: kind must be "choice", "predict" or "look" (it is {_show(kind)}).')


def check_model(model: str, where: str) -> None:
    """:class:`LessonFileError` unless ``model`` is a model of this server's catalog."""
    try:
        catalog_model()(model)
    except ValueError:
        raise LessonFileError(f"{where}: there is no model {_show(model)} on this server.") from None


def _keys(table: dict, allowed: tuple[str, ...], required: tuple[str, ...], where: str) -> None:
    unknown = [k for k in table if k not in allowed]
    if unknown:
        raise LessonFileError(
            f"{where}: unknown key {_show(unknown[0])}; the keys allowed here are {', '.join(allowed)}."
        )
    missing = [k for k in required if k not in table]
    if missing:
        raise LessonFileError(f"{where}: {missing[0]} is missing.")


def _text(table: dict, key: str, where: str, limit: int, required: bool = True) -> str:
    value = table.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise LessonFileError(f"{where}: {key} must be text" + (", not empty." if required else "."))
    if len(value) > limit:
        raise LessonFileError(f"{where}: {key} is {len(value):,} characters long; at most {limit:,} fit.")
    if any(ord(c) < 32 and c not in "\t\n" for c in value):
        raise LessonFileError(f"{where}: {key} holds control characters.")
    return value


def _show(value: object, limit: int = 40) -> str:
    """A value from the file, quoted and cut, for a message (pages show messages literally)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(exc: BaseException, limit: int = 120) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- writing

HEADER = """\
# A lesson for Attention Playground. Open it on the Lessons page ("Write a lesson", "Open a lesson file").
# Each [[steps]] table is one step: a title, a text, links that open a page of the app in a given state
# ([[steps.links]]: the page and its URL parameters) and an optional knowledge check ([steps.check]):
#   kind = "choice": question, options, answer (the number of the right option, from 1), explain;
#   kind = "predict": "which token does this word look at?"; the answer is read from the real model when a
#   student answers: the file names the model, sentence (text), layer, head and word, never the answer;
#   kind = "look": "where will the captioner look when it writes this word?": model, scene, word (answer read
#   from the model too).
"""

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str, multiline: bool = False) -> str:
    """``text`` as a TOML basic string (``multiline``: a ``\"\"\"`` string keeping its line breaks, for notes)."""

    def escape(c: str) -> str:
        if multiline and c == "\n":
            return c
        if c in _ESCAPES:
            return _ESCAPES[c]
        if ord(c) < 32 or ord(c) == 127:
            return f"\\u{ord(c):04X}"
        if 0xD800 <= ord(c) <= 0xDFFF:  # a lone surrogate is no Unicode scalar: TOML cannot hold it
            return "\\uFFFD"
        return c

    body = "".join(escape(c) for c in text)
    return f'"""\n{body}"""' if multiline else f'"{body}"'


def _key(name: str) -> str:
    return name if _BARE.fullmatch(name) else toml_string(name)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    text = str(value)
    return toml_string(text, multiline="\n" in text)


def write_lesson(lesson: Lesson) -> str:
    """The lesson as the text of a lesson file (TOML, readable; :func:`read_lesson` reads it back equal)."""
    out = [HEADER, f"format = {FORMAT}", f"title = {_value(lesson.title)}"]
    if lesson.description:
        out.append(f"description = {_value(lesson.description)}")
    for step in lesson.steps:
        out += ["", "[[steps]]", f"id = {_value(step.id)}"]
        if step.title:
            out.append(f"title = {_value(step.title)}")
        if step.text:
            out.append(f"text = {_value(step.text)}")
        if step.demo:
            out.append(f"demo = {_value(step.demo)}")
        for link in step.links:
            out += [
                "",
                "[[steps.links]]",
                f"page = {_value(link.page.removesuffix('.py'))}",
                f"label = {_value(link.label)}",
            ]
            if link.params:
                out.append(f"params = {_value(dict(link.params))}")
        if step.check is not None:
            out += ["", "[steps.check]", *_check_lines(step.check)]
    return "\n".join(out) + "\n"


def _check_lines(check: Predict | Choice | Look) -> list[str]:
    if isinstance(check, Choice):
        lines = [
            'kind = "choice"',
            f"question = {_value(check.question)}",
            f"options = {_value(list(check.options))}",
            f"answer = {check.answer + 1}",
        ]
    elif isinstance(check, Look):
        lines = [
            'kind = "look"',
            f"question = {_value(check.question)}",
            f"model = {_value(check.model)}",
            f"scene = {check.scene}",
            f"word = {_value(check.word)}",
        ]
    else:
        lines = [
            'kind = "predict"',
            f"question = {_value(check.question)}",
            f"model = {_value(check.model)}",
            f"text = {_value(check.text)}",
            f"word = {_value(check.word)}",
        ]
        if check.occurrence:
            lines.append(f"occurrence = {check.occurrence}")
        lines += [f"layer = {check.layer}", f"head = {check.head}"]
        if check.causal is not None:
            lines.append(f"causal = {_value(check.causal)}")
        lines.append(f"expect = {_value(check.expect)}")
    if check.explain:
        lines.append(f"explain = {_value(check.explain)}")
    return lines


def file_name(lesson: Lesson) -> str:
    """A file name for the download: the title in lower case, words joined by dashes, ``.toml``."""
    words = re.findall(r"[a-z0-9]+", lesson.title.lower())
    return ("-".join(words)[:60].strip("-") or "lesson") + ".toml"
