"""The offline pack's HTML (issue 21, 4), written by ``app/views/lessons/offline_html.py``: one file that loads nothing, shows a
lesson's text literally and carries each chart's JSON so that it reads back equal."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from app.views.lessons.offline_html import CSP, Chart, Note, PackStep, inline_script, render, script_json

JS = "window.Plotly = {newPlot: function () {}}; var s = '</script><script>alert(1)</script>'; // <!-- x"


class Parsed(HTMLParser):
    """Every tag with its attributes, the text of each element by id, and the script bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.text: list[str] = []
        self._script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
        else:
            self.text.append(data)


def parse(page: str) -> Parsed:
    parsed = Parsed()
    parsed.feed(page)
    parsed.close()
    return parsed


def test_notes_questions_and_titles_show_literally():
    evil = '<script>alert("x")</script> <img src="http://evil.example/i.png"> & **not bold**'
    step = PackStep(
        evil,
        "line one\n" + evil,
        "Which <b>one</b>?",
        ("<i>a</i>", "b & c"),
        "1. <i>a</i>",
        (Note("<a href='https://evil.example'>x</a>"),),
    )
    page = render("Lesson <script>", [step], JS)
    parsed = parse(page)
    shown = "".join(parsed.text)
    assert evil in shown and "line one\n" + evil in shown  # the text itself, line break kept
    assert "Which <b>one</b>?" in shown and "<i>a</i>" in shown and "<a href='https://evil.example'>x</a>" in shown
    assert "**not bold**" in shown  # no emphasis for a teacher's text
    assert not [t for t, _ in parsed.tags if t in ("img", "b", "i", "a", "iframe", "link")]
    assert [attrs for attrs, _ in parsed.scripts if attrs.get("type") != "application/json"] == [{}, {}]


def test_the_builtin_lessons_emphasis_is_markup_made_after_escaping():
    page = render("T", [PackStep("A **bold** <b>x</b>", "*it* looks at **animal**")], JS, emphasis=True)
    shown = parse(page)
    assert [t for t, _ in shown.tags if t in ("strong", "em", "b")] == ["strong", "em", "strong"]
    assert "A bold <b>x</b>" in "".join(shown.text)


def test_nothing_is_fetched_and_every_chart_has_its_div_and_json():
    figures = [
        {
            "data": [{"type": "heatmap", "z": [[0.25, None], [1e-9, 0.5]], "x": ["</script>", "a&b"]}],
            "layout": {"title": {"text": "<b>L0</b>"}},
        },
        {"data": [], "layout": {}},
    ]
    steps = [
        PackStep("one", items=(Chart(json.dumps(figures[0]), "cap <1>"), Note("no chart"))),
        PackStep("two", items=(Chart(json.dumps(figures[1])),)),
    ]
    page = render("T", steps, JS)
    parsed = parse(page)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, (tag, attrs)  # scripts, images, frames: nothing loaded from anywhere
        if tag == "a":
            assert attrs["href"].startswith("#step-"), attrs
        else:
            assert "href" not in attrs, (tag, attrs)
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}) in parsed.tags
    assert "default-src 'none'" in CSP and "connect-src 'none'" in CSP
    divs = [attrs["id"] for tag, attrs in parsed.tags if tag == "div" and attrs.get("class") == "chart"]
    assert divs == ["chart-0", "chart-1"]
    data = {attrs["id"]: body for attrs, body in parsed.scripts if attrs.get("type") == "application/json"}
    assert [json.loads(data[f"{d}-data"]) for d in divs] == figures  # the same figures, read back
    assert page.count('<p class="note"') == 1
    code = [body for attrs, body in parsed.scripts if not attrs]
    assert code[0] == inline_script(JS) and "</script" not in code[0].lower()  # plotly.js whole, in one piece


def test_script_json_and_inline_script_cannot_close_the_element():
    text = json.dumps({"a": "</script><!-- & >"})
    safe = script_json(text)
    assert "<" not in safe and ">" not in safe and "&" not in safe and json.loads(safe) == json.loads(text)
    assert inline_script("a='</SCRIPT>'") == "a='<\\/SCRIPT>'"
