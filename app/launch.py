"""The ``attention-playground`` command (``pip install -e .``, also ``python -m app``): ``streamlit run
app/streamlit_app.py [streamlit args]`` from any directory. Streamlit reads ``.streamlit/config.toml`` (no
tracebacks for students, no file watcher) from where it runs, so in a checkout that has one the app runs from its
root. Extra arguments go to ``streamlit run`` unchanged (``attention-playground --server.port 8502``).

Before Streamlit starts, a child process traces the landing page's sentence (:mod:`engine.prefetch`): it imports
torch and loads the model on the second core while the server starts. ``AP_PREFETCH=0`` turns it off; a machine
with one core never starts it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

ENTRY_POINT = Path(__file__).resolve().with_name("streamlit_app.py")
ROOT = ENTRY_POINT.parents[1]  # the checkout (editable install) or site-packages
CONFIG = ROOT / ".streamlit" / "config.toml"


def streamlit_argv(args: Sequence[str]) -> list[str]:
    """The ``streamlit`` command line that runs the app with ``args`` passed through."""
    return ["streamlit", "run", str(ENTRY_POINT), *args]


PREFETCH_ENV = "AP_PREFETCH"


def prefetch_on(environ=None) -> bool:
    """The server admin's ``AP_PREFETCH`` (default on; ``0``, ``off``, ``false`` or ``no`` turn it off)."""
    from engine.policy import OFF_WORDS

    env = os.environ if environ is None else environ
    return env.get(PREFETCH_ENV, "on").strip().lower() not in OFF_WORDS


def prefetch_wanted(environ=None) -> bool:
    """Whether to start the first trace in a child process: not turned off, and two cores or more."""
    return prefetch_on(environ) and (os.cpu_count() or 1) > 1


def start_prefetch() -> None:
    """Start the child first (its imports are the long part), then send it the landing page's request
    (:func:`app.state.landing_request`, read after the start because it imports Streamlit)."""
    from engine import prefetch

    early = prefetch.start()
    from app.state import landing_request

    early.send(*landing_request())


def main(args: Sequence[str] | None = None) -> None:
    """Run the app through Streamlit's own command line (it exits the process when the server stops)."""
    if CONFIG.is_file():
        os.chdir(ROOT)
    if prefetch_wanted():
        start_prefetch()
    from streamlit.web import cli  # here, not at the top: the tests import this module without Streamlit's cost

    sys.argv = streamlit_argv(sys.argv[1:] if args is None else args)
    cli.main()


if __name__ == "__main__":
    main()
