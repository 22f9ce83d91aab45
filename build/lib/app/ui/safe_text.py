"""User text shown literally in Streamlit's markdown (which makes links, images and maths of typed text):
:func:`quoted` as an inline code span, :func:`md` with every punctuation escaped and no autolink."""

from __future__ import annotations

import re
import string

from engine.text import shorten

_PUNCT = re.compile("([" + re.escape(string.punctuation) + "])")
LIMIT = 80  # characters of user input quoted in a message


_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto)(?=:)|(www)(?=\.)|(?=@)")
JOINER = "\u2060"  # WORD JOINER: invisible, breaks the autolink patterns
FSI, PDI = "\u2068", "\u2069"  # FIRST STRONG ISOLATE, POP DIRECTIONAL ISOLATE: invisible


def md(text: object) -> str:
    """``text`` as markdown that displays exactly ``text`` on one line: ASCII punctuation escaped, and a WORD JOINER
    inside ``http:``, ``www.`` and ``@`` so GFM autolinks nothing."""
    flat = " ".join(str(text).splitlines())
    flat = _AUTOLINK.sub(lambda m: (m.group(0) or "") + JOINER, flat)
    return _PUNCT.sub(r"\\\1", flat)


def isolated(text: object) -> str:
    """:func:`md` of ``text`` in a bidi isolate: typed right-to-left text does not pull the label around it along."""
    return f"{FSI}{md(text)}{PDI}"


def quoted(text: object, limit: int = LIMIT) -> str:
    """User input for a message, shown exactly (an inline code span), at most ``limit`` characters then "…"."""
    s = " ".join(shorten(text, limit).split())  # one line, at most ``limit`` characters, then "…"
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)  # a fence longer than any run of backticks inside
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"
