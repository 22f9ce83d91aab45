"""The server's own metrics endpoint counts what the app's shared caches hold
(``playground_cache_bytes`` of ``/_stcore/metrics``): an admin, and the long-work benchmark, read what is
kept on purpose from there."""

from __future__ import annotations

import urllib.request

from bench.st_client import Session
from tests.async_helpers import run_async


def _kept(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url.rstrip("/") + "/_stcore/metrics", timeout=10) as reply:
        text = reply.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith("playground_cache_bytes{"):
            name = line.split('cache="', 1)[1].split('"', 1)[0]
            found[name] = int(float(line.rsplit(" ", 1)[1]))
    return found


def test_metrics_count_the_traces_a_new_sentence_adds(fresh_app_url: str) -> None:
    """On a server of its own: the session-wide one may have filled its caches (then a new trace evicts
    others and the total need not grow)."""
    app_url = fresh_app_url

    async def student() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        session = Session(app_url)
        try:
            # Step by step: its charts are shared figures (the views of heads on Explore and Heads are maps, no figures)
            text = "the metrics page counts the cat that sat on the mat"
            opened = await session.open({"text": text}, page_name="step_by_step")
            assert opened.failure is None, opened.failure
            before = _kept(app_url)
            box = session.widget_id("text_area", "Your text")
            assert box is not None
            run = await session.rerun({box: "a sentence no one sent before, about seven purple owls at dusk"})
            assert run.failure is None, run.failure
            after = _kept(app_url)
            explore = await session.rerun({}, page_name="explore")  # the same sentence: its heads' maps
            assert explore.failure is None, explore.failure
            return before, after, _kept(app_url)
        finally:
            await session.close()

    before, after, explore = run_async(student(), timeout=120)
    assert set(before) == {"traces", "maps", "figures"}
    assert before["traces"] > 0 and before["figures"] > 0  # the page's trace and figures are in the caches
    assert after["traces"] > before["traces"] and after["figures"] > before["figures"]  # one more sentence, kept
    assert explore["maps"] > after["maps"]  # and Explore's view of its layer's heads
