"""What a URL query parameter is: a reader, a writer, a default and the pages whose links carry it.

A link is untrusted: a reader turns the string into the widget's type and bounds or raises ``ValueError`` (the value
is then ignored, ``app.url_state``); ``Param.write`` spells a value back as its reader accepts it, a default left
out. The URL name is the session-state key. The shared rows are :data:`SHARED`, a page's own ``PARAMS`` in its
``keys.py``. No control is bound with Streamlit 1.67's ``bind="query-params"``; each reason fails its test in
``tests/e2e/test_streamlit_url_limits_e2e.py`` the day it is lifted:

- every row: a page switch with any bound widget, even one page's own, pushes two history entries or more;
- every row: a link's values are lost when the first click switches pages (``app.state.init`` writes them back);
- booleans, pickers and tabs: Streamlit reads only its own spelling, so older links (``?present=1``) would break;
- the decoding settings: a bound widget in a form writes the URL before the form is sent;
- ``hide`` and any value no widget holds: a page switch drops the parameters no widget binds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app.runtime.models import list_models, policy, session_models
from app.state import BOOLEAN_WORDS, DEFAULT_TEXT, DEFAULTS, HIDEABLE, K, Look, bounded, current_text

TEXT_PAGES = frozenset({"explore", "step_by_step", "heads", "bertviz_views"})  # pages by their app/views folder
TEXT_LINK_MAX = 16_000  # longer sentences are not written into a link (a browser URL of ~50 kB is unwieldy)
TEXT_READ_MAX = 100_000  # longer ones are refused when read (Streamlit itself drops query strings over 512 Ki)
ID_RE = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._/@:+-]{0,299}$")  # a Hub id or a folder path, nothing else
Reader = Callable[[str], Any]


def integer(low: int, high: int | Callable[[], int]) -> Reader:
    """An int in ``[low, high]`` (``high`` may be computed when the link is read, e.g. a lesson's step count)."""

    def read(raw: str) -> int:
        value, top = int(raw.strip()), high() if callable(high) else high  # "3.5", "NaN", "" raise ValueError
        if not low <= value <= top:
            raise ValueError(f"{value} is outside [{low}, {top}]")
        return value

    return read


def number(low: float, high: float, digits: int | None = None) -> Reader:
    """A finite float in ``[low, high]``, rounded to ``digits`` decimals when given (a slider's step)."""

    def read(raw: str) -> float:
        value = float(raw)
        if not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{raw!r} is not a number in [{low}, {high}]")
        return round(value, digits) if digits is not None else value

    return read


def boolean(raw: str) -> bool:
    """``1/0``, ``true/false``, ``on/off``, ``yes/no`` (any case)."""
    try:
        return BOOLEAN_WORDS[raw.strip().lower()]
    except KeyError:
        raise ValueError(f"{raw!r} is not on/off") from None


def choice(options: dict[str, Any] | Callable[[], dict[str, Any]]) -> Reader:
    """One of ``options`` (link word → session value), matched case-insensitively on the word or the value: a tab
    keeps its label in session state but a short word in the link (``explore_tab=mask``; the label works too)."""

    def read(raw: str) -> Any:
        table, wanted = options() if callable(options) else options, raw.strip().lower()
        for word, value in table.items():
            if wanted in (str(word).lower(), str(value).lower()):
                return value
        raise ValueError(f"{raw!r} is not one of {list(table)}")

    return read


def one_of(values) -> Reader:
    """One of ``values``, each spelled as its ``str``."""
    return choice({str(v): v for v in values})


def text(limit: int) -> Reader:
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


def catalog_model(families: set[str] | None = None) -> Reader:
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


def hide_words(raw: str, exact: bool = False) -> frozenset[str]:
    """``?hide=model,causal``: the controls to hide; a link that names none is refused, other unknown words are left
    out (``exact``: refused too, as in a lesson file, which is checked, not forgiven)."""
    words = [w.strip().lower() for w in raw.split(",")]
    can = f"it can hide {', '.join(HIDEABLE)}"
    if exact and (unknown := [w for w in words if w and w not in HIDEABLE]):
        raise ValueError(f"names controls the app does not have ({', '.join(unknown)}); {can}")
    if not (known := frozenset(words) & set(HIDEABLE)):
        raise ValueError(f"{raw!r} names no control that can be hidden; {can}")
    return known


def as_text(value: Any) -> str:
    """A value as a link writes it: ``1``/``0`` for booleans, ``1`` for ``1.0``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


@dataclass(frozen=True)
class Param:
    """One URL query parameter: ``name`` (the URL name and session key), ``read`` (string → value, or
    ``ValueError``), ``default`` (left out of links; a callable is asked each time), ``pages`` (the app/views folders
    whose links carry it; None: every page), ``words`` (a tab's label → its link word), ``hide`` (the ``hide=`` name
    of its control), ``show`` (a writer of its own: value → string or None) and ``check`` (what a lesson file's link
    is read with when ``read`` depends on this session)."""

    name: str
    read: Reader
    default: Any = None
    pages: frozenset[str] | None = None
    words: dict[str, str] | None = None
    hide: str | None = None
    show: Callable[[Any], str | None] | None = None
    check: Reader | None = None

    def write(self, value: Any) -> str | None:
        """The link's string for ``value``; None when the link leaves it out (its default, too long, or a value its
        own reader would refuse, e.g. a 10,000-character model id)."""
        if value is None or value == (self.default() if callable(self.default) else self.default):
            return None
        if self.words is not None:
            return self.words.get(value)
        if self.show is not None:
            return self.show(value)
        out = as_text(value)
        try:
            self.read(out)
        except (ValueError, TypeError):
            return None
        return out if len(out) <= TEXT_LINK_MAX else None


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


def _hide_text(words: frozenset[str]) -> str | None:
    return ",".join(name for name in HIDEABLE if name in words) or None


#: the parameters every page or every text page shares (the pages' own: ``PARAMS`` in each page's keys.py)
SHARED: tuple[Param, ...] = (
    Param(Look.present, boolean, False),  # presenter mode, so a shared link opens on the projector as it is
    Param(Look.hide, hide_words, frozenset(), show=_hide_text, check=lambda raw: hide_words(raw, exact=True)),
    Param(K.text, text(TEXT_READ_MAX), DEFAULT_TEXT, TEXT_PAGES | {"head_finder"}, hide="text"),
    Param(K.model, catalog_model(), DEFAULTS[K.model], TEXT_PAGES | {"positional"}, hide="model"),
    Param(K.hub_id, model_ref, "", TEXT_PAGES | {"positional"}, hide="model"),
    Param(K.layer, integer(0, 4096), 0, TEXT_PAGES, hide="layer"),
    Param(K.head, integer(0, 4096), 0, TEXT_PAGES, hide="head"),
    # the mask is named only when it differs from the shown model's own (pickers.causal_toggle records that)
    Param(K.causal, boolean, lambda: st.session_state.get(K.causal_default), TEXT_PAGES, hide="causal"),
    Param(K.max_tokens, integer(4, 16_384), DEFAULTS[K.max_tokens], TEXT_PAGES, hide="max_tokens"),
    Param(Look.focus, integer(0, 16_384), None, TEXT_PAGES),  # the highlighted token (app/ui/linked_tokens.py)
)
