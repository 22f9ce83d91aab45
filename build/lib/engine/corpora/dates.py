"""Date normalisation pairs: a date written the way people write it → ISO 8601.

    "21 November 2026"             → "2026-11-21"
    "November 21, 2026"            → "2026-11-21"
    "21/11/2026"                   → "2026-11-21"   (day first, always zero-padded)
    "21 Nov 2026"                  → "2026-11-21"
    "Saturday, 21 November 2026"   → "2026-11-21"   (the weekday is right for the date)

Dates are drawn uniformly from 1 January 1900 to 31 December 2099 through :mod:`datetime`, so every
generated date exists (29 February only in leap years; 1900 is not one, 2000 is).

**Tokens.** The translation models work on words, but a date's digits are better learnt one at a
time: "2026" as one word would make 200 year tokens that the model must learn separately, while ten
digit tokens are shared by days, months and years and can be copied. So the source is split into
words with every digit a token of its own (:func:`to_tokens_src`:
"21 November 2026" → ``2 1 november 2 0 2 6``), and the target is spelled one character per token
(:func:`to_tokens_tgt`: "2026-11-21" → ``2 0 2 6 - 1 1 - 2 1``, always 10 tokens).

Public API: :func:`generate_date_pairs`, :func:`format_date`, :func:`normalise`,
:func:`to_tokens_src`, :func:`to_tokens_tgt`, :func:`from_tokens_tgt`, :data:`FORMATS`.
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta

from engine.text import quote_input

__all__ = [
    "FORMATS",
    "FIRST_DATE",
    "LAST_DATE",
    "MONTHS",
    "format_date",
    "from_tokens_tgt",
    "generate_date_pairs",
    "normalise",
    "to_tokens_src",
    "to_tokens_tgt",
]

MONTHS: tuple[str, ...] = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH_NUMBER = {m.lower(): i for i, m in enumerate(MONTHS, 1)} | {m[:3].lower(): i for i, m in enumerate(MONTHS, 1)}
_MONTH_NUMBER["sept"] = 9

#: Source formats, by name: "long" 21 November 2026, "us" November 21, 2026, "slash" 21/11/2026,
#: "short" 21 Nov 2026, "weekday" Saturday, 21 November 2026.
FORMATS: tuple[str, ...] = ("long", "us", "slash", "short", "weekday")
FIRST_DATE = date(1900, 1, 1)
LAST_DATE = date(2099, 12, 31)


def format_date(d: date, fmt: str) -> str:
    """``d`` written in one of :data:`FORMATS`."""
    month = MONTHS[d.month - 1]
    if fmt == "long":
        return f"{d.day} {month} {d.year}"
    if fmt == "us":
        return f"{month} {d.day}, {d.year}"
    if fmt == "slash":
        return f"{d.day:02d}/{d.month:02d}/{d.year}"
    if fmt == "short":
        return f"{d.day} {month[:3]} {d.year}"
    if fmt == "weekday":
        return f"{_WEEKDAYS[d.weekday()]}, {d.day} {month} {d.year}"
    raise ValueError(f"unknown date format {fmt!r}; expected one of {FORMATS}")


def generate_date_pairs(
    n: int, seed: int, formats: tuple[str, ...] = FORMATS, start: date = FIRST_DATE, end: date = LAST_DATE
) -> list[tuple[str, str]]:
    """``n`` pairs ``(written date, "YYYY-MM-DD")``; the same arguments always give the same pairs.

    Args:
        n: how many.
        seed: random seed.
        formats: the source formats to draw from (uniformly).
        start, end: the date range, inclusive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for f in formats:
        if f not in FORMATS:
            raise ValueError(f"unknown date format {f!r}; expected one of {FORMATS}")
    rng = random.Random(seed)
    span = (end - start).days
    out = []
    for _ in range(n):
        d = start + timedelta(days=rng.randint(0, span))
        out.append((format_date(d, rng.choice(formats)), d.isoformat()))
    return out


