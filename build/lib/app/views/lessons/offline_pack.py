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
from app.views.lessons.lesson_file import PAGE_TITLES, Choice, Lesson, Link, Look, Predict, Step, slug
from app.views.lessons.offline_html import Chart, Note, PackStep, render
from app.views.lessons.offline_views import PACK_CELLS, NoChart, pack_view

MAX_CHART_CHARS = 40_000_000  # the charts' JSON in one pack at most (~160 maps of 256² cells); later ones: a note
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
            if isinstance(view, NoChart):
                return [Note(f"{label}: {view.reason}")]
            return [Chart(_json(fig), f"{label}. {caption}") for fig, caption in view.figures()]
    except Exception as err:  # noqa: BLE001 — a figure that cannot be built is a note, never a crash
        return [Note(f"{label}: this view could not be drawn for the pack: {plain_error(err)}")]


def _check(check) -> tuple[str, tuple[str, ...], str]:
    """(question, options, answer shown behind "Show the answer") of a step's knowledge check."""
    if isinstance(check, Choice):
        answer = f"{check.answer + 1}. {check.options[check.answer]}" + (f"\n{check.explain}" if check.explain else "")
        return check.question, check.options, answer
    if isinstance(check, (Predict, Look)):
        return check.question, (), "This check is answered by the real model: try it in the app, on the Lessons page."
    return "", (), ""


def pack_steps(steps: tuple[Step, ...], progress: Progress | None = None) -> list[PackStep]:
    """Every step with its links' charts; ``progress(fraction, text)`` after each link."""
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
                        item = Note(
                            f"{link.label}: left out, the pack already holds {MAX_CHART_CHARS // 1_000_000} MB "
                            "of charts (its limit)."
                        )
                items.append(item)
            done += 1
        question, options, answer = _check(step.check)
        out.append(PackStep(step.title, step.text, question, options, answer, tuple(items)))
    if progress is not None:
        progress(1.0, "Writing the file…")
    return out


def _about(what: str) -> str:
    js, version = plotly_js()
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{what}, saved from Attention Playground on {when}. This one file opens in any browser without the app "
        f"and without the internet: the charts' numbers and plotly.js {version} are inside it. Each attention map "
        f"holds at most {PACK_CELLS} × {PACK_CELLS} cells: a longer input is drawn as blocks, "
        "each showing the largest weight in it. Hover a cell to read its weight."
    )


def lesson_html(lesson: Lesson, *, emphasis: bool = False, progress: Progress | None = None) -> str:
    """The offline pack of ``lesson`` (``emphasis``: the built-in lesson's ``**bold**`` as bold)."""
    steps = pack_steps(lesson.steps, progress)
    return render(
        lesson.title,
        steps,
        plotly_js()[0],
        description=lesson.description,
        about=_about(f"A lesson of {len(steps)} step{'s' if len(steps) != 1 else ''}"),
        emphasis=emphasis,
    )


def view_html(page: str, params: dict[str, str], progress: Progress | None = None) -> str:
    """The offline pack of one view: ``page`` (a file stem of app/views/) opened with ``params``."""
    title = PAGE_TITLES.get(page, page)
    step = Step("view", title, "", (Link(f"{page}.py", f"This view of the {title} page", params),))
    return render(f"{title}: one view", pack_steps((step,), progress), plotly_js()[0], about=_about("One view"))


def file_name(title: str) -> str:
    """A file name from a title: ``slug-offline.html``."""
    return slug(title) + "-offline.html"


# ---------------------------------------------------------------- the buttons


def pack_buttons(
    place: str,
    fingerprint: object,
    build: Callable[[Progress], str],
    *,
    build_label: str,
    download_label: str,
    name: str,
) -> None:
    """A button that builds the pack (with a progress bar), then the download button that serves it. ``place``
    ("walk", "draft", "view") keys the buttons and the kept pack, which must still match ``fingerprint``."""
    kept: dict = default(Offline.built, {})
    if st.button(
        build_label,
        key=f"{Offline.build}{place}",
        icon=":material/offline_pin:",
        help="Charts, their numbers and plotly.js in one HTML file that opens without this server or the "
        "internet, e.g. on a student's laptop.",
    ):
        bar = st.progress(0.0, text="Building the offline pack…")
        try:
            page = build(lambda fraction, text: bar.progress(min(max(fraction, 0.0), 1.0), text=text))
        except Exception as err:  # noqa: BLE001 — e.g. plotly's files missing: a message, not a traceback
            bar.empty()
            show_error(err, before="The offline pack could not be built: ")
            return
        bar.empty()
        kept[place] = (fingerprint, page)
    if place not in kept or kept[place][0] != fingerprint:
        return
    page = kept[place][1]
    st.download_button(
        download_label,
        data=lambda: page,
        file_name=name,
        mime="text/html",
        on_click="ignore",
        key=f"{Offline.download}{place}",
        icon=":material/download:",
        type="primary",
    )
    charts = page.count('<div class="chart"')
    notes = page.count('<p class="note"')
    st.caption(
        f"One HTML file of {len(page.encode('utf-8')) / 1e6:.1f} MB: {charts} chart{'s' if charts != 1 else ''}"
        + (f" and {notes} note{'s' if notes != 1 else ''} where a view has no chart offline" if notes else "")
        + ". Open it from disk in any browser; no server, no internet."
    )


def lesson_pack_buttons(place: str, lesson: Lesson, *, emphasis: bool = False) -> None:
    """The Lessons page's "Download offline pack (HTML)" for ``lesson``."""
    if not lesson.steps:
        return
    pack_buttons(
        place,
        lesson,
        lambda progress: lesson_html(lesson, emphasis=emphasis, progress=progress),
        build_label="Build offline pack (HTML)",
        download_label="Download offline pack (HTML)",
        name=file_name(lesson.title),
    )


def view_pack_buttons(page: str, params: dict[str, str]) -> None:
    """The Share box's "Download this view as offline HTML" for the view on screen."""
    params = dict(params)
    pack_buttons(
        "view",
        (page, tuple(sorted(params.items()))),
        lambda progress: view_html(page, params, progress),
        build_label="Build this view as offline HTML",
        download_label="Download this view as offline HTML",
        name=file_name(PAGE_TITLES.get(page, page)),
    )
