"""The table of the controls' URL query parameters: which control each sets, how it is read, its default, its pages.

A link is untrusted input (anyone can type ``?layer=NaN`` or paste 50,000 characters), so every
parameter has a reader that turns the string into the widget's own type and bounds, or raises
``ValueError`` (the value is then ignored, calmly: ``app.url_state``). Writers turn a value back into
the string the reader accepts; a value equal to its default is left out of the link so links stay short.
The URL name is the session-state key (one name to learn, and ``st.session_state[name]`` in tests).
The names are listed in docs/teaching.md ("Links") and docs/DESIGN.md. Every parameter the app restores is in this
table, ``hide`` and the Lessons page's ``lesson`` and ``lesson_step`` included. One is not: the author's
``lesson_edit`` (a secret the Lessons page reads once and takes out of the address bar; never written back).

A lesson file's links are checked with the same readers (``app.views.lessons.lesson_file``), or with a parameter's own
``check`` where its reader depends on this session: a lesson step's bound is the length of the lesson on
screen, and ``hide`` drops words it does not know from a link but names them in a file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from app.state import DEFAULT_TEXT, DEFAULTS, Bahdanau, Captions, Heads, K, Lessons, Look, Positional, Step, Vit
from app.views.lessons.lesson_file import MAX_STEPS

#: pages by their file stem in app/views/
TEXT_PAGES = frozenset({"explore", "step_by_step", "heads", "bertviz_views"})
ALL_PAGES = None  # a parameter written on every page

TEXT_LINK_MAX = 16_000  # longer sentences are not written into a link (a browser URL of ~50 kB is unwieldy)
TEXT_READ_MAX = 100_000  # longer ones are refused when read (Streamlit itself drops query strings over 512 Ki)
ID_RE = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._/@:+-]{0,299}$")  # a Hub id or a folder path, nothing else


# ---------------------------------------------------------------- readers (str → value, or ValueError)


def integer(low: int, high: int | Callable[[], int]) -> Callable[[str], int]:
    """An int in ``[low, high]`` (``high`` may be computed when the link is read, e.g. the digit count)."""

    def read(raw: str) -> int:
        value = int(raw.strip())  # "3.5", "NaN", "" raise ValueError
        top = high() if callable(high) else high
        if not low <= value <= top:
            raise ValueError(f"{value} is outside [{low}, {top}]")
        return value

    return read


def number(low: float, high: float, digits: int | None = None) -> Callable[[str], float]:
    """A finite float in ``[low, high]``, rounded to ``digits`` decimals when given (a slider's step)."""

    def read(raw: str) -> float:
        value = float(raw)
        if not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{raw!r} is not a number in [{low}, {high}]")
        return round(value, digits) if digits is not None else value

    return read


def boolean(raw: str) -> bool:
    """``1/0``, ``true/false``, ``on/off``, ``yes/no`` (any case)."""
    word = raw.strip().lower()
    if word in ("1", "true", "on", "yes"):
        return True
    if word in ("0", "false", "off", "no"):
        return False
    raise ValueError(f"{raw!r} is not on/off")


def choice(options: dict[str, Any] | Callable[[], dict[str, Any]]) -> Callable[[str], Any]:
    """One of ``options`` (link word → session value), matched case-insensitively on the word or the value.

    Tabs keep their label in session state but get a short word in the link (``explore_tab=mask``); the
    label itself is accepted too (Explore's link to ``?pos_tab=Learned``).
    """

    def read(raw: str) -> Any:
        table = options() if callable(options) else options
        wanted = raw.strip().lower()
        for word, value in table.items():
            if wanted in (str(word).lower(), str(value).lower()):
                return value
        raise ValueError(f"{raw!r} is not one of {list(table)}")

    return read


def text(limit: int) -> Callable[[str], str]:
    """Free text up to ``limit`` characters, without NUL or other control characters but tab and newline."""

    def read(raw: str) -> str:
        if len(raw) > limit:
            raise ValueError(f"text of {len(raw)} characters (at most {limit})")
        if any(ord(c) < 32 and c not in "\t\n\r" for c in raw):
            raise ValueError("control characters in text")
        return raw

    return read


def model_ref(raw: str) -> str:
    """A Hub id or a folder path as typed in the model field (whether it may be used is the server's policy)."""
    value = raw.strip()
    if value and not ID_RE.match(value):
        raise ValueError(f"{raw!r} is not a model id")
    return value


def catalog_model(families: set[str] | None = None) -> Callable[[str], str]:
    """A model of the catalog (or one this session trained) by id; its display label is accepted too."""

    def read(raw: str) -> str:
        from app.runtime.models import list_models
        from app.views.train.data import session_models

        specs = [*session_models(), *list_models()]
        wanted = raw.strip()
        for spec in specs:
            if families is not None and spec.family not in families:
                continue
            if wanted == spec.id or wanted.lower() == spec.label.lower():
                return spec.id
        raise ValueError(f"{raw!r} is not a model of this server")

    return read


def hide_words(raw: str) -> frozenset[str]:
    """``?hide=model,causal``: the controls to hide (names of :data:`HIDEABLE`); words it does not know are left
    out, and a link that names none is refused."""
    words = frozenset(word.strip().lower() for word in raw.split(",")) & set(HIDEABLE)
    if not words:
        raise ValueError(f"{raw!r} names no control that can be hidden ({', '.join(HIDEABLE)})")
    return words


def hide_exactly(raw: str) -> frozenset[str]:
    """A lesson file's ``hide``: every word a control that can be hidden (a file is checked, not forgiven)."""
    unknown = [w for w in (w.strip().lower() for w in raw.split(",")) if w and w not in HIDEABLE]
    if unknown:
        raise ValueError(
            f"names controls the app does not have ({', '.join(unknown)}); it can hide {', '.join(HIDEABLE)}"
        )
    return hide_words(raw)


def lesson_ref(raw: str) -> str:
    """A saved lesson's id (``""``: the built-in lesson); whether the class store has it, the page says."""
    from app.views.lessons.lesson_file import ID_RE

    value = raw.strip()
    if value and not ID_RE.fullmatch(value):
        raise ValueError(f"{raw[:60]!r} is not a lesson id")
    return value


def _lesson_steps() -> int:
    """How many steps the lesson on the Lessons page has: the saved one ``lesson`` names, else the built-in one
    (also when the saved one cannot be read: the page then shows the built-in lesson and says why)."""
    import streamlit as st

    from app.runtime.rooms import lesson_store
    from app.store import RoomError, StoreUnavailable
    from app.views.lessons.lesson_file import LessonFileError, read_lesson
    from app.views.lessons.plan import STEPS

    lid = st.session_state.get(Lessons.lesson)
    if not lid:
        return len(STEPS)
    try:
        return len(read_lesson(lesson_store().lesson(lid).body, check_values=False).steps)
    except (RoomError, StoreUnavailable, LessonFileError):
        return len(STEPS)


# ---------------------------------------------------------------- writers (value → str)


def as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 1.0 → "1", as the reader accepts it
    return str(value)


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Param:
    """One URL query parameter.

    Attributes:
        name: the URL name and the session-state key it sets.
        read: string → value in the widget's type and bounds; raises ``ValueError`` for anything else.
        default: left out of links; a callable is asked each time (the causal mask's depends on the model).
        pages: the pages (app/views file stems) whose links carry it; ``None``: every page.
        words: for tabs, session value → short word written in the link.
        hide: the ``hide=`` name that hides its control (None: not hideable).
        show: a writer of its own (value → link string, or None to leave it out).
        check: what a lesson file's link is checked with when ``read`` depends on this session (default: ``read``).
    """

    name: str
    read: Callable[[str], Any]
    default: Any = None
    pages: frozenset[str] | None = ALL_PAGES
    words: dict[str, str] | None = None
    hide: str | None = None
    show: Callable[[Any], str | None] | None = None
    check: Callable[[str], Any] | None = None

    def write(self, value: Any) -> str | None:
        """The link's string for ``value``; None when the link leaves it out (default, too long, or a value
        its own reader would refuse)."""
        default = self.default() if callable(self.default) else self.default
        if value is None or value == default:
            return None
        if self.words is not None:
            return self.words.get(value)
        if self.show is not None:
            return self.show(value)
        out = as_text(value)
        if len(out) > TEXT_LINK_MAX:
            return None
        try:  # a link carries only what a link can restore (e.g. not a 10,000-character model id)
            self.read(out)
        except (ValueError, TypeError):
            return None
        return out


def _words(pairs: dict[str, str]) -> dict[str, str]:
    """A tab bar's writer: tab label → the short word of the link (``pairs``: word → label)."""
    return {label: word for word, label in pairs.items()}


EXPLORE_TABS = {
    "heads": "Every head of this layer",
    "mask": "Causal mask off vs on",
    "next": "What comes next?",
    "write": "Write more",
}
HEADS_TABS = {
    "model": "Model view",
    "metrics": "Per-head metrics",
    "similarity": "Head similarity",
    "compare": "Compare",
    "rollout": "Rollout",
    "ablation": "Ablation",
}
POS_TABS = {
    "sinusoidal": "Sinusoidal",
    "learned": "Learned",
    "rope": "RoPE",
    "alibi": "ALiBi",
    "order": "Order blindness",
}
PRETRAINING_TABS = {
    "fill": "Fill in the blank",
    "objectives": "Objectives side by side",
    "finetune": "Fine-tuning changes attention",
    "nsp": "Next sentence and [CLS]",
    "cost": "The cost of attention",
}
#: Train live's tabs (app/views/train/page.py ``TABS``, the same labels in the same order)
TRAIN_TABS = {"own": "Your own model", "induction": "Induction heads"}
FILL_DEFAULT = "lily found a red ball . she gave [MASK] to tom ."
OBJECTIVES_DEFAULT = "the big red ball , the small blue box and the old green car ."
COST_N = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
COST_D = (16, 32, 64, 128, 256, 512, 1024)
FINETUNE_LRS = (1e-4, 3e-4, 1e-3, 3e-3)
BLOCKS = {"encoder": "encoder", "decoder": "decoder", "cross": "cross", "self": "self"}


def _causal_default() -> bool | None:
    """The shown model's own causal setting, recorded by ``pickers.causal_toggle``: a link names the mask
    only when it differs from what the model does by itself."""
    import streamlit as st

    return st.session_state.get(K.causal_default)


def _digits() -> int:
    from app.views.vit.data import vit_digit_count

    return vit_digit_count() - 1


def _train(name: str) -> Callable[[str], Any]:
    from engine.training.job_settings import INT_RANGES

    return integer(*INT_RANGES[name])


def _train_tasks() -> dict[str, str]:
    from engine.training.job_settings import TASK_LABELS

    return {task: task for task in TASK_LABELS}


def _pos_encodings() -> dict[str, str]:
    from engine.training.job_settings import POS_ENCODINGS

    return {name: name for name in POS_ENCODINGS}


def shown_view() -> tuple[str, str, int]:
    """(model id, sentence, token limit) as Explore computes them: a decoding request holds them, and is used
    only while they are still what the page shows (``explore.decoding``, ``write_more.show_write_more``)."""
    import streamlit as st

    from app.runtime.models import policy
    from app.state import bounded, current_text

    rules = policy()
    typed = (st.session_state.get(K.hub_id) or "").strip() if rules.hub or rules.model_dirs else ""
    tokens = bounded(st.session_state.get(K.max_tokens, DEFAULTS[K.max_tokens]), 4, 16_384)
    return typed or st.session_state.get(K.model), current_text(), tokens


def read_decoding(raw: str) -> tuple:
    """``"20,0"`` (greedy) or ``"20,1,0.8,5,0.9,11"`` (sampled: temperature, top-k, top-p, seed) → the request
    Explore keeps in session state: (model, text, token limit, settings in ``DecodeSettings`` order)."""
    from engine.generation import MAX_NEW_TOKENS

    parts = raw.split(",")
    if len(parts) not in (2, 6):
        raise ValueError(f"{raw!r}: tokens,sampled[,temperature,top_k,top_p,seed]")
    n_new, sampled = integer(1, MAX_NEW_TOKENS)(parts[0]), boolean(parts[1])
    if not sampled:
        settings = (n_new, False, 1.0, 0, 1.0, 0)  # greedy ignores the rest (as the form returns it)
    elif len(parts) == 6:
        settings = (
            n_new,
            True,
            number(0.1, 2.0)(parts[2]),
            integer(0, 1000)(parts[3]),
            number(0.05, 1.0)(parts[4]),
            integer(0, 2**32 - 1)(parts[5]),
        )
    else:
        raise ValueError(f"{raw!r}: sampling needs temperature, top_k, top_p and seed")
    return (*shown_view(), settings)


def show_decoding(request: Any) -> str | None:
    """The link's string of a decoding request, or None once the sentence, model or limit changed."""
    try:
        n_new, sampled, temperature, top_k, top_p, seed = request[3]
        if tuple(request[:3]) != shown_view():
            return None
    except (TypeError, ValueError):
        return None
    if not sampled:
        return f"{int(n_new)},0"
    return ",".join(as_text(v) for v in (int(n_new), True, float(temperature), int(top_k), float(top_p), int(seed)))


def _options(values) -> dict[str, Any]:
    return {str(v): v for v in values}


_EXPLORE, _STEP, _HEADS = frozenset({"explore"}), frozenset({"step_by_step"}), frozenset({"heads"})
_VIT, _BAHDANAU, _TRAIN = frozenset({"vit"}), frozenset({"bahdanau"}), frozenset({"train"})
_PRETRAINING = frozenset({"pretraining"})
_CAPTIONS = frozenset({"captions"})
_LESSONS = frozenset({"lessons"})
_MODEL_PAGES = TEXT_PAGES | {"positional"}

PARAMS: tuple[Param, ...] = (
    # every page: presenter mode (app/ui/theme.py), so a shared link opens on the projector as it is
    Param(Look.present, boolean, False, ALL_PAGES),
    # every page: controls a link hides (url_state.hidden); their values still come from the link
    Param(
        Look.hide,
        hide_words,
        frozenset(),
        ALL_PAGES,
        show=lambda words: ",".join(name for name in HIDEABLE if name in words) or None,
        check=hide_exactly,
    ),
    # the text pages' shared controls (app/ui/pickers.py)
    Param(K.text, text(TEXT_READ_MAX), DEFAULT_TEXT, TEXT_PAGES, hide="text"),
    Param(K.model, catalog_model(), DEFAULTS[K.model], _MODEL_PAGES, hide="model"),
    Param(K.hub_id, model_ref, "", _MODEL_PAGES, hide="model"),
    Param(K.layer, integer(0, 4096), 0, TEXT_PAGES, hide="layer"),
    Param(K.head, integer(0, 4096), 0, TEXT_PAGES, hide="head"),
    Param(K.causal, boolean, _causal_default, TEXT_PAGES, hide="causal"),
    Param(K.max_tokens, integer(4, 16_384), DEFAULTS[K.max_tokens], TEXT_PAGES, hide="max_tokens"),
    Param("explore_block", choice(BLOCKS), "encoder", _EXPLORE, hide="block"),
    Param(Heads.block, choice(BLOCKS), "encoder", _HEADS, hide="block"),
    Param(Step.block, choice(BLOCKS), "encoder", _STEP, hide="block"),
    # page tabs and page controls
    Param("explore_tab", choice(EXPLORE_TABS), EXPLORE_TABS["heads"], _EXPLORE, _words(EXPLORE_TABS), "tabs"),
    Param(Heads.tab, choice(HEADS_TABS), HEADS_TABS["model"], _HEADS, _words(HEADS_TABS), "tabs"),
    Param(
        Positional.tab, choice(POS_TABS), POS_TABS["sinusoidal"], frozenset({"positional"}), _words(POS_TABS), "tabs"
    ),
    # decoding: an encoder-decoder's on Explore, and a decoder's "Write more" (read after the sentence and model)
    Param("explore_decode", read_decoding, None, _EXPLORE, show=show_decoding),
    Param("write_request", read_decoding, None, _EXPLORE, show=show_decoding),
    Param(Step.query, integer(0, 16_384), None, _STEP),
    Param("focus", integer(0, 16_384), None, TEXT_PAGES),  # the highlighted token (app/ui/linked_tokens.py)
    Param(
        "bertviz_view",
        choice({"head": "head", "model": "model", "neuron": "neuron"}),
        "head",
        frozenset({"bertviz_views"}),
    ),
    Param("bertviz_digit", integer(0, _digits), 0, frozenset({"bertviz_views"})),
    # Vision Transformer (keys, defaults and options: app.state.Vit)
    Param(Vit.model, catalog_model({"vit"}), Vit.DEFAULTS[Vit.model], _VIT),
    Param(Vit.hub_id, model_ref, Vit.DEFAULTS[Vit.hub_id], _VIT),
    Param(Vit.source, choice(_options(Vit.OPTIONS[Vit.source])), Vit.DEFAULTS[Vit.source], _VIT),
    Param(Vit.digit, integer(0, _digits), Vit.DEFAULTS[Vit.digit], _VIT),
    Param(Vit.shape, choice(_options(Vit.OPTIONS[Vit.shape])), Vit.DEFAULTS[Vit.shape], _VIT),
    Param(Vit.photo, choice(_options(Vit.OPTIONS[Vit.photo])), Vit.DEFAULTS[Vit.photo], _VIT),
    Param(Vit.layer, integer(0, 4096), Vit.DEFAULTS[Vit.layer], _VIT),
    Param(Vit.head, integer(0, 4096), Vit.DEFAULTS[Vit.head], _VIT),
    Param(Vit.patch, integer(0, 1_000_000), Vit.DEFAULTS[Vit.patch], _VIT),
    *(
        Param(name, integer(0, bound), Vit.DEFAULTS[name], _VIT)  # a Swin's stage, block, head and query patch
        for name, bound in (
            (Vit.swin_stage, 64),
            (Vit.swin_block, 64),
            (Vit.swin_head, 4096),
            (Vit.swin_patch, 1_000_000),
        )
    ),
    Param(Vit.fusion, choice(_options(Vit.OPTIONS[Vit.fusion])), Vit.DEFAULTS[Vit.fusion], _VIT),
    Param(Vit.discard, number(0.0, 0.9, digits=1), Vit.DEFAULTS[Vit.discard], _VIT),
    Param(Vit.k, integer(0, 1_000_000), Vit.DEFAULTS[Vit.k], _VIT),
    # Captions (keys, defaults and options: app.state.Captions; 500 held-out scenes: app.views.captions.data)
    *(
        Param(name, choice(_options(Captions.OPTIONS[name])), Captions.DEFAULTS[name], _CAPTIONS)
        for name in (Captions.view, Captions.source, Captions.search)
    ),
    Param(Captions.scene, integer(0, 499), Captions.DEFAULTS[Captions.scene], _CAPTIONS),
    Param(Captions.beam, integer(2, 5), Captions.DEFAULTS[Captions.beam], _CAPTIONS),
    Param(Captions.model, catalog_model({"captioner"}), Captions.DEFAULTS[Captions.model], _CAPTIONS),
    Param(Captions.hub_id, model_ref, Captions.DEFAULTS[Captions.hub_id], _CAPTIONS),  # a pretrained captioner,
    Param(Captions.layer, integer(0, 4096), Captions.DEFAULTS[Captions.layer], _CAPTIONS),  # its decoder layer
    Param(Captions.head, integer(Captions.MEAN_HEADS, 4096), Captions.DEFAULTS[Captions.head], _CAPTIONS),  # −1: mean
    # Bahdanau attention (keys and defaults: app.state.Bahdanau)
    Param(Bahdanau.text, text(200), Bahdanau.DEFAULTS[Bahdanau.text], _BAHDANAU),
    Param(Bahdanau.variant, choice(_options(("additive", "dot"))), Bahdanau.DEFAULTS[Bahdanau.variant], _BAHDANAU),
    Param(Bahdanau.tf_layer, integer(0, 64), Bahdanau.DEFAULTS[Bahdanau.tf_layer], _BAHDANAU),
    Param(Bahdanau.tf_head, integer(-1, 64), Bahdanau.DEFAULTS[Bahdanau.tf_head], _BAHDANAU),
    # Train live (defaults: app/views/train/page.py ``DEFAULTS``; bounds: engine/training/job_settings.py)
    Param("train_task", choice(_train_tasks), "reverse", _TRAIN),
    Param("train_n_layers", _train("n_layers"), 2, _TRAIN),
    Param("train_n_heads", choice(_options((1, 2, 4, 8))), 4, _TRAIN),
    Param("train_d_model", choice(_options((16, 32, 64, 128, 256))), 64, _TRAIN),
    Param("train_pos_encoding", choice(_pos_encodings), "learned", _TRAIN),
    Param("train_causal", boolean, True, _TRAIN),
    Param("train_steps", _train("steps"), 500, _TRAIN),
    Param("train_batch_size", choice(_options((8, 16, 32, 64, 128, 256))), 64, _TRAIN),
    Param("train_seed", _train("seed"), 0, _TRAIN),
    Param("train_lr", number(1e-5, 0.1), 0.003, _TRAIN),
    # its tab bar is a plain st.tabs (no hide=tabs), so a share link or a lesson step opens the tab it was on
    Param("train_tab", choice(TRAIN_TABS), TRAIN_TABS["own"], _TRAIN, _words(TRAIN_TABS)),
    # Pretraining objectives (app/views/pretraining/page.py)
    Param(
        "pretraining_tab",
        choice(PRETRAINING_TABS),
        PRETRAINING_TABS["fill"],
        _PRETRAINING,
        _words(PRETRAINING_TABS),
        "tabs",
    ),
    Param("fill_text", text(300), FILL_DEFAULT, _PRETRAINING),
    Param("objectives_text", text(200), OBJECTIVES_DEFAULT, _PRETRAINING),
    Param("objectives_layer", integer(0, 2), 0, _PRETRAINING),
    Param("cost_n", choice(_options(COST_N)), 512, _PRETRAINING),
    Param("cost_d", choice(_options(COST_D)), 64, _PRETRAINING),
    Param("finetune_steps", integer(50, 500), 200, _PRETRAINING),
    Param("finetune_lr", choice(_options(FINETUNE_LRS)), 1e-3, _PRETRAINING),
    # Lessons (app/views/lessons/page.py): the saved lesson, then its step (read second: its bound is that lesson's
    # length). The step has no default, so the address always names the step on screen; the page keeps it in
    # range before the link is written (no store read per write); a lesson file's link may name any lesson's step.
    Param(Lessons.lesson, lesson_ref, "", _LESSONS),
    Param(Lessons.step, integer(1, _lesson_steps), None, _LESSONS, show=as_text, check=integer(1, MAX_STEPS)),
)
BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
HIDE = Look.hide  # ?hide=model,causal: comma-separated control names, hidden (the value still comes from the link)
HIDEABLE = tuple(dict.fromkeys(p.hide for p in PARAMS if p.hide))  # text, model, layer, head, causal, ...
