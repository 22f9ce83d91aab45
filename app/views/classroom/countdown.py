"""A question's countdown, counted in the browser: each poll of the panel (every 2 s) or the teacher's view sends
the seconds the server has left, and one small script ticks every element down between polls, so a class of 100
adds no server runs (a fragment rerun each second would be 100 runs a second) and a phone's wrong clock never
matters (only its own elapsed time is used).
"""

from __future__ import annotations

import math

import streamlit as st

#: one timer for every countdown on the page, started once per page load: an element drawn by a later poll (a new
#: count from the server) counts from its own ``data-left``
TICK_JS = """<script>
if (!window.apCountdown) {
  window.apCountdown = setInterval(() => {
    const now = performance.now();
    document.querySelectorAll('.ap-countdown').forEach((el) => {
      if (!el.dataset.end) el.dataset.end = now + 1000 * parseFloat(el.dataset.left);
      el.querySelector('b').textContent = Math.max(0, Math.ceil((el.dataset.end - now) / 1000));
    });
  }, 250);
}
</script>"""


def countdown(question, large: bool = False) -> None:
    """ "Closes in N s" for an open question with a time limit (nothing otherwise); ``large`` for the projector."""
    left = question.closes_in
    if left is None or question.closed or question.revealed:
        return
    size = "1.6rem" if large else "1.05rem"
    st.html(
        f'<p class="ap-countdown" role="timer" data-left="{left:.1f}" style="font-size: {size}; margin: 0">'
        f"⏱ Answers close in <b>{math.ceil(left)}</b> s</p>{TICK_JS}",
        unsafe_allow_javascript=True,
    )