# ---- parsing -------------------------------------------------------------------------------------

_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_MONTH = r"(?P<month>[a-z]+)\.?"
_YEAR = r"(?P<year>\d{4})"
_WEEKDAY = r"(?:(?P<weekday>[a-z]+)(?:\s*,\s*|\s+))?"
_PATTERNS = (
    re.compile(rf"^{_WEEKDAY}{_DAY}\s+(?:of\s+)?{_MONTH}\s*,?\s*{_YEAR}$"),
    re.compile(rf"^{_WEEKDAY}{_MONTH}\s+{_DAY}\s*,?\s*{_YEAR}$"),
    re.compile(r"^(?P<day>\d{1,2})\s*[/.]\s*(?P<mon>\d{1,2})\s*[/.]\s*(?P<year>\d{4})$"),
    re.compile(r"^(?P<year>\d{4})-(?P<mon>\d{1,2})-(?P<day>\d{1,2})$"),
)


def normalise(text: str) -> str:
    """The ISO date ("YYYY-MM-DD") of a written date.

    Reads the formats of :data:`FORMATS` with some slack: any case, extra spaces, full or 3-letter
    month names, "21st", "the 21st of November 2026", "21.11.2026", an optional weekday (checked
    against the date), and ISO itself. Slash and dot dates are day first.

    Raises:
        ValueError: not a date in these formats, or a date that does not exist ("30 February 2024",
            "29 February 2023"), or a weekday that does not match.
    """
    if not isinstance(text, str):
        raise ValueError(f"Expected a date, got {type(text).__name__}")
    t = re.sub(r"\s+", " ", text.strip().lower())
    t = re.sub(r"^the\s+", "", t)
    for pat in _PATTERNS:
        m = pat.match(t)
        if not m:
            continue
        parts = m.groupdict()
        if parts.get("month") is not None:
            if parts["month"] not in _MONTH_NUMBER:
                raise ValueError(f"unknown month {quote_input(parts['month'], 24)} in {quote_input(text)}")
            month = _MONTH_NUMBER[parts["month"]]
        else:
            month = int(parts["mon"])
        try:
            d = date(int(parts["year"]), month, int(parts["day"]))
        except ValueError as e:
            raise ValueError(f"{quote_input(text)} is not a real date ({e})") from None
        weekday = parts.get("weekday")
        if weekday is not None:
            names = [w.lower() for w in _WEEKDAYS]
            short = [w[:3] for w in names]
            if weekday not in names and weekday not in short:
                raise ValueError(f"unknown weekday {quote_input(weekday, 24)} in {quote_input(text)}")
            if weekday not in (names[d.weekday()], short[d.weekday()]):
                raise ValueError(f"{quote_input(text)}: {d.isoformat()} is a {_WEEKDAYS[d.weekday()]}")
        return d.isoformat()
    raise ValueError(f"not a date in a known format: {quote_input(text)}")


# ---- tokens --------------------------------------------------------------------------------------

_SRC_TOKEN = re.compile(r"\d|[^\W\d]+|[^\w\s]")


def to_tokens_src(text: str) -> list[str]:
    """Source tokens: lowercase words, one token per digit and per punctuation mark.

    ``to_tokens_src("November 21, 2026") == ["november", "2", "1", ",", "2", "0", "2", "6"]``.
    """
    return _SRC_TOKEN.findall(text.lower())


def to_tokens_tgt(text: str) -> list[str]:
    """Target tokens: one per character, spaces dropped.

    ``to_tokens_tgt("2026-11-21") == ["2", "0", "2", "6", "-", "1", "1", "-", "2", "1"]``.
    """
    return [ch for ch in text if not ch.isspace()]


def from_tokens_tgt(tokens: list[str]) -> str:
    """Inverse of :func:`to_tokens_tgt`: ``["2", "0", …, "1"]`` → ``"2026-11-21"``."""
    return "".join(tokens)
