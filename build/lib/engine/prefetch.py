"""A server's first trace from a second process, while the server itself still imports torch.

On a cold start a first chart waits for torch and transformers to import (3–4 s on a 2-core server), for the
model to load and for its first forward pass; in the server's process that work runs after Streamlit's own
start and the page's first run, one step after another under the GIL. The app's launcher (``python -m app``)
starts this module in a child process before anything else: the child imports and loads on the other core
while the server starts, traces the landing page's request and sends back the trace and the model's card.
The server takes them instead of waiting for its own imports, which go on in the background for every later
trace (``app/runtime/models.py``, ``app/runtime/traces.py``). Only plain data crosses the pipe: :mod:`engine.traces`' frozen dataclasses of
numpy arrays (pickled), so the server needs no torch to read them.

Parent side::

    early = prefetch.start()                       # at once: the child starts importing
    early.send("minilm", "The cat sat.", 128)      # when the request is known (the child reads it after its imports)
    prefetch.answer("minilm", timeout_s=60)        # its Answer (card, trace, …), or None: none asked, failed, late

Child side: ``python -m engine.prefetch`` reads one JSON request on stdin and writes one pickle on stdout.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import NamedTuple

import engine
from engine.records import ModelCard
from engine.traces.attention import AttentionTrace
from engine.vocab import known_words

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 120.0  # the longest a page waits for the child before it loads the model itself
PARENT_ENV = "AP_PREFETCH_PARENT"  # the server's pid, for the child (set by start(), not by an admin)


class Answer(NamedTuple):
    """What the child sends back: the model's card, the trace's key ``(model_id, text, causal, max_tokens)``, the
    trace, :func:`engine.device_name` (where it ran: the server's device too) and the words the model knows
    (:func:`engine.vocab.known_words`: None for an open tokenizer)."""

    card: ModelCard
    key: tuple
    trace: AttentionTrace
    device: str
    vocabulary: tuple[str, ...] | None


class Prefetch:
    """One child process tracing one request; its result is a future :class:`Answer`."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.model_id: str | None = None
        self.result: Future = Future()

    def send(self, model_id: str, text: str, max_tokens: int) -> None:
        """Ask the child to trace ``text`` through ``model_id`` with the model's own mask (what a page shows first,
        before anyone touches the causal toggle); the answer is read in a thread of its own."""
        self.model_id = model_id
        request = json.dumps({"model_id": model_id, "text": text, "max_tokens": int(max_tokens)})
        threading.Thread(target=self._exchange, args=(request,), name="prefetch", daemon=True).start()

    def _exchange(self, request: str) -> None:
        try:
            out, _ = self.proc.communicate(request.encode("utf-8"), timeout=WAIT_S)
            if self.proc.returncode != 0:
                raise RuntimeError(f"the prefetch process exited with {self.proc.returncode}")
            self.result.set_result(Answer(*pickle.loads(out)))
        except BaseException as err:  # noqa: BLE001 — any failure only means the server traces it itself
            self.proc.kill()
            self.result.set_exception(err)
            log.debug("prefetch failed", exc_info=True)

    def wait(self, timeout_s: float) -> Answer | None:
        """The child's :class:`Answer`, waiting up to ``timeout_s``; None when it failed or is late."""
        try:
            return self.result.result(timeout=timeout_s)
        except BaseException:  # noqa: BLE001 — failed or late: the caller loads the model itself
            return None


_current: Prefetch | None = None


def start(env: dict[str, str] | None = None) -> Prefetch:
    """Start the child (it begins importing torch and transformers at once); :meth:`Prefetch.send` says what to
    trace. The one prefetch of this process is what :func:`answer` answers from."""
    global _current
    child_env = {**(os.environ if env is None else env), "OMP_WAIT_POLICY": "PASSIVE", PARENT_ENV: str(os.getpid())}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.prefetch"],
        cwd=ROOT,
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, proc)  # the server stopping (Ctrl+C, SIGTERM) takes its child with it, reaped
    _current = Prefetch(proc)
    return _current


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def answer(model_id: str | None, timeout_s: float = WAIT_S) -> Answer | None:
    """This process's prefetch's :class:`Answer` when it was asked about ``model_id`` (None: whichever model),
    waiting up to ``timeout_s`` for it; None when none was asked for, or it failed or is late."""
    early = _current
    if early is None or (model_id is not None and early.model_id != model_id):
        return None
    return early.wait(timeout_s)


def device() -> str | None:
    """Where the prefetch ran (:func:`engine.device_name`, without importing torch here), if it has answered."""
    early = answer(None, 0)
    return None if early is None else early.device


def answered(timeout_s: float = WAIT_S) -> bool:
    """Wait until this process's prefetch (if any) has answered or failed; True when it answered."""
    return answer(None, timeout_s) is not None


def asked() -> str | None:
    """The model id this process's prefetch was asked to trace, if one was."""
    return None if _current is None else _current.model_id


def forget() -> None:
    """Drop the prefetch (the server has its own model now): its trace lives on only in the trace cache."""
    global _current
    _current = None


def _die_with_parent() -> None:
    """Linux: the kernel kills this child when the server that started it dies (a worker stopped by the classroom
    script while its child still imports must not outlive it); a server already gone: exit now."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if str(os.getppid()) != os.environ.get(PARENT_ENV, str(os.getppid())):
        os._exit(1)


def main() -> None:
    """The child: import, read the request, load, trace with one thread, write its answer and exit at once."""
    _die_with_parent()
    out = os.fdopen(os.dup(1), "wb")  # the answer's pipe; anything a library prints goes to stderr instead
    os.dup2(2, 1)
    from engine.families.hf_api import hf

    hf()  # the slow part first: the parent writes the request meanwhile

    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    engine.set_threads(1)  # the server's process has the other core
    model = engine.load(request["model_id"])
    causal = bool(model.default_causal)
    result = engine.trace(model, request["text"], causal=causal, max_tokens=request["max_tokens"])
    found = ModelCard(spec=model.spec, default_causal=causal, max_positions=int(model.max_positions))
    key = (request["model_id"], request["text"], causal, int(request["max_tokens"]))
    # a plain tuple: run as __main__, this module's Answer is not the parent's
    out.write(pickle.dumps((found, key, result, engine.device_name(), known_words(model.tokenizer)), protocol=5))
    out.close()
    os._exit(0)  # the parent reads to the end of the pipe: no second of torch's teardown first


if __name__ == "__main__":
    main()
