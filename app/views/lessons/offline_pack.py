"""The offline lesson pack: a lesson, or one view, as one HTML file that opens from disk.

Each step's text and question, and each link's first charts (``offline_views.pack_view``) as Plotly JSON in the
default look, with plotly.js from the installed package (never a CDN). Built on a button's click, kept in the
session until the lesson or view changes, then served by a download button.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from datetime import datetime, timezone

import streamlit as st

from app.state import default
from app.ui import theme
from app.ui.guard import plain_error, show_error
from app.views.lessons.keys import Offline
from app.views.lessons.lesson_file import PAGE_TITLES, Check, Choice, Lesson, Link, Step, counted, slug
from app.views.lessons.offline_html import Chart, Note, PackStep, render
from app.views.lessons.offline_views import PACK_CELLS, pack_view

MAX_CHART_CHARS = 40_000_000  # the charts' JSON in one pack at most (~160 maps of 256² cells); later ones: a note
BUILD_HELP = (
    "Charts, their numbers and plotly.js in one HTML file that opens without this server or the internet, e.g. on a "
    "student's laptop."
)
Progress = Callable[[float, str], None]


@functools.cache
def plotly_js() -> tuple[str, str]:
    """(plotly.js's source, its version), read once from the installed ``plotly`` package."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    return get_plotlyjs(), get_plotlyjs_version()


def _json(fig) -> str:
    """The figure as JSON, its axes making room for their labels (as Streamlit's Plotly template does in the app)."""
    from plotly.utils import PlotlyJSONEncoder

    layout = dict(fig.spec.get("layout", {}))
    for name, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", name) and isinstance(axis, dict):
            layout[name] = {**axis, "automargin": True}
    return json.dumps({**fig.spec, "layout": layout}, cls=PlotlyJSONEncoder, separators=(",", ":"))


def link_items(link: Link) -> list[Chart | Note]:
    """One link's charts (or a note), drawn in the default look (the pack is read on a laptop, not on a projector)."""
    page = link.page.removesuffix(".py")
    label = link.label or PAGE_TITLES.get(page, page)
    try:
        with theme.looking(theme.DEFAULT):
            view = pack_view(page, dict(link.params))
            if isinstance(view, str):
                return [Note(f"{label}: {view}")]
            return [Chart(_json(fig), f"{label}. {caption}") for fig, caption in view.drawn]
    except Exception as err:  # noqa: BLE001 — a figure that cannot be built is a note, never a crash
        return [Note(f"{label}: this view could not be drawn for the pack: {plain_error(err)}")]


def _check(check: Check | None) -> dict[str, object]:
    """A step's knowledge check as the pack shows it: question, options and the answer behind "Show the answer"."""
    if isinstance(check, Choice):
        answer = f"{check.answer + 1}. {check.options[check.answer]}" + (f"\n{check.explain}" if check.explain else "")
        return {"question": check.question, "options": check.options, "answer": answer}
    if check is None:
        return {}
    return {
        "question": check.question,
        "answer": "This check is answered by the real model: try it in the app, on the Lessons page.",
    }


def pack_html(
    title: str,
    steps: tuple[Step, ...],
    what: str,
    progress: Progress | None,
    description: str = "",
    emphasis: bool = False,
) -> str:
    """The pack of ``steps`` with their links' charts (``progress(fraction, text)`` after each link); ``what`` opens
    its "about" line (``emphasis``: see :func:`render`)."""
    total = max(1, sum(len(step.links) for step in steps))
    done, used, out = 0, 0, []
    for number, step in enumerate(steps, start=1):
        items: list[Chart | Note] = []
        for link in step.links:
            if progress is not None:
                progress(done / total, f"Step {number} of {len(steps)}: drawing “{link.label[:60]}”…")
            for item in link_items(link):
                if isinstance(item, Chart):
                    used += len(item.figure_json)
                    if used > MAX_CHART_CHARS:
                        full = f"the pack already holds {MAX_CHART_CHARS // 1_000_000} MB of charts (its limit)"
                        item = Note(f"{link.label}: left out, {full}.")
                items.append(item)
            done += 1
        out.append(PackStep(step.title, step.text, items=tuple(items), **_check(step.check)))
    if progress is not None:
        progress(1.0, "Writing the file…")
    js, version = plotly_js()
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    about = (
        f"{what}, saved from Attention Playground on {when}. This one file opens in any browser without the app "
        f"and without the internet: the charts' numbers and plotly.js {version} are inside it. Each attention map "
        f"holds at most {PACK_CELLS} × {PACK_CELLS} cells: a longer input is drawn as blocks, "
        "each showing the largest weight in it. Hover a cell to read its weight."
    )
    return render(title, out, js, description=description, about=about, emphasis=emphasis)


def lesson_html(lesson: Lesson, progress: Progress | None = None, *, emphasis: bool = False) -> str:
    """The offline pack of ``lesson`` (``emphasis``: the built-in lesson's ``**bold**`` as bold)."""
    what = f"A lesson of {counted(len(lesson.steps), 'step')}"
    return pack_html(lesson.title, lesson.steps, what, progress, lesson.description, emphasis)


def view_html(page: str, params: dict[str, str], progress: Progress | None = None) -> str:
    """The offline pack of one view: ``page`` (a file stem of app/views/) opened with ``params``."""
    title = PAGE_TITLES.get(page, page)
    step = Step("view", title, "", (Link(f"{page}.py", f"This view of the {title} page", params),))
    return pack_html(f"{title}: one view", (step,), "One view", progress)


def file_name(title: str) -> str:
    """A file name from a title: ``slug-offline.html``."""
    return slug(title) + "-offline.html"


# ---------------------------------------------------------------- the buttons


def pack_buttons(place: str, fingerprint: object, build: Callable[[Progress], str], label: str, name: str) -> None:
    """ "Build ``label``" (with a progress bar), then "Download ``label``" that serves it as ``name``. ``place``
    ("walk", "draft", "view") keys the buttons and the kept pack, which must still match ``fingerprint``."""
    kept: dict = default(Offline.built, {})
    if st.button(f"Build {label}", key=Offline.build + place, icon=":material/offline_pin:", help=BUILD_HELP):
        bar = st.progress(0.0, text="Building the offline pack…")
        try:
            page = build(lambda fraction, text: bar.progress(min(max(fraction, 0.0), 1.0), text=text))
        except Exception as err:  # noqa: BLE001 — e.g. plotly's files missing: a message, not a traceback
            show_error(err, before="The offline pack could not be built: ")
            return
        finally:
            bar.empty()
        kept[place] = (fingerprint, page)
    if place not in kept or kept[place][0] != fingerprint:
        return
    page = kept[place][1]
    st.download_button(
        f"Download {label}",
        data=lambda: page,
        file_name=name,
        mime="text/html",
        on_click="ignore",
        key=Offline.download + place,
        icon=":material/download:",
        type="primary",
    )
    charts, notes = page.count('<div class="chart"'), page.count('<p class="note"')
    st.caption(
        f"One HTML file of {len(page.encode('utf-8')) / 1e6:.1f} MB: {counted(charts, 'chart')}"
        + (f" and {counted(notes, 'note')} where a view has no chart offline" if notes else "")
        + ". Open it from disk in any browser; no server, no internet."
    )


def lesson_pack_buttons(place: str, lesson: Lesson, *, emphasis: bool = False) -> None:
    """The Lessons page's "Download offline pack (HTML)" for ``lesson``."""
    if lesson.steps:
        build = functools.partial(lesson_html, lesson, emphasis=emphasis)
        pack_buttons(place, lesson, build, "offline pack (HTML)", file_name(lesson.title))


def view_pack_buttons(page: str, params: dict[str, str]) -> None:
    """The Share box's "Download this view as offline HTML" for the view on screen."""
    params, name = dict(params), file_name(PAGE_TITLES.get(page, page))
    fingerprint = (page, tuple(sorted(params.items())))
    pack_buttons("view", fingerprint, functools.partial(view_html, page, params), "this view as offline HTML", name)
