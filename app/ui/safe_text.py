"""User text shown literally in Streamlit's markdown (captions, messages, notices).

Streamlit renders ``st.markdown``, ``st.caption``, ``st.error``, ``st.warning`` and ``st.info`` as GitHub-flavoured
markdown with LaTeX and colour directives: a typed ``[x](http://…)`` is a link, ``![](http://…)`` an image the
browser fetches, ``$…$`` maths, and a bare ``http://…`` or ``www.…`` a link too (GFM links those *after* parsing,
so backslash escapes do not stop it). Two tools:

- :func:`quoted` for the user's own input in a message (a model id, a file name, a sentence): an
  inline code span, whose characters markdown shows as they are and never links; cut to ~80 characters.
- :func:`md` for text that may contain a piece of user input (engine messages, notices, words of a
  sentence): every ASCII punctuation character gets a backslash (CommonMark shows an escaped character
  as itself), line breaks become spaces (a new line could start a heading or a list), and an invisible
  WORD JOINER (U+2060) is put inside ``http:``, ``www.`` and ``@`` so that no bare link or e-mail
  address is recognised; what is shown does not change.
"""

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
    """``text`` as markdown that displays exactly ``text`` (on one line) and makes no link."""
    flat = " ".join(str(text).splitlines())
    flat = _AUTOLINK.sub(lambda m: (m.group(0) or "") + JOINER, flat)
    return _PUNCT.sub(r"\\\1", flat)


def isolated(text: object) -> str:
    """:func:`md` of ``text`` between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE: typed Hebrew or Arabic keeps
    its own direction without pulling the label's text around it into its run (``… שלום · 1 answered`` showed the
    count inside the right-to-left words)."""
    return f"{FSI}{md(text)}{PDI}"


def quoted(text: object, limit: int = LIMIT) -> str:
    """User input for a message, shown exactly (an inline code span), at most ``limit`` characters then "…"."""
    s = " ".join(shorten(text, limit).split())  # one line, at most ``limit`` characters, then "…"
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)  # a fence longer than any run of backticks inside
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"
