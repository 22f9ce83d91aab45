"""Every link parameter's reader refuses a bad value with ValueError, and with nothing else.

``app/url_state.py`` (a link opened in the browser) and ``app/views/lessons/lesson_file.py`` (a teacher's lesson file) catch
only ``ValueError`` around these readers: a bad value in a link is ignored, one in a lesson file is named in
the message. Any other exception type would escape those catches, so this pins the readers' side of that
contract on values a person could type or a link could carry.
"""

from __future__ import annotations

import pytest

from app.url_state import PARAMS

JUNK = [
    "",
    " ",
    "x",
    "-1",
    "3.5",
    "NaN",
    "inf",
    "-inf",
    "1e999",
    "9" * 5000,  # int() refuses more than 4,300 digits with ValueError
    "0x10",
    "1_000",
    "\x00",
    "a\x07b",
    "é",
    "١٢",  # Arabic-Indic digits: int() reads them
    "../../etc/passwd",
    "gpt2",
    "no/such-model",
    "1,1",
    "1,0",
    "1,1,x,y,z,w",
    "1,1,0.5,5,0.9",
    ",,,,,",
    "20,1,0.8,5,0.9,11",
    "99999,1,99,99999,9,-1",
    "true",
    "Tabs",
    "x" * 20_000,
]


def _accepts_or_raises_value_error(read, where: str) -> None:
    """``read`` of every :data:`JUNK` value returns or raises ValueError; any other error fails, named (``where``
    is a format string of ``raw``)."""
    for raw in JUNK:
        try:
            read(raw)
        except ValueError:
            continue
        except Exception as err:  # noqa: BLE001 — the test's point: name any other type
            pytest.fail(f"{where.format(raw=repr(raw[:40]))} raised {type(err).__name__}: {err}")


@pytest.mark.parametrize("param", PARAMS, ids=lambda p: p.name)
def test_every_reader_accepts_or_raises_value_error(param) -> None:
    _accepts_or_raises_value_error(param.read, f"?{param.name}={{raw}}")


@pytest.mark.parametrize("param", [p for p in PARAMS if p.check is not None], ids=lambda p: p.name)
def test_every_lesson_file_check_accepts_or_raises_value_error(param) -> None:
    """A parameter's own ``check`` (what a lesson file's link is read with) keeps the same contract."""
    _accepts_or_raises_value_error(param.check, f"{param.name} = {{raw}} in a file")
