"""What a URL query parameter is: a reader, a writer, a default and the pages whose links carry it.

Every control keeps its value in the URL through this table, not through Streamlit's ``bind="query-params"``:
in Streamlit 1.67 a page switch with bound widgets pushes one history entry per value (Back then walks through
views with defaults), a link's values are lost when the first click is a page switch, and bound widgets accept
only Streamlit's own spelling (``true``, a selectbox's label), so older links (``?present=1``, ``?model=minilm``)
would stop working. ``tests/e2e/test_streamlit_url_limits_e2e.py`` reproduces each limitation: the day one is
lifted, its test fails and the controls it concerns can move to ``bind``.

A link is untrusted input, so every parameter has a reader that turns the string into the widget's own type and
bounds, or raises ``ValueError`` (the value is then ignored: ``app.url_state``). Writers turn a value back into
the string the reader accepts; a value equal to its default is left out. The URL name is the session-state key.
The shared parameters are :data:`SHARED`; each page's own are ``PARAMS`` in its ``keys.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app.runtime.models import list_models, policy, session_models
from app.state import DEFAULT_TEXT, DEFAULTS, HIDEABLE, K, Look, bounded, current_text

#: pages by their folder in app/views/
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
    """One of ``options`` (link word → session value), matched case-insensitively on the word or the value: tabs
    keep their label in session state but a short word in the link (``explore_tab=mask``; the label works too)."""

    def read(raw: str) -> Any:
        table = options() if callable(options) else options
        wanted = raw.strip().lower()
        for word, value in table.items():
            if wanted in (str(word).lower(), str(value).lower()):
                return value
        raise ValueError(f"{raw!r} is not one of {list(table)}")

    return read


def one_of(values) -> Callable[[str], Any]:
    """One of ``values``, each spelled as its ``str``."""
    return choice({str(v): v for v in values})


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
        wanted = raw.strip()
        for spec in (*session_models(), *list_models()):
            if (families is None or spec.family in families) and (
                wanted == spec.id or wanted.lower() == spec.label.lower()
            ):
                return spec.id
        raise ValueError(f"{raw!r} is not a model of this server")

    return read


def hide_words(raw: str) -> frozenset[str]:
    """``?hide=model,causal``: the controls to hide; unknown words are left out, a link that names none is refused."""
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


def as_text(value: Any) -> str:
    """A value as a link writes it: ``1``/``0`` for booleans, ``1`` for ``1.0``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Param:
    """One URL query parameter.

    Attributes:
        name: the URL name and the session-state key it sets.
        read: string → value in the widget's type and bounds; raises ``ValueError`` for anything else.
        default: left out of links; a callable is asked each time (the causal mask's depends on the model).
        pages: the pages (app/views folder names) whose links carry it; ``None``: every page.
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


def tab_bar(name: str, tabs: dict[str, str], pages: frozenset[str], hide: str | None = "tabs") -> Param:
    """A tab bar's parameter: ``tabs`` is link word → tab label; the first tab is the default."""
    return Param(name, choice(tabs), next(iter(tabs.values())), pages, {v: k for k, v in tabs.items()}, hide)


def shown_view() -> tuple[str, str, int]:
    """(model id, sentence, token limit) as the text pages compute them: a decoding request holds them, and is used
    only while they are still what the page shows (Explore's decoding, Write more; a lesson's check)."""
    rules = policy()
    typed = (st.session_state.get(K.hub_id) or "").strip() if rules.hub or rules.model_dirs else ""
    tokens = bounded(st.session_state.get(K.max_tokens, DEFAULTS[K.max_tokens]), 4, 16_384)
    return typed or st.session_state.get(K.model), current_text(), tokens


def block(name: str, pages: frozenset[str]) -> Param:
    """A text page's attention-block picker (an encoder-decoder's encoder, decoder or cross-attention)."""
    return Param(name, one_of(("encoder", "decoder", "cross", "self")), "encoder", pages, hide="block")


def _causal_default() -> bool | None:
    """The shown model's own causal setting (``pickers.causal_toggle`` records it): a link names the mask only
    when it differs from what the model does by itself."""
    return st.session_state.get(K.causal_default)


#: the parameters every page or every text page shares (the pages' own: ``PARAMS`` in each page's keys.py)
SHARED: tuple[Param, ...] = (
    Param(Look.present, boolean, False),  # presenter mode, so a shared link opens on the projector as it is
    Param(
        Look.hide,
        hide_words,
        frozenset(),
        show=lambda words: ",".join(name for name in HIDEABLE if name in words) or None,
        check=hide_exactly,
    ),
    Param(K.text, text(TEXT_READ_MAX), DEFAULT_TEXT, TEXT_PAGES, hide="text"),
    Param(K.model, catalog_model(), DEFAULTS[K.model], TEXT_PAGES | {"positional"}, hide="model"),
    Param(K.hub_id, model_ref, "", TEXT_PAGES | {"positional"}, hide="model"),
    Param(K.layer, integer(0, 4096), 0, TEXT_PAGES, hide="layer"),
    Param(K.head, integer(0, 4096), 0, TEXT_PAGES, hide="head"),
    Param(K.causal, boolean, _causal_default, TEXT_PAGES, hide="causal"),
    Param(K.max_tokens, integer(4, 16_384), DEFAULTS[K.max_tokens], TEXT_PAGES, hide="max_tokens"),
    Param(Look.focus, integer(0, 16_384), None, TEXT_PAGES),  # the highlighted token (app/ui/linked_tokens.py)
)
