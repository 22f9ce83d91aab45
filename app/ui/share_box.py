"""The sidebar's "Share this view": the page's link, a copy button and a QR code (also full screen).

A teacher can lock controls in the link (``hide=``); ``present=1`` is left out unless "Open in presenter mode".
"""

from __future__ import annotations

import functools
import io
import json
from urllib.parse import parse_qsl, urlsplit

import segno
import streamlit as st

from app.links import page_link
from app.state import HIDEABLE, Look


class Share:
    """The share box's session keys."""

    lock = "share_lock"  # the teacher's "lock in the link" choice
    present_link = "share_present"  # the teacher's "open in presenter mode" choice for the shared link
    qr_button = "share_qr_big"
    qr_big = "share_qr_full"  # the dialog's image container (its CSS fits the code to the window)
    link = "share_link"  # the link the box showed last (what the full-screen QR code encodes)
    open = "share_open"  # the box is open (its expander's state)


QR_SCALE, QR_BORDER = 4, 2  # pixels per module, quiet-zone modules
QR_BIG_SCALE = 16  # pixels per module of the full-screen QR code (sharp when the dialog stretches it)
TOO_LONG = "The link is {n:,} characters long, too long for a QR code (about 2,900 fit): shorten the text to get one."
LOCK_LABELS = {"causal": "causal mask", "max_tokens": "token limit", "block": "attention block"}  # others: the name


def share_options():
    """The "Share this view" expander with its options, drawn each full run before the page; None while closed (a
    closed box builds no link or QR code)."""
    box = st.sidebar.expander("Share this view", icon=":material/share:", key=Share.open, on_change="rerun")
    if box.open is False:
        return None
    with box:
        st.multiselect(
            "Lock in the shared link",
            list(HIDEABLE),
            key=Share.lock,
            format_func=lambda name: LOCK_LABELS.get(name, name),
            placeholder="Nothing locked",
            help="Hides these controls for whoever opens the link (they keep the values of this view). "
            "Your own page is not changed.",
        )
        st.checkbox(
            "Open in presenter mode",
            key=Share.present_link,
            help="Off: the link opens the normal view (what phones and laptops need), even when you present.",
        )
        # always enabled: this runs before the page, so a box just opened has no link yet, but a press comes after a
        # run that drew the box and so wrote the link it shows
        pressed = st.button("Show the QR code full screen", icon=":material/qr_code_2:", key=Share.qr_button)
        if pressed and (link := st.session_state.get(Share.link)):
            qr_dialog(link)
    return box


@st.dialog("Scan to open this view", width="large")
def qr_dialog(link: str) -> None:
    """The share box's QR code as large as the dialog, for a class to scan."""
    png = qr_png(link, QR_BIG_SCALE)
    if png is None:
        return st.write(TOO_LONG.format(n=len(link)))
    st.html(
        f"<style>.st-key-{Share.qr_big} {{ align-items: center; }} .st-key-{Share.qr_big} img {{ max-height: calc(100vh - 14rem); width: auto !important; "
        "max-width: 100%; margin: 0 auto; display: block; image-rendering: pixelated; }</style>"
    )
    with st.container(key=Share.qr_big):  # as large as the window allows, whole (a phone must see all of it)
        st.image(png, width="stretch", alt="QR code of the shared link, full screen")
    st.caption(link)


def shared_link(link: str, hidden: tuple[str, ...]) -> str:
    """``link`` with the teacher's locked controls added to its ``hide=``, and ``present`` only when ticked."""
    pairs = parse_qsl(urlsplit(link).query, keep_blank_values=True)
    wanted = [(name, value) for name, value in pairs if name != Look.present]
    lock = [name for name in HIDEABLE if name in hidden or name in (st.session_state.get(Share.lock) or ())]
    if lock and set(lock) != set(hidden):
        wanted = [(name, value) for name, value in wanted if name != Look.hide] + [(Look.hide, ",".join(lock))]
    if st.session_state.get(Share.present_link):
        wanted.append((Look.present, "1"))
    if wanted == pairs:
        return link
    grouped: dict[str, list[str]] = {}
    for name, value in wanted:  # a list parameter repeats its name
        grouped.setdefault(name, []).append(value)
    return page_link(link, {name: values[0] if len(values) == 1 else values for name, values in grouped.items()})


@functools.lru_cache(maxsize=64)
def qr_png(link: str, scale: int = QR_SCALE) -> bytes | None:
    """The QR code of ``link`` as PNG bytes (error correction L); None when it does not fit."""
    try:
        code = segno.make(link, error="l", micro=False, boost_error=False)
    except segno.DataOverflowError:
        return None
    buf = io.BytesIO()
    code.save(buf, kind="png", scale=scale, border=QR_BORDER)
    return buf.getvalue()


def copy_button_html(link: str) -> str:
    """A button that copies ``link`` (the clipboard API, else a selection)."""
    data = json.dumps(link).replace("<", "\\u003c")  # a JS string that cannot end the script element
    return f"""<!doctype html><html><head><style>
body{{margin:0;font-family:"Source Sans Pro",sans-serif;font-size:14px;color-scheme:light dark}}
button{{padding:.3rem .8rem;border-radius:.5rem;border:1px solid rgba(128,128,128,.5);background:transparent;
color:inherit;cursor:pointer;font:inherit}} span{{margin-left:.5rem}}</style></head><body>
<button id="copy" type="button" aria-label="Copy link of this view">Copy link</button><span id="said" role="status"></span>
<script>
const link = {data};
document.getElementById("copy").addEventListener("click", async () => {{
  let ok = false;
  try {{ await navigator.clipboard.writeText(link); ok = true; }} catch (e) {{}}
  if (!ok) {{
    const area = document.createElement("textarea");
    area.value = link; document.body.appendChild(area); area.select();
    try {{ ok = document.execCommand("copy"); }} catch (e) {{}}
    area.remove();
  }}
  document.getElementById("said").textContent = ok ? "Copied" : "Select the link above and copy it";
}});
</script></body></html>"""


def draw_share(slot, link: str, hidden: tuple[str, ...]) -> None:
    """Fill ``slot`` with the link, a copy button and its QR code."""
    link = shared_link(link, hidden)
    st.session_state[Share.link] = link
    with slot.container():
        st.code(link, language=None, wrap_lines=True)
        st.iframe(copy_button_html(link), height=40, alt="Copy link")
        if hidden:
            st.caption(f"This view came from a link that hides: {', '.join(LOCK_LABELS.get(n, n) for n in hidden)}.")
        png = qr_png(link)
        if png is None:
            st.caption(TOO_LONG.format(n=len(link)))
        else:
            st.image(png, caption="Scan to open this view on a phone", alt="QR code of the link above")
        st.caption(
            "Anyone who opens the link sees this page with these settings; a sentence longer than "
            "16,000 characters is not carried."
        )
