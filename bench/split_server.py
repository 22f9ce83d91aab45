"""The app's server with thread-CPU counters around the parts of a rerun: where a rerun's CPU goes, without sampling.

``python -m bench.split_server [streamlit options]`` runs ``streamlit run app/streamlit_app.py`` (no launcher child)
in this process after wrapping, for the threads that call them:

- ``script thread``: ``ScriptRunner._run_script_thread``, a script run's whole thread;
- ``forward pass``: ``engine.trace`` and ``engine.trace_many`` (the outermost call only);
- ``attention maps``: the shared map cache's ``get`` (``app.runtime.caches.MAPS``: a miss builds a head's map or a
  layer's tiles from the trace);
- ``figures``: the shared figure cache's ``get`` (``app.runtime.caches.FIGURES``: a miss builds a figure's dict, or a
  picture's ``data:`` URL).

Each counter adds ``time.thread_time_ns()`` of its call (CPU of the calling thread only: waits are not counted).
Around the forward pass it also notes what else happened while it ran (:func:`_watched`): the thread's page faults,
how often another thread took its core, how long it waited for one, and the event loop's CPU meanwhile (why the
server's pass costs more than the same pass in a process that runs nothing else).
After each script run it also notes how many entries the session's state holds (widget values and the app's keys):
every widget and text box of a rerun reads the whole of it, so it must not grow with the sentences a student types.
``SIGUSR2`` zeroes them; ``SIGUSR1`` writes them as JSON (``{"cpu": {label: [nanoseconds, calls]},
"session_state_entries": [one per run, in order], "inside": {what: total over the passes}}``) to the file named by ``AP_BENCH_SPLIT_OUT``. The event loop's CPU (the main thread) and the process's are read from ``/proc``
by the benchmark (``bench.bench_rerun --split``). The counters wrap a handful of calls a rerun.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import signal
import sys
import threading
import time

_COUNTS: dict[str, list[int]] = {}
_ENTRIES: list[int] = []  # the session state's size after each script run (the last MAX_RUNS)
MAX_RUNS = 10_000
_LOCK = threading.Lock()
_DEPTH = threading.local()
#: totals over the forward passes (outermost calls): passes, page_faults, preempted, waited_ns, loop_ns
_INSIDE: dict[str, int] = {}


def _counted(label: str, func):
    """``func`` adding its calling thread's CPU to ``label`` (an inner call under the same label is not counted)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        depth = getattr(_DEPTH, label, 0)
        if depth:
            return func(*args, **kwargs)
        setattr(_DEPTH, label, 1)
        start = time.thread_time_ns()
        try:
            return func(*args, **kwargs)
        finally:
            spent = time.thread_time_ns() - start
            setattr(_DEPTH, label, 0)
            with _LOCK:
                count = _COUNTS.setdefault(label, [0, 0])
                count[0] += spent
                count[1] += 1

    return wrapper


def _schedstat(path: str) -> tuple[int, int]:
    """Nanoseconds a thread ran on a CPU and waited on a run queue (``/proc/.../schedstat``)."""
    ran, waited = open(path, encoding="ascii").read().split()[:2]
    return int(ran), int(waited)


def _watched(func):
    """``func`` (the forward pass) adding to :data:`_INSIDE` what happened while it ran: its thread's minor page
    faults, the times another thread took its core (involuntary switches), the time it waited for a core, and the
    event loop's CPU (the main thread's) meanwhile. An inner call is not counted again."""
    loop_stat = f"/proc/self/task/{os.getpid()}/schedstat"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if getattr(_DEPTH, "watched", 0):
            return func(*args, **kwargs)
        _DEPTH.watched = 1
        before = resource.getrusage(resource.RUSAGE_THREAD)
        _ran, waited = _schedstat("/proc/thread-self/schedstat")
        loop, _ = _schedstat(loop_stat)
        try:
            return func(*args, **kwargs)
        finally:
            after = resource.getrusage(resource.RUSAGE_THREAD)
            _ran, waited_after = _schedstat("/proc/thread-self/schedstat")
            loop_after, _ = _schedstat(loop_stat)
            _DEPTH.watched = 0
            with _LOCK:
                for what, value in (
                    ("passes", 1),
                    ("page_faults", after.ru_minflt - before.ru_minflt),
                    ("preempted", after.ru_nivcsw - before.ru_nivcsw),
                    ("waited_ns", waited_after - waited),
                    ("loop_ns", loop_after - loop),
                ):
                    _INSIDE[what] = _INSIDE.get(what, 0) + value

    return wrapper


