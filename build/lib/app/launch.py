"""The ``attention-playground`` command: ``streamlit run app/streamlit_app.py [args]`` from the checkout's root
(where ``.streamlit/config.toml`` is read). Before Streamlit starts, a child process traces the landing page's
sentence on a second core (:mod:`engine.prefetch`; ``AP_PREFETCH=0`` turns it off)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

ENTRY_POINT = Path(__file__).resolve().with_name("streamlit_app.py")
ROOT = ENTRY_POINT.parents[1]  # the checkout (editable install) or site-packages
CONFIG = ROOT / ".streamlit" / "config.toml"


def streamlit_argv(args: Sequence[str]) -> list[str]:
    return ["streamlit", "run", str(ENTRY_POINT), *args]


PREFETCH_ENV = "AP_PREFETCH"


def prefetch_on(environ=None) -> bool:
    """The server admin's ``AP_PREFETCH`` (default on)."""
    from engine.policy import OFF_WORDS

    env = os.environ if environ is None else environ
    return env.get(PREFETCH_ENV, "on").strip().lower() not in OFF_WORDS


def prefetch_wanted(environ=None) -> bool:
    """Prefetch on, and two cores or more."""
    return prefetch_on(environ) and (os.cpu_count() or 1) > 1


def start_prefetch() -> None:
    """Start the child first (its imports are the long part), then send it the landing page's request."""
    from engine import prefetch

    early = prefetch.start()
    from app.state import landing_request

    early.send(*landing_request())


def main(args: Sequence[str] | None = None) -> None:
    """Run the app through Streamlit's own command line."""
    if CONFIG.is_file():
        os.chdir(ROOT)
    if prefetch_wanted():
        start_prefetch()
    from streamlit.web import cli  # here, not at the top: the tests import this module without Streamlit's cost

    sys.argv = streamlit_argv(sys.argv[1:] if args is None else args)
    cli.main()


if __name__ == "__main__":
    main()
