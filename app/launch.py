"""The ``attention-playground`` command (``pip install -e .``): the README's app command from anywhere.

``attention-playground [streamlit args]`` is ``streamlit run app/streamlit_app.py [streamlit args]`` with
the entry point found next to this file, so it works from any directory. Streamlit reads
``.streamlit/config.toml`` (the classroom settings: no tracebacks for students, no file watcher) from the
directory it runs in, so when the package lives in a checkout that has one (an editable install), the
app runs from that checkout's root, as the README's command does. Extra arguments go to ``streamlit
run`` unchanged, e.g. ``attention-playground --server.port 8502``.
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


def main(args: Sequence[str] | None = None) -> None:
    """Run the app through Streamlit's own command line (it exits the process when the server stops)."""
    from streamlit.web import cli  # here, not at the top: the tests import this module without Streamlit's cost

    if CONFIG.is_file():
        os.chdir(ROOT)
    sys.argv = streamlit_argv(sys.argv[1:] if args is None else args)
    cli.main()


if __name__ == "__main__":
    main()
