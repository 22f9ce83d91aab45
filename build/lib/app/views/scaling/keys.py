"""The scaling page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations


class Scaling:
    """The Scaling page's keys (``app/views/scaling/page.py``)."""

    params_chart, compute_chart = "scaling_params", "scaling_compute"
    table, download = "scaling_table", "scaling_download"
    live_size, live_go, live_runs = "scaling_live_size", "scaling_live_go", "scaling_live_runs"  # live_runs: name → run
