"""The machine's pace at the moment: MiniLM's trace timed alone, so that a benchmark's absolute figures can be read
against how fast the machine was in that run.

The 2-core machines here drift: on one AMD EPYC the same 512-token trace took 85–105 ms on one day's quiet hours and
~150 ms in a slow one, and Explore's Enter → drawn at 512 tokens moved from 0.50 s to 0.70 s with it, the code
unchanged. A benchmark that prints this beside its figures says which kind of hour it ran in.

Run in a process of its own (``python -m bench.pace`` prints one JSON line; :func:`bench.serve.pace` runs it), so
the benchmark's own process never imports torch:

- ``long_ms``: wall time of ``engine.trace`` on 512 tokens, two torch threads (what Explore runs for one student
  alone at that length), median of ``--repeats``;
- ``short_ms``: CPU time of ``engine.trace`` on a 30-word sentence, one torch thread (a class's case), median of
  three times as many.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

WORDS = (
    "the teacher asked every student in the room to read the sentence aloud while the model looked at each word "
    "and decided how much attention it should pay to the words that came before and after it"
).split()


def measure(repeats: int = 5) -> dict[str, float]:
    """``{"long_ms": ..., "short_ms": ...}`` (see the module docstring)."""
    import engine

    engine.limit_numpy_threads(1)  # as the server does
    model = engine.load("minilm")
    long_text = " ".join(WORDS * 40)  # well over 512 tokens: cut to the window
    short_text = " ".join(WORDS[:30])
    engine.set_threads(2)
    engine.trace(model, long_text, causal=False, max_tokens=512)  # warm-up
    long_runs = []
    for k in range(repeats):
        start = time.perf_counter()
        engine.trace(model, f"{k} {long_text}", causal=False, max_tokens=512)
        long_runs.append(time.perf_counter() - start)
    engine.set_threads(1)
    short_runs = []
    for k in range(3 * repeats):
        start = time.process_time()
        engine.trace(model, f"{k} {short_text}", causal=False, max_tokens=128)
        short_runs.append(time.process_time() - start)
    return {"long_ms": 1000 * statistics.median(long_runs), "short_ms": 1000 * statistics.median(short_runs)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(max(1, args.repeats))), flush=True)


if __name__ == "__main__":
    main()