def _noting_entries(func):
    """``ScriptRunner._run_script`` noting, after each run, how many entries its session state holds."""

    @functools.wraps(func)
    def wrapper(runner, *args, **kwargs):
        try:
            return func(runner, *args, **kwargs)
        finally:
            entries = len(list(runner._session_state._state._keys()))  # noqa: SLF001 — a benchmark's probe
            with _LOCK:
                _ENTRIES.append(entries)
                del _ENTRIES[:-MAX_RUNS]

    return wrapper


def _write(*_args) -> None:
    with _LOCK:
        data = {
            "cpu": {label: list(count) for label, count in _COUNTS.items()},
            "session_state_entries": list(_ENTRIES),
            "inside": dict(_INSIDE),
        }
    path = os.environ.get("AP_BENCH_SPLIT_OUT")
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, path)


def _zero(*_args) -> None:
    with _LOCK:
        _COUNTS.clear()
        _ENTRIES.clear()
        _INSIDE.clear()


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def check_thread_cpu() -> None:
    """A counter adds its own thread's CPU once: 0.05 s spun in an outer and an inner call, while another thread
    spins 0.1 s (``bench.self_check``)."""
    _zero()
    inner = _counted("part", lambda: _spin(0.02))
    outer = _counted("part", lambda: (_spin(0.03), inner()))
    busy = threading.Thread(target=_spin, args=(0.1,))
    busy.start()
    outer()
    busy.join()
    spent_ns, calls = _COUNTS.pop("part")
    assert calls == 1 and 0.045 <= spent_ns / 1e9 < 0.09, (calls, spent_ns / 1e9)


def check_page_faults() -> None:
    """The watch of a pass counts the page faults of its thread (as the pass itself reads them) and the main thread's
    CPU meanwhile: a pass on another thread touches 16 MiB of fresh pages while the main thread spins 0.05 s."""
    import mmap

    _zero()
    touched, own_faults = 16 * 2**20, []

    def forward() -> int:
        # Fresh anonymous pages, each first touch a page fault of this thread. Small pages asked for: where the
        # kernel maps huge pages by default (CI's machine did), 16 MiB comes in a few hundred faults.
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        memory = mmap.mmap(-1, touched)
        memory.madvise(mmap.MADV_NOHUGEPAGE)
        for offset in range(0, touched, mmap.PAGESIZE):
            memory[offset] = 1
        memory.close()
        own_faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
        return touched

    pass_thread = threading.Thread(target=_watched(lambda: (_spin(0.02), forward())))
    pass_thread.start()
    _spin(0.05)
    pass_thread.join()
    inside = dict(_INSIDE)
    _zero()
    # at least one 2 MiB page on any kernel; 4,096 pages of 4 KiB where small pages are given
    assert own_faults[0] >= touched // 2**21, own_faults
    assert own_faults[0] <= inside["page_faults"] <= own_faults[0] + 200, (own_faults, inside)
    assert inside["loop_ns"] >= 0.02e9, inside  # the main thread spun while the pass ran


def install() -> None:
    """Wrap the parts (module docstring) and set the two signals."""
    from streamlit.runtime.scriptrunner import script_runner

    import engine
    from app.runtime import caches

    runner = script_runner.ScriptRunner
    runner._run_script_thread = _counted("script thread", runner._run_script_thread)
    runner._run_script = _noting_entries(runner._run_script)
    engine.trace = _counted("forward pass", _watched(engine.trace))
    engine.trace_many = _counted("forward pass", _watched(engine.trace_many))
    caches.MAPS.get = _counted("attention maps", caches.MAPS.get)
    caches.FIGURES.get = _counted("figures", caches.FIGURES.get)
    signal.signal(signal.SIGUSR1, _write)
    signal.signal(signal.SIGUSR2, _zero)


def main() -> None:
    sys.path.insert(0, os.getcwd())  # the app's packages, from the checkout the server runs in
    install()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", "app/streamlit_app.py", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
