"""The load test's second client: each session speaks Streamlit's own WebSocket protocol (BackMsg out,
ForwardMsg in) instead of driving a browser, so 30-40 sessions cost the client side little CPU.

Run: python bench/bench_load.py --client protocol --sessions 30 --rounds 3 [--url ... --pids ...]

What one session does (the browser client's script, bench/bench_load.py): GET the page (cookies: the
proxy's sticky ``lab_replica`` and Streamlit's XSRF cookie, sent back with the WebSocket like a browser
does), connect to ``/_stcore/stream``, open the Playground with ``?text=`` (``first_load``); every
``--uploads-every``-th session uploads its own model (``upload``, ``use_model``); then per
round: switch to the Playground and set the sentence box to its own sentence (``playground``: until a
quote of it is shown), switch to Attention (``attention``: until the heatmap's rows are its tokens),
change the layer (``layer``) and the head (``head``: until the heatmap's title changes). A widget inside
an ``st.fragment`` is changed the way the frontend does it: a rerun with that fragment's id.

Action time = BackMsg sent → the ForwardMsg that finished the run which showed the awaited result:
the server's work and the transfer, NOT the browser's rendering (Plotly drawing, layout) and not the
static files a browser fetches. Like the frontend it keeps the large elements the server marks
cacheable and names their hashes in each rerun (the server then sends references). What it does not do
that a browser does: it sends only the values of the widgets it changed (the server keeps the others
from the previous run) and no heartbeats. Uploads go the frontend's way: a file-URL request over the
stream, an HTTP PUT (with the XSRF cookie and header), then a rerun with the file's info.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from pathlib import Path

import streamlit  # noqa: F401  (imported before its protobufs: they need the package initialised)
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

HEATMAP_META = "attention-heatmap"
DONE = {
    ForwardMsg.FINISHED_SUCCESSFULLY,
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
}
MAIN, SIDEBAR = 0, 1  # delta_path[0]: the root container an element is in


@dataclass
class Widget:
    """A widget as the last run drew it: enough to find it by label and to send a new value."""

    id: str
    kind: str  # the Element oneof name: "selectbox", "text_area", ...
    label: str
    query_key: str
    fragment_id: str
    options: list[str]
    root: int
    value: str  # a selectbox's shown option, a text widget's text ("" when unknown)


@dataclass
class View:
    """What a browser would show, rebuilt from ForwardMsgs alone (no network here: testable).

    ``elements`` maps a delta path to its element; a full run that finishes drops the elements it did
    not draw again (as the frontend clears stale elements); a fragment run only replaces its own."""

    elements: dict[tuple[int, ...], object] = field(default_factory=dict)
    fragments: dict[tuple[int, ...], str] = field(default_factory=dict)
    touched: set[tuple[int, ...]] = field(default_factory=set)
    rerun_fragments: set[str] = field(default_factory=set)
    pages: dict[str, str] = field(default_factory=dict)  # url path ("playground") → page script hash
    page_hash: str = ""
    query_string: str = ""
    finished: int = 0  # runs that ended (successfully, compile error or fragment), not early-for-rerun
    running: bool = False
    session_id: str = ""
    file_urls: dict[str, object] = field(default_factory=dict)  # request id → FileURLsResponse
    cache: dict[str, ForwardMsg] = field(default_factory=dict)  # hash → cacheable delta (kept for the session)
    exceptions: list[str] = field(default_factory=list)
    protocol_errors: list[str] = field(default_factory=list)

    def apply(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session" and msg.new_session.HasField("initialize"):
            self.session_id = msg.new_session.initialize.session_id or self.session_id
        if kind == "file_urls_response":
            self.file_urls[msg.file_urls_response.response_id] = msg.file_urls_response
        elif kind == "new_session":
            self.page_hash, self.running = msg.new_session.page_script_hash, True
            self.started()
        elif kind == "navigation":
            self._pages(msg.navigation.app_pages)
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "delta":
            if msg.metadata.cacheable and msg.hash:  # as the frontend's message cache keeps large elements
                self.cache[msg.hash] = msg
            self._delta(tuple(msg.metadata.delta_path), msg.delta)
        elif kind == "script_finished":
            self._finished(msg.script_finished)
        elif kind == "ref_hash":  # an element this client said it holds (cached_message_hashes)
            self._reference(msg)

    def _reference(self, ref: ForwardMsg) -> None:
        cached = self.cache.get(ref.ref_hash)
        if cached is None:
            self.protocol_errors.append(f"ref_hash {ref.ref_hash[:12]} of a message never received")
            return
        msg = ForwardMsg()
        msg.CopyFrom(cached)
        msg.metadata.CopyFrom(ref.metadata)
        self.apply(msg)

    def _pages(self, pages) -> None:
        for page in pages:  # the default page also appears with an empty path
            if page.url_pathname:
                self.pages[page.url_pathname] = page.page_script_hash

    def started(self) -> None:
        """A rerun was asked for: what it draws is counted afresh."""
        self.touched, self.rerun_fragments = set(), set()

    def _delta(self, path: tuple[int, ...], delta) -> None:
        self.touched.add(path)
        if delta.fragment_id:
            self.rerun_fragments.add(delta.fragment_id)
        if delta.WhichOneof("type") != "new_element":  # a block or transient now holds this place
            self.elements.pop(path, None)
            self.fragments.pop(path, None)
            return
        element = delta.new_element
        self.elements[path], self.fragments[path] = element, delta.fragment_id
        if element.WhichOneof("type") == "exception":
            exc = element.exception
            self.exceptions.append(f"{exc.type}: {exc.message}"[:300])

    def _finished(self, status: int) -> None:
        full = status == ForwardMsg.FINISHED_SUCCESSFULLY
        if full or status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            # what the run did not draw again is gone (a fragment run: only within its fragments)
            stale = [
                p
                for p in self.elements
                if p not in self.touched and (full or self.fragments.get(p) in self.rerun_fragments)
            ]
            for path in stale:
                del self.elements[path]
                self.fragments.pop(path, None)
        if status in DONE:
            self.finished += 1
            self.running = False

    # ---------- what is on the page ----------

    def widgets(self) -> list[Widget]:
        found = []
        for path, element in sorted(self.elements.items()):
            kind = element.WhichOneof("type")
            proto = getattr(element, kind) if kind else None
            if proto is None or not getattr(proto, "id", "") or kind == "plotly_chart":
                continue
            found.append(
                Widget(
                    id=proto.id,
                    kind=kind,
                    label=getattr(proto, "label", ""),
                    query_key=getattr(proto, "query_param_key", ""),
                    fragment_id=self.fragments.get(path, ""),
                    options=list(getattr(proto, "options", [])),
                    root=path[0] if path else MAIN,
                    value=_shown_value(kind, proto),
                )
            )
        return found

    def widget(self, label: str, kind: str, root: int = MAIN) -> Widget | None:
        """The widget of this kind labelled ``label`` (or bound to ``?label=``), in that root."""
        for w in self.widgets():
            if w.kind == kind and w.root == root and label.lower() in (w.label.lower(), w.query_key.lower()):
                return w
        return None

    def primary_button(self) -> Widget | None:
        """The main area's primary button (the Checkpoints page's "use this model")."""
        for path, element in sorted(self.elements.items()):
            if path[0] == MAIN and element.WhichOneof("type") == "button" and element.button.type == "primary":
                return next(w for w in self.widgets() if w.id == element.button.id)
        return None

    def alert_error(self) -> str | None:
        for path, element in sorted(self.elements.items()):
            if path[0] == MAIN and element.WhichOneof("type") == "alert" and element.alert.format == 1:  # ERROR
                return element.alert.body
        return None

    def outcome(self) -> str | None:
        """What a hostile upload led to, read as the browser client reads the page (load_corpus.OUTCOME):
        an exception in the main area, else its first error or warning ("refused: ..."), else the
        primary button ("accepted"), else None (nothing decided yet)."""
        main = [e for p, e in sorted(self.elements.items()) if p and p[0] == MAIN]
        if any(e.WhichOneof("type") == "exception" for e in main):
            return "exception"
        for element in main:
            if element.WhichOneof("type") == "alert" and element.alert.format in (1, 2):  # ERROR, WARNING
                return "refused: " + re.sub(r"\\(.)", r"\1", element.alert.body)[:160]  # as shown: no escapes
        return "accepted" if self.primary_button() is not None else None

    def markdown_contains(self, text: str, root: int = MAIN) -> bool:
        return any(
            e.WhichOneof("type") == "markdown" and text in e.markdown.body
            for p, e in self.elements.items()
            if p and p[0] == root
        )

    def heatmap(self) -> dict | None:
        """{"title", "y"} of the Plotly figure whose layout.meta is the attention heatmap's."""
        for element in self.elements.values():
            if element.WhichOneof("type") != "plotly_chart" or HEATMAP_META not in element.plotly_chart.spec:
                continue
            spec = json.loads(element.plotly_chart.spec)
            layout = spec.get("layout", {})
            if layout.get("meta") == HEATMAP_META and spec.get("data"):
                title = layout.get("title", {})
                return {"title": str(title.get("text", "") if isinstance(title, dict) else title),
                        "y": list(spec["data"][0].get("y", []))}  # fmt: skip
        return None

    def contains(self, text: str) -> bool:
        """``text`` anywhere in what is shown (string fields, figure specs, table data: UTF-8 in the protobuf)."""
        needle = text.encode()
        return any(needle in element.SerializeToString() for element in self.elements.values())

    def matches(self, pattern) -> bool:
        """A compiled bytes regex found in what is shown."""
        return any(pattern.search(element.SerializeToString()) for element in self.elements.values())


