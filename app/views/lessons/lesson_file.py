"""Lessons as data, and as a readable TOML file: a title and steps, each a heading, a note, links (a page and its URL
parameters) and an optional knowledge check (``choice``, ``predict``, ``look``: :data:`CHECK_KINDS`).

:func:`read_lesson` reads the built-in lesson, an upload and a saved lesson alike, checking every key, type, length
and link parameter (through the page's own reader); a :class:`LessonFileError` names the step and the key.
:func:`write_lesson` writes TOML by hand, so ``read_lesson(write_lesson(lesson)) == lesson``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import MISSING, dataclass, field, fields

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
MAX_DEPTH = 8  # tables and lists inside one another: a lesson file needs 6 (a step's link's parameters)
CHECK_NUMBERS, MAX_NUMBER = ("layer", "head", "occurrence"), 4_096  # a predict check's whole numbers, at most
PARAM_CHARS = TEXT_LINK_MAX  # a link's longest value
PAGE_TITLES = {file.removesuffix(".py"): title for file, title, _ in PAGES}  # the pages a link may open, by stem
DEMOS = ("steps", "softmax")  # the small live charts the Lessons page can draw inside a step (page.DEMOS)
#: a check's text keys and their longest values
CHECK_TEXTS = {"question": QUESTION_CHARS, "model": 300, "text": SENTENCE_CHARS, "word": WORD_CHARS}
CHECK_TEXTS |= {"expect": WORD_CHARS, "explain": EXPLAIN_CHARS}


class LessonFileError(ValueError):
    """A lesson file (or a lesson's text) that cannot be read, with a message for the person who gave it."""


def require(condition: object, message: str) -> None:
    """:class:`LessonFileError` with ``message`` unless ``condition``."""
    if not condition:
        raise LessonFileError(message)


@dataclass(frozen=True)
class Link:
    """A link that opens ``page`` (a file under ``app/views/``, ``"explore.py"``) with URL parameters ``params``."""

    page: str
    label: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question with an explained answer (``answer``: the option's index, from 0)."""

    question: str
    options: tuple[str, ...]
    answer: int
    explain: str = ""


@dataclass(frozen=True)
class Predict:
    """ "Click the token ``word`` (its ``occurrence``-th appearance; a French word for the RNN translator) looks at",
    then the head's real row is revealed; ``expect``: the key the explanation names; ``causal`` None: the model's."""

    question: str
    model: str
    text: str
    word: str
    expect: str
    explain: str = ""
    layer: int = 0
    head: int = 0
    causal: bool | None = None
    occurrence: int = 0


@dataclass(frozen=True)
class Look:
    """ "Where will it look?": the region of held-out ``scene`` the captioner looks at while it writes ``word``."""

    question: str
    model: str
    scene: int
    word: str
    explain: str = ""


Check = Choice | Predict | Look
CHECK_KINDS: dict[str, type[Check]] = {"choice": Choice, "predict": Predict, "look": Look}


def kind_of(check: Check | None) -> str:
    """The file's ``kind`` of ``check`` ("none" without one)."""
    return next((kind for kind, cls in CHECK_KINDS.items() if type(check) is cls), "none")


@dataclass(frozen=True)
class Step:
    """One step: a stable ``id`` (answers are kept under it), a heading, a note, links, a check and a demo's name."""

    id: str
    title: str
    text: str
    links: tuple[Link, ...]
    check: Check | None = None
    demo: str = ""


@dataclass(frozen=True)
class Lesson:
    """A lesson: a title, an optional description and its steps in order."""

    title: str
    steps: tuple[Step, ...]
    description: str = ""


# ---------------------------------------------------------------- reading


def read_lesson(data: bytes | str, *, check_values: bool = True) -> Lesson:
    """The lesson in ``data`` (bytes or text); ``check_values``: read link values and model ids against the app."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    require(size <= MAX_BYTES, f"The file is {size:,} bytes long; a lesson file may be at most {MAX_BYTES:,} bytes.")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise LessonFileError("The file is not UTF-8 text: a lesson file is a TOML text file (.toml).") from None
    nested = (
        f"The file is nested too deeply: tables or lists inside one another more than {MAX_DEPTH} levels down "
        "(a lesson file needs 6: the file, its steps, a step, its links, a link, its parameters)."
    )
    try:
        doc = tomllib.loads(data.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise LessonFileError(
            f"The file is not readable TOML: {exc}. A lesson file starts with "
            'format = 1 and title = "…", then one [[steps]] table per step.'
        ) from None
    except RecursionError:  # Python's TOML reader descends once per level: thousands of [ or { run out of stack
        raise LessonFileError(nested) from None
    require(_depth(doc) <= MAX_DEPTH, nested)  # dotted keys (a.b.c… = 1) nest without the reader descending
    _keys(doc, ("format", "title", "description", "steps"), ("title", "steps"), "The file")
    form = doc.get("format", FORMAT)
    require(form == FORMAT, f"The file says format = {_show(form)}; this app reads format = {FORMAT}.")
    steps = doc["steps"]
    require(
        isinstance(steps, list) and steps and all(isinstance(s, dict) for s in steps),
        "The file has no steps: each step is a [[steps]] table.",
    )
    require(len(steps) <= MAX_STEPS, f"The file has {len(steps)} steps; a lesson may have at most {MAX_STEPS}.")
    out = tuple(_step(raw, i, check_values) for i, raw in enumerate(steps, start=1))
    for i, step in enumerate(out, start=1):
        earlier = step.id in (s.id for s in out[: i - 1])
        require(not earlier, f"Step {i}: the id {_show(step.id)} is used by an earlier step; give each step its own.")
    description = _text(doc, "description", "The file", TEXT_CHARS, False)
    return Lesson(_text(doc, "title", "The file", TITLE_CHARS), out, description)


def _step(raw: dict, number: int, check_values: bool) -> Step:
    where = f"Step {number}"
    _keys(raw, ("id", "title", "text", "links", "check", "demo"), (), where)
    sid = raw.get("id", f"step-{number}")
    valid_id = isinstance(sid, str) and ID_RE.fullmatch(sid)
    require(valid_id, f"{where}: id must be 1 to 40 letters, digits, - or _ (it is {_show(sid)}).")
    title, text = _text(raw, "title", where, TITLE_CHARS, False), _text(raw, "text", where, TEXT_CHARS, False)
    require(title or text, f"{where}: give it a title or a text.")
    links = raw.get("links", [])
    tables = isinstance(links, list) and all(isinstance(link, dict) for link in links)
    require(tables, f"{where}: links must be [[steps.links]] tables.")
    require(len(links) <= MAX_LINKS, f"{where} has {len(links)} links; a step may have at most {MAX_LINKS}.")
    demo = _text(raw, "demo", where, 40, False)
    require(not demo or demo in DEMOS, f"{where}: there is no demo {_show(demo)}; the demos are {', '.join(DEMOS)}.")
    links = tuple(_link(link, f"{where}, link {k}", check_values) for k, link in enumerate(links, 1))
    check = None if raw.get("check") is None else _check(raw["check"], f"{where}, check", check_values)
    return Step(sid, title, text, links, check, demo)


def _link(raw: dict, where: str, check_values: bool) -> Link:
    _keys(raw, ("page", "label", "params"), ("page", "label"), where)
    page = _text(raw, "page", where, 40)
    require(page in PAGE_TITLES, f"{where}: there is no page {_show(page)}; the pages are {', '.join(PAGE_TITLES)}.")
    params = raw.get("params", {})
    require(isinstance(params, dict), f'{where}: params must be a table, e.g. params = {{ layer = "3", head = "1" }}.')
    require(len(params) <= MAX_PARAMS, f"{where} has {len(params)} parameters; a link may have at most {MAX_PARAMS}.")
    out: dict[str, str] = {}
    for name, value in params.items():
        if isinstance(value, bool):
            value = "1" if value else "0"
        elif isinstance(value, (int, float)):
            value = str(value)
        fits = isinstance(value, str) and len(value) <= PARAM_CHARS
        require(fits, f"{where}: the parameter {_show(name)} must be text of at most {PARAM_CHARS:,} characters.")
        check_param(page, name, value, where, check_values)
        out[name] = value
    return Link(f"{page}.py", _text(raw, "label", where, LABEL_CHARS), out)


def check_param(page: str, name: str, value: str, where: str, check_values: bool = True) -> None:
    """:class:`LessonFileError` unless ``page`` carries ``name`` and (``check_values``) its reader accepts ``value``."""
    param = BY_NAME.get(name)
    carried = param is not None and (param.pages is None or page in param.pages)
    require(carried, f"{where}: the page {page} has no link parameter {_show(name)}.")
    if not check_values:
        return
    try:
        (param.check or param.read)(value)
    except ValueError as exc:  # every reader refuses a value with ValueError (app/url_params.py; a test pins it)
        raise LessonFileError(
            f"{where}: {name} = {_show(value)} is not a value the page reads ({_show(exc, 120)})."
        ) from None


def _check(raw: object, where: str, check_values: bool) -> Check:
    """A ``[steps.check]`` table: its kind's fields are its keys (those without a default required)."""
    require(isinstance(raw, dict), f"{where}: a check is a [steps.check] table.")
    kind = raw.get("kind")
    cls = CHECK_KINDS.get(kind) if isinstance(kind, str) else None
    require(cls, f'{where}: kind must be "choice", "predict" or "look" (it is {_show(kind)}).')
    required = tuple(f.name for f in fields(cls) if f.default is MISSING)
    _keys(raw, ("kind", *(f.name for f in fields(cls))), required, where)
    values: dict[str, object] = {}
    for name in (f.name for f in fields(cls)):
        if name in CHECK_TEXTS:
            values[name] = _text(raw, name, where, CHECK_TEXTS[name], name in required)
        elif name in CHECK_NUMBERS:
            values[name] = _number(raw, name, where, 0, MAX_NUMBER, "must be a whole number from 0")
    if check_values and "model" in values:
        try:
            catalog_model()(str(values["model"]))
        except ValueError:
            raise LessonFileError(f"{where}: there is no model {_show(values['model'])} on this server.") from None
    if cls is Choice:
        options = raw["options"]
        listed = isinstance(options, list) and MIN_OPTIONS <= len(options) <= MAX_OPTIONS
        require(listed, f"{where}: options must be a list of {MIN_OPTIONS} to {MAX_OPTIONS} answers.")
        for k, option in enumerate(options, start=1):
            fits = isinstance(option, str) and option.strip() and len(option) <= OPTION_CHARS
            require(fits, f"{where}: option {k} must be text of 1 to {OPTION_CHARS} characters.")
        distinct = len({o.strip().casefold() for o in options}) == len(options)
        require(distinct, f"{where}: two options are the same; make each one different.")
        right = f"is the number of the right option, 1 to {len(options)}"
        values |= {"options": tuple(options), "answer": _number(raw, "answer", where, 1, len(options), right) - 1}
    elif cls is Look:
        values["scene"] = _number(raw, "scene", where, 0, 100_000, "is a held-out scene's number, from 0")
    else:
        values["causal"] = causal = raw.get("causal")
        require(
            causal is None or isinstance(causal, bool),
            f"{where}: causal must be true or false, or left out (the model's own mask).",
        )
    return cls(**values)


def _keys(table: dict, allowed: tuple[str, ...], required: tuple[str, ...], where: str) -> None:
    unknown = next((k for k in table if k not in allowed), None)
    require(unknown is None, f"{where}: unknown key {_show(unknown)}; the keys allowed here are {', '.join(allowed)}.")
    missing = next((k for k in required if k not in table), None)
    require(missing is None, f"{where}: {missing} is missing.")


def _number(table: dict, key: str, where: str, low: int, high: int, what: str) -> int:
    value = table.get(key, 0)
    whole = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    require(whole, f"{where}: {key} {what} (it is {_show(value)}).")
    return value


def _text(table: dict, key: str, where: str, limit: int, required: bool = True) -> str:
    value = table.get(key)
    if value is None and not required:
        return ""
    given = isinstance(value, str) and (not required or value.strip())
    require(given, f"{where}: {key} must be text" + (", not empty." if required else "."))
    require(len(value) <= limit, f"{where}: {key} is {len(value):,} characters long; at most {limit:,} fit.")
    require(all(ord(c) >= 32 or c in "\t\n" for c in value), f"{where}: {key} holds control characters.")
    return value


def _depth(value: object) -> int:
    """How many tables and lists ``value`` has inside one another (1 for a flat table), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _show(value: object, limit: int = 40) -> str:
    """A value from the file quoted (an error's text as it is) and cut, for a message (pages show it literally)."""
    text = " ".join(str(value).split()) if isinstance(value, BaseException) else repr(value)
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


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{k if _BARE.fullmatch(k) else toml_string(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(pairs) + " }" if value else "{}"
    text = str(value)
    return toml_string(text, multiline="\n" in text)


def _lines(pairs: dict[str, object]) -> list[str]:
    """``key = value`` for each pair with a value (empty text, no params and no check are left out)."""
    return [f"{key} = {_value(value)}" for key, value in pairs.items() if value not in ("", {}, None)]


def write_lesson(lesson: Lesson) -> str:
    """The lesson as the text of a lesson file (TOML, readable; :func:`read_lesson` reads it back equal)."""
    out = [HEADER, *_lines({"format": FORMAT, "title": lesson.title, "description": lesson.description})]
    for step in lesson.steps:
        out += ["", "[[steps]]", *_lines({"id": step.id, "title": step.title, "text": step.text, "demo": step.demo})]
        for link in step.links:
            page = link.page.removesuffix(".py")
            out += ["", "[[steps.links]]", *_lines({"page": page, "label": link.label, "params": dict(link.params)})]
        if step.check is not None:
            check = step.check  # a key at its default is left out (answers count from 1 in the file)
            pairs = {f.name: getattr(check, f.name) for f in fields(check) if getattr(check, f.name) != f.default}
            if isinstance(check, Choice):
                pairs["answer"] = check.answer + 1
            out += ["", "[steps.check]", *_lines({"kind": kind_of(check), **pairs})]
    return "\n".join(out) + "\n"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 step", "3 steps"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def slug(title: str) -> str:
    """A title as the stem of a file name: its words in lower case joined by dashes ("lesson" without any)."""
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))[:60].strip("-") or "lesson"


def file_name(lesson: Lesson) -> str:
    """A file name for the download: ``slug.toml``."""
    return slug(lesson.title) + ".toml"
