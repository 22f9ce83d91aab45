"""Where a rerun's time goes: record Streamlit server processes with py-spy and split the script threads' samples.

- :class:`PySpy` runs ``py-spy record -p PID -r RATE -f raw -o FILE -d SECONDS`` on each given process
  (blocking mode, py-spy's default: the process is stopped for each sample, so every thread's stack is
  read whole; ``--nonblocking`` lost the samples taken inside torch), from :meth:`PySpy.start` (which
  waits until each py-spy says it is sampling) to :meth:`PySpy.stop` (SIGINT: py-spy writes its file).
  ``-d`` is only a safety net for a run that never reaches ``stop``.
- :func:`split` reads py-spy's raw files (one line per distinct stack: ``frame;frame;… COUNT``, root
  first, each frame ``function (path:line)``), keeps the stacks of script threads (those containing
  ``ScriptRunner._run_script``) and puts each in the first bucket of :data:`BUCKETS` whose rule matches
  anywhere in the stack, with one exception: a figure's ``to_json`` called by ``st.plotly_chart`` is
  serialisation although its frames are in ``plotly/`` (figure building would otherwise take it).
- :func:`report` prints the table (samples, % of CPU samples, CPU ms per script run) and the top
  inclusive functions of the buckets that are the page's own cost.

py-spy leaves out a thread that the OS reports sleeping when the sample is taken (it runs without
``--idle``), so the samples are mostly CPU time; the waits it still catches, by their leaf, go to
"waiting", outside the %. A sample stands for 1 / rate seconds. Two limits of that: a thread waiting
for the GIL wakes every 5 ms and is often caught running, with a Python frame as its leaf (py-spy
0.4.3, 2 cores: 20 threads contending for the GIL for 5 s gave 687 samples at 50/s, 13.7 s, where
/proc counted 4.8 s of CPU; 3 threads 7.6 s for 4.9 s; 1 thread 5.0 s for 5.0 s), so with many
script threads at once the milliseconds are too high and the shares are the part to read; the other
way, 25 reruns 1 s apart on the app gave 0.48 s of script-thread samples where the threads that had
ended (the script threads) had used ~0.6 s of CPU by /proc; and when py-spy cannot keep the rate it
says how far it fell behind (:attr:`Recording.behind_s`), and the milliseconds are low by about that
much.

Standalone (the files ``bench_class --profile`` keeps under ``test-artifacts/``)::

    python -m bench.profile_split test-artifacts/bench-class-streamlit-30-*.raw --reruns 210 --rate 50
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

RATE = 50  # samples per second per thread
START_TIMEOUT_S = 20  # py-spy attaches and finds the interpreter
STOP_TIMEOUT_S = 60  # SIGINT -> file written (it aggregates in memory: writing is quick)
SCRIPT_THREAD = ("ScriptRunner._run_script", "_run_script")  # py-spy on Python ≥ 3.11 names the class
TOP = 15

WAITING = "waiting"
IMPORTS = "imports"
FORWARD = "forward pass"
MAPS = "attention maps (engine)"
FIGURES = "figure building"
SERIALISATION = "serialisation"
PAGE = "Streamlit and page code"
BUCKETS = (WAITING, IMPORTS, FORWARD, MAPS, FIGURES, SERIALISATION, PAGE)
CPU_BUCKETS = BUCKETS[1:]
DETAILED = (PAGE, FIGURES)  # buckets whose top functions are printed: the page's own cost

# A leaf (innermost Python frame) that is a wait. By the last part of its name: threading's Condition.wait,
# Event.wait, Semaphore.acquire, Thread.join, selectors' select, asyncio's sleep, … (Lock.acquire and
# time.sleep are C: their caller is the leaf, so those that show up in a Streamlit server are named here).
WAIT_NAMES = {"wait", "acquire", "join", "_wait_for_tstate_lock", "select", "poll", "sleep"}
WAIT_LEAVES = (
    ("queue.py", "Queue.get"),  # a thread pool's idle worker: queue.get -> Condition.wait
    ("concurrent/futures/thread.py", "_worker"),  # its work_queue.get(block=True) (C)
    ("streamlit/watcher/polling_path_watcher.py", "PollingPathWatcher._schedule.<locals>.task"),
)  # sleep
FORWARD_PATHS = ("engine/model.py", "engine/families/", "engine/capture/", "torch/", "transformers/")
MAP_PATHS = ("engine/analysis/", "engine/traces/")
FIGURE_PATHS = (
    "plotly/",
    "_plotly_utils/",
    "app/ui/heatmap.py",
    "app/ui/theme.py",
    "app/ui/head_views.py",
    "app/ui/map_data.py",
)
CHARTS = "app/ui/charts.py"  # figure building too (ready, …), but not show_chart:
CHART_CALL = "show_chart"  # that one calls st.plotly_chart, whose own work is not the figure's
WRAPPERS = ("streamlit/navigation/", "streamlit/runtime/fragment.py", "streamlit/runtime/metrics_util.py")
SERIAL_PATHS = ("json/", "google/protobuf/")
PLOTLY_CHART = "streamlit/elements/plotly_chart.py"
FRAME = re.compile(r"^(?P<func>.*) \((?P<path>[^()]*?)(?::(?P<line>\d+))?\)$")
BEHIND = re.compile(r"([\d.]+)s behind in sampling")
SAMPLES_WRITTEN = re.compile(r"Samples: (\d+) Errors: (\d+)")


# --- recording ---------------------------------------------------------------------------------------------


@dataclass
class Recording:
    """One py-spy run on one process."""

    pid: int
    label: str
    path: Path  # the raw file
    log_path: Path  # py-spy's own messages
    wall_s: float = 0.0  # from "sampling" to SIGINT
    samples: int = 0  # stacks py-spy says it wrote (all threads)
    errors: int = 0
    behind_s: float = 0.0  # the most py-spy said it fell behind the rate
    problem: str | None = None  # why there is no usable file (None: the file was written)
    _proc: subprocess.Popen | None = None
    _started: float = 0.0


@dataclass
class PySpy:
    """py-spy on each of ``pids`` (pid -> label), raw files named ``{prefix}-{label}.raw`` in ``folder``
    (with py-spy's messages in ``….py-spy.log``). Files of an earlier recording with the same prefix are
    removed first (a worker's label holds its port, which changes from run to run), so that
    ``{prefix}-*.raw`` is this recording's processes and no others."""

    pids: dict[int, str]
    folder: Path
    prefix: str
    duration_s: float
    rate: int = RATE
    recordings: list[Recording] = field(default_factory=list)

    def start(self) -> PySpy:
        """Start one py-spy per process; return once each samples (or has failed: see ``problem``)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in [*self.folder.glob(f"{self.prefix}-*.raw"), *self.folder.glob(f"{self.prefix}-*.py-spy.log")]:
            stale.unlink(missing_ok=True)
        for pid, name in sorted(self.pids.items()):
            stem = f"{self.prefix}-{slug(name)}"
            rec = Recording(pid, name, self.folder / f"{stem}.raw", self.folder / f"{stem}.py-spy.log")
            cmd = [
                "py-spy",
                "record",
                "-p",
                str(pid),
                "-r",
                str(self.rate),
                "-f",
                "raw",
                "-o",
                str(rec.path),
                "-d",
                str(int(self.duration_s) + 1),
            ]
            with open(rec.log_path, "w", encoding="utf-8") as log:
                try:
                    rec._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
                except OSError as err:
                    rec.problem = f"py-spy did not start ({err})"
            self.recordings.append(rec)
        deadline = time.monotonic() + START_TIMEOUT_S
        for rec in self.recordings:
            while rec._proc is not None and rec.problem is None:
                text = _read(rec.log_path)
                if "Sampling process" in text:
                    rec._started = time.monotonic()
                elif rec._proc.poll() is not None:
                    rec.problem = f"py-spy exited with code {rec._proc.returncode}: {_last_line(text)}"
                elif time.monotonic() > deadline:
                    rec.problem = f"py-spy not sampling after {START_TIMEOUT_S} s"
                    self._interrupt(rec)
                else:
                    time.sleep(0.02)
                    continue
                break
        return self

    def stop(self) -> list[Recording]:
        """SIGINT every py-spy still running, wait for its file, and check it was written."""
        stopped = time.monotonic()
        for rec in self.recordings:
            if rec._proc is not None and rec._proc.poll() is None:
                rec._proc.send_signal(signal.SIGINT)
        for rec in self.recordings:
            if rec._proc is None:
                continue
            self._interrupt(rec)
            if rec.problem is not None:
                continue
            rec.wall_s = stopped - rec._started
            text = _read(rec.log_path)
            rec.behind_s = max((float(m) for m in BEHIND.findall(text)), default=0.0)
            if match := SAMPLES_WRITTEN.search(text):
                rec.samples, rec.errors = int(match.group(1)), int(match.group(2))
            if not rec.path.exists() or rec.path.stat().st_size == 0:
                rec.problem = f"py-spy wrote no samples (exit code {rec._proc.returncode}): {_last_line(text)}"
        return self.recordings

    @staticmethod
    def _interrupt(rec: Recording) -> None:
        """Wait for ``rec``'s py-spy to exit after SIGINT; SIGKILL it if it does not."""
        assert rec._proc is not None
        if rec._proc.poll() is None:
            rec._proc.send_signal(signal.SIGINT)
        try:
            rec._proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rec._proc.kill()
            rec._proc.wait()
            rec.problem = rec.problem or f"py-spy did not exit {STOP_TIMEOUT_S} s after SIGINT (killed)"


def slug(text: str) -> str:
    """``text`` as a file name part: runs of anything but letters and digits become one ``-``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "process"


def _read(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(encoding="utf-8", errors="replace")
    return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


# --- splitting ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One frame of a py-spy stack: ``func`` as py-spy names it (``Class.method`` on Python ≥ 3.11)."""

    func: str
    path: str
    line: int | None

    @property
    def key(self) -> str:
        """``path:function``: the name of an inclusive count."""
        return f"{self.path}:{self.func}"

    def under(self, *prefixes: str) -> bool:
        """Whether the file is at or below one of ``prefixes`` (``torch/``, ``engine/model.py``), as a
        path of its own or after a ``/`` (py-spy shortens site-packages paths, keeps others whole)."""
        return any(self.path.startswith(p) or f"/{p}" in self.path for p in prefixes)


def parse_frame(text: str) -> Frame:
    match = FRAME.match(text)
    if match is None:
        return Frame(text, "", None)
    line = match.group("line")
    return Frame(match.group("func"), match.group("path"), int(line) if line else None)


def read_raw(path: Path) -> Iterator[tuple[list[Frame], int]]:
    """The stacks of one raw file (root first) with their sample counts."""
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and count.isdigit():
                yield [parse_frame(f) for f in stack.split(";")], int(count)


def is_script_thread(frames: list[Frame]) -> bool:
    return any(f.func in SCRIPT_THREAD for f in frames)


def is_wait(frames: list[Frame]) -> bool:
    """Whether the thread was waiting (py-spy leaves most waits out, not all): see :data:`WAIT_NAMES`."""
    leaf = frames[-1]
    return leaf.func.rsplit(".", 1)[-1] in WAIT_NAMES or any(
        leaf.func == func and leaf.under(path) for path, func in WAIT_LEAVES
    )


def _is_forward(frames: list[Frame]) -> bool:
    return any((f.func == "trace" and f.under("engine/__init__.py")) or f.under(*FORWARD_PATHS) for f in frames)


def _is_figure(frames: list[Frame]) -> bool:
    return any(f.under(*FIGURE_PATHS) or (f.under(CHARTS) and f.func != CHART_CALL) for f in frames)


def _is_chart_json(frames: list[Frame]) -> bool:
    """``st.plotly_chart`` serialising its figure: a ``to_json`` frame below (called from) plotly_chart.py."""
    chart = next((i for i, f in enumerate(frames) if f.under(PLOTLY_CHART)), None)
    return chart is not None and any(f.func.rsplit(".", 1)[-1] == "to_json" for f in frames[chart + 1 :])


RULES: tuple[tuple[str, Callable[[list[Frame]], bool]], ...] = (
    (WAITING, is_wait),
    (IMPORTS, lambda frames: any(f.func == "_find_and_load" for f in frames)),
    (FORWARD, _is_forward),
    (MAPS, lambda frames: any(f.under(*MAP_PATHS) for f in frames)),
    (SERIALISATION, _is_chart_json),  # before figure building: plotly's to_json is in plotly/
    (FIGURES, _is_figure),
    (SERIALISATION, lambda frames: any(f.under(*SERIAL_PATHS) for f in frames)),
)


def bucket(frames: list[Frame]) -> str:
    """The bucket of one script-thread stack: the first rule of :data:`RULES` that matches."""
    return next((name for name, rule in RULES if rule(frames)), PAGE)


def _listed(frames: list[Frame]) -> list[Frame]:
    """The frames worth naming in a top list: below ``_run_script`` and Streamlit's exec wrappers, without
    module bodies (the app's entry and the page's ``<module>``) and the wrappers every page, fragment or
    ``st.*`` call runs through (they would fill the list at the bucket's own share)."""
    start = next((i for i, f in enumerate(frames) if f.func in SCRIPT_THREAD), -1) + 1
    while start < len(frames) and (
        frames[start].under("streamlit/runtime/scriptrunner/", "streamlit/runtime/scriptrunner_utils/")
        or frames[start].path.startswith("<")
    ):
        start += 1
    return [f for f in frames[start:] if f.func != "<module>" and not f.under(*WRAPPERS)]


@dataclass
class Split:
    """Script-thread samples by bucket, with inclusive counts per function inside each bucket."""

    samples: Counter = field(default_factory=Counter)  # bucket -> samples
    inclusive: dict[str, Counter] = field(default_factory=dict)  # bucket -> "path:function" -> samples
    leaves: Counter = field(default_factory=Counter)  # waiting: leaf "path:function" -> samples
    other_threads: int = 0  # non-wait samples of the server's other threads (event loop, …): not split
    other_waiting: int = 0
    other_leaves: Counter = field(default_factory=Counter)  # other threads' non-wait leaves
    files: int = 0

    @property
    def cpu(self) -> int:
        """Script-thread samples that are not waits."""
        return sum(self.samples[b] for b in CPU_BUCKETS)

    def add(self, frames: list[Frame], count: int) -> None:
        if not is_script_thread(frames):
            if is_wait(frames):
                self.other_waiting += count
            else:
                self.other_threads += count
                self.other_leaves[frames[-1].key] += count
            return
        name = bucket(frames)
        self.samples[name] += count
        if name == WAITING:
            self.leaves[frames[-1].key] += count
        counts = self.inclusive.setdefault(name, Counter())
        for key in {f.key for f in _listed(frames)}:
            counts[key] += count

    def ms_per_run(self, name: str, runs: int, rate: float) -> float | None:
        return 1000 * self.samples[name] / rate / runs if runs > 0 and rate > 0 else None


def split(paths: Iterable[Path]) -> Split:
    """Every stack of every file, script threads split into buckets (files of several processes add up)."""
    result = Split()
    for path in paths:
        result.files += 1
        for frames, count in read_raw(Path(path)):
            result.add(frames, count)
    return result


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}" if whole else "–"


def table(result: Split, runs: int, rate: float, wall_s: float | None = None) -> list[str]:
    """The buckets as a markdown table: samples, % of CPU samples, CPU ms per script run."""
    lines = ["| bucket | samples | % of CPU samples | CPU ms per run |", "|---|---:|---:|---:|"]
    for name in CPU_BUCKETS:
        ms = result.ms_per_run(name, runs, rate)
        lines.append(
            f"| {name} | {result.samples[name]} | {_pct(result.samples[name], result.cpu)} "
            f"| {'–' if ms is None else f'{ms:.1f}'} |"
        )
    total = 1000 * result.cpu / rate / runs if runs > 0 and rate > 0 else None
    lines.append(f"| **CPU, all buckets** | {result.cpu} | 100.0 | {'–' if total is None else f'{total:.1f}'} |")
    lines.append(f"| {WAITING} (not CPU) | {result.samples[WAITING]} | – | – |")
    other = 1000 * result.other_threads / rate / runs if runs > 0 and rate > 0 else None
    lines.append(
        f"| other threads, not waiting (not split) | {result.other_threads} | – "
        f"| {'–' if other is None else f'{other:.1f}'} |"
    )
    if wall_s:
        lines += [
            "",
            f"Script threads' CPU: {result.cpu / rate:.1f} s over {wall_s:.1f} s sampled "
            f"({100 * result.cpu / rate / wall_s:.0f}% of one core); {runs} script runs.",
        ]
    return lines


def top_functions(result: Split, name: str, n: int = TOP) -> list[tuple[str, int]]:
    """The ``n`` functions with the most inclusive samples in bucket ``name``."""
    return result.inclusive.get(name, Counter()).most_common(n)


def report(result: Split, runs: int, rate: float, wall_s: float | None = None) -> str:
    """The table and, for :data:`DETAILED` buckets, the top inclusive functions (% of all CPU samples)."""
    lines = [
        f"Script-thread samples of {result.files} file(s) at {rate:g} samples/s:",
        "",
        *table(result, runs, rate, wall_s),
    ]
    for name in DETAILED:
        lines += ["", f'Top {TOP} inclusive functions in "{name}" (% of all CPU samples):', ""]
        top = top_functions(result, name)
        lines += [f"  {_pct(count, result.cpu):>5}%  {key}" for key, count in top] or ["  (no samples)"]
    if result.leaves:
        lines += ["", 'Leaves of the script threads\' "waiting" samples:', ""]
        lines += [f"  {count:>6}  {key}" for key, count in result.leaves.most_common(8)]
    if result.other_leaves:
        lines += ["", f"Other threads ({result.other_waiting} waiting samples left out), top leaves of the rest:", ""]
        lines += [f"  {count:>6}  {key}" for key, count in result.other_leaves.most_common(8)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="+", type=Path, help="py-spy raw files (-f raw), several processes add up")
    parser.add_argument("--reruns", type=int, required=True, help="script runs the profiled window held")
    parser.add_argument("--rate", type=float, default=RATE, help="py-spy's -r (samples per second)")
    parser.add_argument("--wall", type=float, help="seconds sampled (adds the share of one core)")
    args = parser.parse_args(argv)
    print(report(split(args.files), args.reruns, args.rate, args.wall))


if __name__ == "__main__":
    main()
