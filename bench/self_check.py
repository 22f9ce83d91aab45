"""The benchmarks' meters read on this machine before a benchmark trusts them: ``python -m bench.self_check``.

The test suite checks what the meters do with a reading (tests/unit/test_bench_*.py: which processes, which thread,
counted once); how much CPU, memory or page faults they read depends on the machine and its load, so it is checked
here, where a benchmark runs (``bench_browser``, ``bench_class``, ``bench_polls``, ``bench_rerun --split`` call
:func:`check` with the meters they use):

- ``cpu_of``: ``serve.cpu_of`` reads a child's 0.3 s of CPU from /proc (10 ms ticks) as 0.25–5 s;
- ``sampler``: ``serve.ProcSampler`` sees a busy child's CPU and this process's resident memory;
- ``thread cpu``: a ``split_server`` counter adds its own thread's CPU once (an inner call and another thread's
  CPU are not its), 0.045–0.09 s for 0.05 s spun;
- ``page faults``: ``split_server``'s watch of a forward pass counts the pass's page faults and the main thread's
  CPU meanwhile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable

from bench import serve, split_server

# 0.3 s of CPU, a line saying so, then it waits for its stdin to close
BUSY = (
    "import sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    "print('busy', flush=True)\nsys.stdin.read()  # busy-marker"
)


def _cpu_of() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "busy\n"  # its 0.3 s of CPU are spent
        found = serve.named(serve.descendants(os.getpid()), "busy-marker")
        assert found == [child.pid], found
        assert 0.25 <= serve.cpu_of(found) < 5.0, serve.cpu_of(found)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def _sampler() -> None:
    busy = "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"
    child = subprocess.Popen([sys.executable, "-c", busy])
    try:
        sampler = serve.ProcSampler(os.getpid(), period_s=0.1).start()
        time.sleep(1.0)
        sampler.stop()
    finally:
        child.wait(timeout=10)
    assert child.pid in sampler.procs and os.getpid() in sampler.procs, sorted(sampler.procs)
    assert sampler.procs[child.pid].cpu_s > 0  # a busy loop; how much it gets depends on the machine's load
    assert sampler.procs[os.getpid()].rss_peak_bytes > 1e6
    assert (sampler.cpu_percent() or 0) > 0


CHECKS: dict[str, Callable[[], None]] = {
    "cpu_of": _cpu_of,
    "sampler": _sampler,
    "thread cpu": split_server.check_thread_cpu,
    "page faults": split_server.check_page_faults,
}


def check(*names: str) -> None:
    """Run the named checks (all by default); a meter that reads wrong stops the benchmark before it measures."""
    failed = []
    for name in names or tuple(CHECKS):
        try:
            CHECKS[name]()
        except AssertionError as err:
            failed.append(f"{name}: {err or traceback.extract_tb(err.__traceback__)[-1].line}")
    if failed:
        raise RuntimeError("a benchmark meter reads wrong on this machine: " + "; ".join(failed))


def main() -> None:
    check()
    print(f"bench.self_check: {', '.join(CHECKS)}: ok")


if __name__ == "__main__":
    main()