def _shown_value(kind: str, proto) -> str:
    if kind == "selectbox":
        if proto.set_value or proto.raw_value:
            return proto.raw_value
        return proto.options[proto.default] if 0 <= proto.default < len(proto.options) else ""
    if kind in ("text_area", "text_input"):
        return proto.value if proto.set_value else proto.default
    return ""


def hostile_client(args) -> str:
    """``protocol`` unless asked otherwise (``--hostile-client`` if bench_load.py has it, else the
    environment's LOAD_HOSTILE_CLIENT): chromium on the same cores steals the normal sessions' CPU."""
    choice = getattr(args, "hostile_client", None) or os.environ.get("LOAD_HOSTILE_CLIENT", "protocol")
    if choice not in ("protocol", "browser"):
        raise ValueError(f"hostile client {choice!r}: protocol or browser")
    return choice


def rerun_message(
    query_string: str,
    states: dict[str, WidgetState],
    page_hash: str = "",
    page_name: str = "",
    fragment_id: str = "",
    cached: list[str] = (),
) -> bytes:
    """The BackMsg the frontend sends for a run: address, widget values, page, fragment, and the hashes
    of the large elements it holds (the server then sends a reference instead of the element)."""
    msg = BackMsg()
    state = msg.rerun_script
    state.query_string = query_string
    state.page_script_hash = page_hash
    state.page_name = page_name
    state.fragment_id = fragment_id
    state.widget_states.widgets.extend(states.values())
    state.cached_message_hashes.extend(cached)
    return msg.SerializeToString()


