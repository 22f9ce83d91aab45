"""The offline lesson pack's HTML: one file that opens with neither the server nor the internet.

Each chart's Plotly JSON sits in a ``<script type="application/json">`` beside its ``<div>``, plotly.js inline, and
a Content-Security-Policy forbids every fetch. All text is HTML-escaped; only the built-in lesson's ``emphasis``
turns ``**bold**`` and ``*italic*`` into tags, after escaping.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

#: no fetch of any kind: scripts and styles inline only, pictures only from data: URLs
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
)


@dataclass(frozen=True)
class Chart:
    """One chart of a step: its Plotly figure as JSON text (``{"data": [...], "layout": {...}}``) and a caption."""

    figure_json: str
    caption: str = ""


@dataclass(frozen=True)
class Note:
    """What stands in a step instead of a chart (a view that has none offline, or could not be drawn)."""

    text: str


@dataclass(frozen=True)
class PackStep:
    """One step as the pack shows it: heading, note, check (question, options, answer; "" for none), charts."""

    title: str
    text: str = ""
    question: str = ""
    options: tuple[str, ...] = ()
    answer: str = ""
    items: tuple[Chart | Note, ...] = field(default_factory=tuple)


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b2430;background:#fff;margin:0;
line-height:1.5}
main{max-width:980px;margin:0 auto;padding:1.5rem}
h1{font-size:1.8rem;margin:.2rem 0}
h2{font-size:1.3rem;margin:2rem 0 .4rem;border-top:1px solid #d0d4da;padding-top:1.2rem}
.about,.caption{color:#4a5360;font-size:.92rem}
.text{white-space:pre-wrap}
.chart{width:100%;min-height:320px;margin:1.2rem 0 .3rem}
.note{border-left:4px solid #e8590c;background:#fff4ec;padding:.5rem .8rem;margin:.6rem 0}
.question{background:#eef3fb;padding:.6rem .9rem;border-radius:.4rem;margin:.8rem 0}
.question p{margin:.2rem 0;white-space:pre-wrap}
nav ol{columns:2;font-size:.95rem}
"""

DRAW = """
(function () {
  var boxes = document.querySelectorAll("div.chart");
  for (var i = 0; i < boxes.length; i++) {
    var box = boxes[i];
    try {
      var fig = JSON.parse(document.getElementById(box.id + "-data").textContent);
      Plotly.newPlot(box, fig.data, fig.layout, {displaylogo: false, responsive: true});
    } catch (err) {
      box.textContent = "This chart could not be drawn: " + err;
    }
  }
})();
"""


def _text(value: str, emphasis: bool) -> str:
    out = html.escape(value, quote=True)
    if emphasis:  # after escaping: only the tags made here reach the page
        out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
        out = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", out)
    return out


def script_json(text: str) -> str:
    """JSON text that cannot end (or open) an HTML element: ``<``, ``>`` and ``&`` as JSON ``\\u`` escapes."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def inline_script(js: str) -> str:
    """A script's source made safe to sit inside ``<script>…</script>``."""
    return re.sub(r"(?i)</(script)", r"<\\/\1", js).replace("<!--", "<\\!--")


def _step(number: int, step: PackStep, first_chart: int, emphasis: bool) -> tuple[str, int]:
    parts = [
        f'<section id="step-{number}">',
        f"<h2>{number}. {_text(step.title, emphasis) if step.title else f'Step {number}'}</h2>",
    ]
    if step.text:
        parts.append(f'<div class="text">{_text(step.text, emphasis)}</div>')
    n = first_chart
    for item in step.items:
        if isinstance(item, Chart):
            parts.append(f'<div class="chart" id="chart-{n}"></div>')
            parts.append(
                f'<script type="application/json" id="chart-{n}-data">{script_json(item.figure_json)}</script>'
            )
            if item.caption:
                parts.append(f'<p class="caption">{_text(item.caption, False)}</p>')
            n += 1
        else:
            parts.append(f'<p class="note" role="note">{_text(item.text, False)}</p>')
    if step.question:
        parts.append('<div class="question">')
        parts.append(f"<p><strong>Question:</strong> {_text(step.question, emphasis)}</p>")
        if step.options:
            parts.append("<ol>" + "".join(f"<li>{_text(o, emphasis)}</li>" for o in step.options) + "</ol>")
        if step.answer:
            parts.append(f"<details><summary>Show the answer</summary><p>{_text(step.answer, emphasis)}</p></details>")
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts), n


def render(
    title: str,
    steps: list[PackStep] | tuple[PackStep, ...],
    plotly_js: str,
    *,
    description: str = "",
    about: str = "",
    emphasis: bool = False,
) -> str:
    """The whole pack: one HTML document with its charts and plotly.js inside (``about``: how it was made)."""
    body, n = [], 0
    for number, step in enumerate(steps, start=1):
        section, n = _step(number, step, n, emphasis)
        body.append(section)
    contents = ""
    if len(steps) > 1:
        contents = (
            "<nav><ol>"
            + "".join(
                f'<li><a href="#step-{i}">{_text(s.title or f"Step {i}", emphasis)}</a></li>'
                for i, s in enumerate(steps, start=1)
            )
            + "</ol></nav>"
        )
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP, quote=True)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{STYLE}</style>",
            f"<script>{inline_script(plotly_js)}</script>",
            "</head><body><main>",
            f"<h1>{_text(title, emphasis)}</h1>",
            f'<p class="text">{_text(description, emphasis)}</p>' if description else "",
            f'<p class="about">{_text(about, False)}</p>' if about else "",
            contents,
            *body,
            "</main>",
            f"<script>{DRAW}</script>",
            "</body></html>",
            "",
        ]
    )
