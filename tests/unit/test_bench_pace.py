"""bench.serve's pace line: a benchmark's footer says how fast the machine was in that run, when it was measured."""

from __future__ import annotations

import subprocess

from bench import serve

CONTEXT = {"date": "d", "machine": "m", "command": "c", "load_before": "l", "load_after": "l"}


def test_the_footer_gives_the_pace_before_and_after_when_measured():
    context = {
        **CONTEXT,
        "pace_before": {"long_ms": 104.6, "short_ms": 17.96},
        "pace_after": {"long_ms": 151.2, "short_ms": 20.04},
    }
    text = "\n".join(serve.footer(context))
    assert "before: 105 ms and 18.0 ms; after: 151 ms and 20.0 ms" in text
    assert text.index("pace") < text.index("Measured d on m")  # above the line that says where and when


def test_no_pace_taken_or_a_failed_one_leaves_the_footer_as_it_was():
    assert serve.footer(CONTEXT) == serve.footer({**CONTEXT, "pace_before": None, "pace_after": None})
    assert not any("pace" in line for line in serve.footer(CONTEXT))
    one = serve.footer({**CONTEXT, "pace_after": {"long_ms": 90.0, "short_ms": 16.0}})[0]  # the pace line
    assert "after: 90 ms and 16.0 ms" in one and "before:" not in one


def test_a_child_that_fails_gives_none(monkeypatch):
    def fail(*_args, **_kwargs):
        raise subprocess.CalledProcessError(1, "python -m bench.pace")

    monkeypatch.setattr(serve.subprocess, "run", fail)
    assert serve.pace() is None

    class Done:
        stdout = 'Loading weights…\n{"long_ms": 99.5, "short_ms": 17.25}\n'

    monkeypatch.setattr(serve.subprocess, "run", lambda *_a, **_k: Done())
    assert serve.pace() == {"long_ms": 99.5, "short_ms": 17.25}  # the last line is the figures
