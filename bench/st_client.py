"""A Streamlit client without a browser: the websocket protocol the app's frontend speaks, for load tests.

One :class:`Session` is one browser tab: it fetches the page first (so a cookie a load balancer sets on
that GET, e.g. HAProxy's ``SERVERID``, goes with the websocket handshake, as a browser sends it), opens
``/_stcore/stream`` with the ``streamlit`` subprotocol, and runs the script with ``rerun_script``
BackMsgs. A run ends at the ``script_finished`` ForwardMsg. Like the frontend it

- sends the current page's script hash (from the ``navigation`` message) after the first run,
- reruns the fragment that drew a widget when only that widget changes (``fragment_id``), as the
  frontend does, so a page's ``st.fragment`` saves the server the same work it saves for a browser,
- keeps a bound widget's value in the query string (the frontend writes it into the URL), and takes
  the query string the app writes (``page_info_changed``) as the next run's, as the address bar does
  (without it, an app that reads its link on every run sees a stale link from this client),
- tells the server which cacheable messages it holds (``cached_message_hashes``), so unchanged large
  elements come back as references, as they do to a browser,
- presses a button or a form's submit button (:meth:`Session.press`: a ``trigger_value`` with the form's
  other values), and keeps the ``st.fragment(run_every=…)`` timers a run asks for (``auto_rerun``), which
  :meth:`Session.auto_rerun` fires once, as the frontend's timer does (a page that polls a job).

Message classes: ``streamlit.proto.BackMsg_pb2.BackMsg`` and ``ForwardMsg_pb2.ForwardMsg``.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

SUBPROTOCOL = "streamlit"
WIDGET_KINDS = (
    "text_area",
    "text_input",
    "selectbox",
    "number_input",
    "slider",
    "checkbox",
    "radio",
    "multiselect",
    "button_group",
    "button",
    "file_uploader",
    "plotly_chart",
    "bidi_component",
)  # elements with an id
FINAL = {
    ForwardMsg.FINISHED_SUCCESSFULLY: None,
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error",
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: None,
}  # FINISHED_EARLY_FOR_RERUN is not final: a newer run follows


@dataclass
class Run:
    """One script run as the client saw it."""

    seconds: float
    failure: str | None = None  # None, or: "exception", "error box", "compile error", "timeout", "disconnect", …
    messages: int = 0
    bytes: int = 0
    texts: list[str] = field(default_factory=list)  # what it wrote: markdown, alerts, progress text, metrics


@dataclass
class Session:
    """One browser tab on ``url`` (``http://host:port``)."""

    url: str
    timeout_s: float = 60.0
    cookies: str = ""
    page_hash: str = ""
    query: dict[str, str] = field(default_factory=dict)
    widgets: list = field(default_factory=list)  # every new_element widget of the last run: (kind, proto)
    fragments: dict[str, str] = field(default_factory=dict)  # widget id -> the st.fragment that drew it
    auto_reruns: dict[str, float] = field(default_factory=dict)  # fragment id -> run_every seconds (timers)
    _cache: dict[str, int] = field(default_factory=dict)  # cacheable message hash -> run it was last seen in
    _max_age: int = 2
    _runs: int = 0
    _ws: object = None

    async def open(self, query: dict[str, str] | None = None, page_name: str = "") -> Run:
        """GET the page (keep its cookies), connect, and run the default page (or ``page_name``, a page's URL
        path, as a deep link opens it) with ``query``."""
        self.query = dict(query or {})
        try:
            self.cookies = await asyncio.wait_for(asyncio.to_thread(self._get_cookies), self.timeout_s)
            ws_url = "ws" + self.url[len("http") :] + "/_stcore/stream"
            headers = {"Cookie": self.cookies} if self.cookies else {}
            # ping_interval=None: a browser sends no pings of its own (it answers the server's), and a
            # client's ping left unanswered 20 s on a busy server would close the socket mid-class.
            self._ws = await connect(
                ws_url,
                subprotocols=[SUBPROTOCOL],
                additional_headers=headers,
                origin=self.url,
                max_size=None,
                open_timeout=self.timeout_s,
                ping_interval=None,
            )
        except (OSError, asyncio.TimeoutError, WebSocketException) as err:
            return Run(0.0, f"connect: {type(err).__name__}")
        return await self.rerun({}, page_name=page_name)

    def _get_cookies(self) -> str:
        with urllib.request.urlopen(self.url + "/", timeout=self.timeout_s) as resp:
            resp.read()
            return "; ".join(c.split(";", 1)[0].strip() for c in resp.headers.get_all("Set-Cookie") or [])

    def widget_id(self, kind: str, label: str) -> str | None:
        """The id of the last run's ``kind`` widget (e.g. ``text_area``) labelled ``label`` (case and spaces
        ignored), or of the page's only widget of that kind; None if neither is there."""
        same = [w for k, w in self.widgets if k == kind]
        named = [w for w in same if w.label.strip().casefold() == label.strip().casefold()]
        found = named or (same if len(same) == 1 else [])
        return found[0].id if found else None

    def query_key(self, widget_id: str) -> str:
        """The query parameter a widget is bound to ('' if none)."""
        return next((getattr(w, "query_param_key", "") for _, w in self.widgets if w.id == widget_id), "")

    async def press(self, widget_id: str, values: list | None = None) -> Run:
        """Press the button ``widget_id`` (or a form's submit button, with the form's ``values``: prepared
        ``WidgetState`` protos, see :func:`value_state`), in the fragment that drew it, as the frontend does."""
        trigger = WidgetState(id=widget_id, trigger_value=True)
        return await self.rerun({}, states=[*(values or []), trigger], fragment_id=self.fragments.get(widget_id, ""))

    async def auto_rerun(self) -> Run | None:
        """Fire the page's ``run_every`` fragment timer once (the shortest, if several), as the frontend does
        every ``interval`` seconds; None when the last run left no timer."""
        if not self.auto_reruns:
            return None
        fragment_id = min(self.auto_reruns, key=self.auto_reruns.get)
        return await self.rerun({}, fragment_id=fragment_id, is_auto_rerun=True)

    async def rerun(
        self,
        string_values: dict[str, str],
        *,
        states: list | None = None,
        page_name: str = "",
        fragment_id: str | None = None,
        is_auto_rerun: bool = False,
    ) -> Run:
        """Send a rerun with these widget values (id -> text) and any prepared ``WidgetState`` protos
        (``states``: e.g. a forged value of the wrong type); wait for the run to finish. ``page_name``
        (a page's URL path, e.g. ``"heads"``) opens that page, as a deep link does. ``fragment_id`` reruns
        that fragment ("": the whole page; None: the fragment of the ``string_values``' widget, if one)."""
        if self._ws is None:
            return Run(0.0, "not sent (disconnected)")
        msg = BackMsg()
        state = msg.rerun_script
        for widget_id, value in string_values.items():
            widget = state.widget_states.widgets.add()
            widget.id, widget.string_value = widget_id, value
            if key := self.query_key(widget_id):
                self.query[key] = value
        for forged in states or []:
            state.widget_states.widgets.add().CopyFrom(forged)
        state.query_string = urllib.parse.urlencode(self.query)
        drawn_in = {self.fragments.get(widget_id, "") for widget_id in string_values}
        if fragment_id is not None:
            state.fragment_id = fragment_id
        elif len(drawn_in) == 1 and "" not in drawn_in and not states:
            state.fragment_id = drawn_in.pop()  # a widget inside a fragment reruns that fragment, as in a browser
        state.is_auto_rerun = is_auto_rerun
        state.page_script_hash = "" if page_name else self.page_hash
        state.page_name = page_name
        state.cached_message_hashes.extend(self._cache)
        start = time.perf_counter()
        try:
            await self._ws.send(msg.SerializeToString())
            run = await asyncio.wait_for(self._receive_run(start), self.timeout_s)
        except (asyncio.TimeoutError, OSError, WebSocketException) as err:
            await self.close()  # late messages of this run would be read as the next run's
            lost = "timeout" if isinstance(err, asyncio.TimeoutError) else f"disconnect: {type(err).__name__}"
            return Run(time.perf_counter() - start, lost)
        self._runs += 1
        self._cache = {h: seen for h, seen in self._cache.items() if self._runs - seen <= self._max_age}
        return run

    async def _receive_run(self, start: float) -> Run:
        run, widgets, timers, stopped = Run(0.0), [], {}, set()
        while True:
            data = await self._ws.recv()
            run.messages += 1
            run.bytes += len(data)
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            kind = fwd.WhichOneof("type")
            if fwd.metadata.cacheable and fwd.hash:
                self._cache[fwd.hash] = self._runs + 1
            elif kind == "ref_hash":
                self._cache[fwd.ref_hash] = self._runs + 1
            if kind == "new_session":
                self._max_age = fwd.new_session.config.max_cached_message_age or self._max_age
            elif kind == "navigation" and fwd.navigation.page_script_hash:
                self.page_hash = fwd.navigation.page_script_hash
            elif kind == "auto_rerun":
                timers[fwd.auto_rerun.fragment_id] = fwd.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                stopped.update(fwd.stop_auto_rerun.fragment_ids)
            elif kind == "page_info_changed":  # the app wrote its URL (st.query_params): a browser's address
                self.query = dict(urllib.parse.parse_qsl(fwd.page_info_changed.query_string))  # bar follows
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                element_kind = element.WhichOneof("type")
                if element_kind == "exception" and run.failure is None:
                    run.failure = "exception"
                elif element_kind == "alert" and element.alert.format == Alert.ERROR and run.failure is None:
                    run.failure = "error box"
                if text := _text(element, element_kind):
                    run.texts.append(text)
                if element_kind in WIDGET_KINDS:
                    widget = getattr(element, element_kind)
                    widgets.append((element_kind, widget))
                    if getattr(widget, "id", ""):
                        self.fragments[widget.id] = fwd.delta.fragment_id
            elif kind == "script_finished" and fwd.script_finished in FINAL:
                run.seconds = time.perf_counter() - start
                run.failure = run.failure or FINAL[fwd.script_finished]
                if fwd.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:  # only the fragment's
                    fresh = {w.id for _, w in widgets}  # widgets came: the others stay as they were
                    self.widgets = [(k, w) for k, w in self.widgets if w.id not in fresh] + widgets
                    self.auto_reruns.update(timers)
                else:
                    self.widgets = widgets or self.widgets
                    self.auto_reruns = timers  # a full run asks again for every timer it still wants
                for fragment_id in stopped:
                    self.auto_reruns.pop(fragment_id, None)
                return run

    async def close(self) -> None:
        if self._ws is not None:
            try:
                await asyncio.wait_for(self._ws.close(), 5)
            except (OSError, asyncio.TimeoutError, WebSocketException):
                pass
            self._ws = None


def _text(element, kind: str) -> str:
    """The words an element shows, for a client that reads the page (markdown and captions, alerts, a
    progress bar's text, a metric's label and value); "" for any other element."""
    if kind in ("markdown", "alert"):
        return getattr(element, kind).body
    if kind == "progress":
        return element.progress.text
    if kind == "metric":
        return f"{element.metric.label}: {element.metric.body}"
    return ""


def value_state(widget, value) -> WidgetState:
    """A ``WidgetState`` giving the widget proto ``widget`` (from :attr:`Session.widgets`) ``value``, as the
    frontend sends it: a number input's int or float by its data type, a bool, else a string."""
    state = WidgetState(id=widget.id)
    if isinstance(value, bool):
        state.bool_value = value
    elif isinstance(value, (int, float)):
        if getattr(widget, "data_type", 1) == 0:  # NumberInput.INT
            state.int_value = int(value)
        else:
            state.double_value = float(value)
    else:
        state.string_value = str(value)
    return state