def _multipart(path: Path) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    return head.encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode(), boundary


def _absolute(base: str, url: str) -> str:
    return url if "://" in url else base + "/" + url.lstrip("/")


def string_state(widget_id: str, value: str) -> WidgetState:
    state = WidgetState(id=widget_id)
    state.string_value = value
    return state


# ---------- one session over the wire ----------


class ProtocolSession:
    """One browser tab's conversation with the app, without the browser."""

    def __init__(self, url: str, timeout: float):
        self.url, self.timeout = url.rstrip("/"), timeout
        self.view, self.states = View(), {}
        self.ws, self.reader, self.changed, self.jar = None, None, asyncio.Condition(), CookieJar()
        self.done_at = 0.0  # monotonic time of the last finished run's script_finished
        self.closed: BaseException | None = None

    async def open(self, page: str, query: str, until) -> None:
        """GET the page like a browser (cookies), connect the stream, run ``page`` with ``query``
        until ``until(view)`` holds (a cold server imports and loads first: 3 x the timeout)."""
        from websockets.asyncio.client import connect

        self.jar = CookieJar()
        await asyncio.to_thread(self._get, f"{self.url}/{page}?{query}")
        await asyncio.to_thread(self._get, f"{self.url}/_stcore/health")  # the frontend's first call: XSRF cookie
        cookies = self.cookies()
        protocols = ["streamlit"] + ([cookies["_streamlit_xsrf"]] if "_streamlit_xsrf" in cookies else [])
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
        ws_url = self.url.replace("http", "ws", 1) + "/_stcore/stream"
        self.ws = await connect(ws_url, origin=self.url, subprotocols=protocols, additional_headers=headers,
                                max_size=None, proxy=None, open_timeout=self.timeout)  # fmt: skip
        self.reader = asyncio.create_task(self._read())
        self.view.query_string = query
        await self.run(until, page_name=page, query_string=query, timeout=3 * self.timeout)

    def cookies(self) -> dict[str, str]:
        return {c.name: c.value for c in self.jar}

    def _get(self, url: str, data: bytes | None = None, headers: dict | None = None, method: str = "GET") -> bytes:
        handlers = urllib.request.HTTPCookieProcessor(self.jar), urllib.request.ProxyHandler({})
        request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
        with urllib.request.build_opener(*handlers).open(request, timeout=self.timeout) as reply:
            return reply.read()

    async def _read(self) -> None:
        try:
            async for data in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                async with self.changed:
                    before = self.view.finished
                    self.view.apply(msg)
                    if self.view.finished != before:
                        self.done_at = time.monotonic()
                    self.changed.notify_all()
        except Exception as err:  # the connection broke: every waiter learns it
            self.closed = err
        finally:
            self.closed = self.closed or ConnectionError("the server closed the stream")
            async with self.changed:
                self.changed.notify_all()

    async def run(
        self, until, *, page_hash="", page_name="", fragment_id="", query_string=None, timeout=None, trigger=None
    ) -> float:
        """Send one rerun; wait until a run has finished after it and ``until(view)`` holds.
        Returns seconds from sending to the script_finished that made it hold."""
        async with self.changed:
            since = self.view.finished
        query = self.view.query_string if query_string is None else query_string
        if not page_hash and not page_name:  # the frontend always names the page it is on
            page_hash = self.view.page_hash
        self.view.started()
        start = time.monotonic()
        states = self.states | ({trigger.id: trigger} if trigger is not None else {})  # a click is sent once
        await self.ws.send(rerun_message(query, states, page_hash, page_name, fragment_id, list(self.view.cache)))

        def ready() -> bool:
            return self.closed is not None or (
                self.view.finished > since and not self.view.running and until(self.view)
            )

        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(ready), timeout or self.timeout)
        if self.closed is not None:
            raise ConnectionError(f"stream closed: {self.closed}")
        self._forget_gone_widgets()
        return self.done_at - start

    def _forget_gone_widgets(self) -> None:
        """The frontend sends the values of the widgets on screen only."""
        present = {w.id for w in self.view.widgets()}
        self.states = {k: v for k, v in self.states.items() if k in present}

    async def switch(self, page: str, until) -> float:
        """A click on a sidebar link: the page's script hash, the address's query cleared."""
        page_hash = self.view.pages.get(page)
        if not page_hash:
            raise RuntimeError(f"no page {page!r} in the navigation: {sorted(self.view.pages)}")
        self.view.query_string = ""
        return await self.run(lambda v: v.page_hash == page_hash and until(v), page_hash=page_hash)

    async def set_value(self, widget: Widget, value: str, until) -> float:
        """Give ``widget`` a new value (its bound query parameter too) and rerun it, in its fragment if any."""
        self.states[widget.id] = string_state(widget.id, value)
        if widget.query_key:
            params = dict(urllib.parse.parse_qsl(self.view.query_string, keep_blank_values=True))
            params[widget.query_key] = value
            self.view.query_string = urllib.parse.urlencode(params)
        return await self.run(until, fragment_id=widget.fragment_id)

    async def click(self, button: Widget, until) -> float:
        state = WidgetState(id=button.id)
        state.trigger_value = True
        return await self.run(until, fragment_id=button.fragment_id, trigger=state)

    async def upload(self, uploader: Widget, path: Path, until) -> float:
        """The frontend's upload: ask for a URL over the stream, PUT the file, rerun with its info."""
        start = time.monotonic()
        request_id = uuid.uuid4().hex
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.file_names.append(path.name)
        msg.file_urls_request.session_id = self.view.session_id
        await self.ws.send(msg.SerializeToString())
        async with self.changed:
            ready = lambda: self.closed is not None or request_id in self.view.file_urls  # noqa: E731
            await asyncio.wait_for(self.changed.wait_for(ready), self.timeout)
        urls = self.view.file_urls.pop(request_id, None)
        if urls is None or not urls.file_urls:
            raise RuntimeError(f"no upload URL: {getattr(urls, 'error_msg', self.closed)}")
        target = urls.file_urls[0]
        body, boundary = _multipart(path)
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        if xsrf := self.cookies().get("_streamlit_xsrf"):
            headers["X-Xsrftoken"] = xsrf
        await asyncio.to_thread(self._get, _absolute(self.url, target.upload_url), body, headers, "PUT")
        state = WidgetState(id=uploader.id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = path.name, path.stat().st_size, target.file_id
        info.file_urls.CopyFrom(target)
        self.states[uploader.id] = state
        await self.run(until, fragment_id=uploader.fragment_id)
        return self.done_at - start

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            await asyncio.gather(self.reader, return_exceptions=True)
