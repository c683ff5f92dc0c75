"""A scriptable fake upstream on a loopback socket, independent of any wire format.

Each test scripts what the next calls answer (text, a stream, an error, a delay, a
dropped connection) with ``Reply`` objects and reads back what the gateway sent in
``requests``. A subclass renders replies in one provider's wire format.
"""

import contextlib
import json
import math
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Reply:
    """What one upstream call answers. Build with the class methods."""

    text: str = ""
    chunks: tuple[str, ...] = ()
    stream: bool | None = None  # None: as the request asks
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    thinking: str = ""  # the model's reasoning before its answer (where the format shows it)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    # Of those, reported as details where the format has them (0: not reported).
    cached_tokens: int = 0
    cache_write_tokens: int = 0  # Anthropic's cache_creation_input_tokens
    reasoning_tokens: int = 0
    finish_reason: str = "stop"
    status: int = 200
    error_body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    chunk_delay: float = 0.0  # seconds between stream chunks (between writes)
    # Stream events sent in one write (0: the whole stream in one write), so that one read
    # of the gateway's may carry several events.
    events_per_write: int = 1
    # After this many events, wait for ``release`` (set by the test, at most HOLD_LIMIT
    # seconds) before sending the rest: what the client saw meanwhile was not buffered.
    hold_after_chunks: int | None = None
    release: threading.Event | None = None
    drop: bool = False  # close the connection without answering
    drop_after_chunks: int | None = None  # close a stream after this many chunks
    raw_body: Any = None  # sent as the JSON body instead of a rendered reply
    raw_frames: tuple[bytes, ...] = ()  # sent as the stream instead of rendered frames

    @classmethod
    def of_text(cls, text: str, **options: Any) -> "Reply":
        return cls(text=text, chunks=tuple(_split(text)), **options)

    @classmethod
    def of_chunks(cls, *chunks: str, **options: Any) -> "Reply":
        return cls(text="".join(chunks), chunks=chunks, **options)

    @classmethod
    def of_tool_calls(cls, *calls: tuple[str, dict[str, Any]], **options: Any) -> "Reply":
        return cls(tool_calls=calls, finish_reason="tool_calls", **options)

    @classmethod
    def of_error(cls, status: int, body: Any, **options: Any) -> "Reply":
        return cls(status=status, error_body=body, **options)


def _split(text: str) -> list[str]:
    words = text.split(" ")
    return [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words)]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    disconnected: bool = False
    number: int = 0  # the call's place among all calls this fake answered (unique ids)
    client_port: int = 0  # the connection it came on (a kept connection keeps its port)
    # Each write of a stream: (events sent so far, time.monotonic() once written); with
    # raw_frames, frames rather than events.
    sent: list[tuple[int, float]] = field(default_factory=list)
    released: bool = False  # a held stream was released by the test (not by HOLD_LIMIT)

    def call_id(self, prefix: str, index: int) -> str:
        """A tool call id unique to this call, as real providers give them."""
        return f"{prefix}_{self.number}_{index}"


@dataclass
class Gauge:
    """How many calls that ``matches`` are waiting for their reply at this moment (from
    their arrival until their reply begins, after its ``delay``), and the most there ever
    were at once."""

    matches: Callable[[Recorded], bool]
    now: int = 0
    peak: int = 0


class FakeUpstream:
    """Subclasses implement ``render_json``, ``render_stream`` and ``is_stream``."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[Recorded] = []
        self._script: list[Reply] = []
        self._rules: list[tuple[Callable[[Recorded], bool], Reply]] = []
        self._gauges: list[Gauge] = []
        self._answered = 0
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._scheme = "http"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def over_tls(self, context: ssl.SSLContext) -> Self:
        """Serve HTTPS with ``context`` (its certificate); before ``start``."""
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._scheme = "https"
        return self

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def answer_when(self, matches: Callable[[Recorded], bool], reply: Reply) -> None:
        """Answer every call that ``matches`` with ``reply``, whatever the script says
        (for calls made in the background, such as judges, whose order is not fixed)."""
        with self._lock:
            self._rules.append((matches, reply))

    def gauge(self, matches: Callable[[Recorded], bool]) -> Gauge:
        """Count the calls that ``matches`` while they wait for their reply."""
        with self._lock:
            self._gauges.append(Gauge(matches))
            return self._gauges[-1]

    def entering(self, recorded: Recorded) -> list[Gauge]:
        """The gauges a call being answered counts in (until ``leaving``)."""
        with self._lock:
            counting = [gauge for gauge in self._gauges if gauge.matches(recorded)]
            for gauge in counting:
                gauge.now += 1
                gauge.peak = max(gauge.peak, gauge.now)
            return counting

    def leaving(self, gauges: list[Gauge]) -> None:
        with self._lock:
            for gauge in gauges:
                gauge.now -= 1

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._rules.clear()
            self._gauges.clear()
            self.requests.clear()

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self._answered += 1
            recorded.number = self._answered
            self.requests.append(recorded)
            for matches, reply in self._rules:
                if matches(recorded):
                    return reply
            fixed = self.fixed_reply(recorded)
            if fixed is not None:  # never takes a scripted chat reply
                return fixed
            return self._script.pop(0) if self._script else self.default_reply(recorded)

    def line_reply(self, line: Recorded) -> Reply:
        """The answer of one line of a provider batch, as a call's (its rules, then the
        script, then the default); called under the lock, by the batch API's call."""
        self._answered += 1
        line.number = self._answered
        for matches, reply in self._rules:
            if matches(line):
                return reply
        return self._script.pop(0) if self._script else self.default_reply(line)

    def fixed_reply(self, recorded: Recorded) -> Reply | None:
        """The answer of a call that is not a chat (embeddings, a token count)."""
        if self.is_embedding(recorded):
            return Reply(raw_body=self.render_embeddings(recorded))
        return None

    def default_reply(self, recorded: Recorded) -> Reply:
        return Reply.of_text(f"You said: {self.last_user_text(recorded)}")

    def last_user_text(self, recorded: Recorded) -> str:
        return ""

    # Wire format: implemented by each provider's fake.
    def is_stream(self, recorded: Recorded) -> bool:
        raise NotImplementedError

    def is_embedding(self, recorded: Recorded) -> bool:
        """Whether the call asks for embeddings (answered with ``fake_vector``s)."""
        return False

    def render_embeddings(self, recorded: Recorded) -> Any:
        raise NotImplementedError

    def render_json(self, reply: Reply, recorded: Recorded) -> Any:
        raise NotImplementedError

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        raise NotImplementedError

    def render_error(self, reply: Reply) -> Any:
        return reply.error_body


HOLD_LIMIT = 30.0  # seconds a held stream waits for its release


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops connections of a burst (benchmarks)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeUpstream
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        parts = urlsplit(self.path)
        recorded = Recorded(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
            client_port=self.client_address[1],
        )
        reply = self.fake.next_reply(recorded)
        gauges = self.fake.entering(recorded)
        try:
            if reply.delay:
                time.sleep(reply.delay)
        finally:
            self.fake.leaving(gauges)  # before any byte of the reply: the caller sees none yet
        if reply.drop:
            self._drop()
            return
        if reply.status >= 400:
            self._send_json(reply.status, self.fake.render_error(reply), reply.headers)
            return
        streaming = reply.stream if reply.stream is not None else self.fake.is_stream(recorded)
        if reply.raw_body is not None:
            self._send_json(200, reply.raw_body, reply.headers)
            return
        if not streaming:
            self._send_json(200, self.fake.render_json(reply, recorded), reply.headers)
            return
        try:
            self._send_stream(reply, recorded)
        except (BrokenPipeError, ConnectionResetError):
            recorded.disconnected = True
            self.close_connection = True

    def _send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, reply: Reply, recorded: Recorded) -> None:
        """As the providers stream: chunked, the connection kept for the next call. A reply
        that will be cut is sent until the connection closes instead, as a dying one looks."""
        cut_after = reply.drop_after_chunks
        cut = cut_after is not None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header(*(("Connection", "close") if cut else ("Transfer-Encoding", "chunked")))
        self.end_headers()
        self.close_connection = cut
        frames = reply.raw_frames or self.fake.render_stream(reply, recorded)
        held = False
        for sent, data, count in _writes(frames, reply.events_per_write):
            if cut_after is not None and sent >= cut_after:
                self._drop()
                return
            if reply.hold_after_chunks is not None and not held and sent >= reply.hold_after_chunks:
                held = True
                assert reply.release is not None, "a held reply needs its release"
                recorded.released = reply.release.wait(HOLD_LIMIT)
            if sent and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            if data:  # an empty chunk would end a chunked body
                self.wfile.write(data if cut else b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            recorded.sent.append((sent + count, time.monotonic()))
        if not cut:
            self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _writes(frames: Iterable[bytes], per_write: int) -> Iterator[tuple[int, bytes, int]]:
    """The stream's writes: (events sent before it, its bytes, how many events it holds),
    ``per_write`` events each (0: all of them in one)."""
    sent = 0
    group: list[bytes] = []
    for frame in frames:
        group.append(frame)
        if per_write and len(group) >= per_write:
            yield sent, b"".join(group), len(group)
            sent, group = sent + len(group), []
    if group:
        yield sent, b"".join(group), len(group)


def fake_vector(text: str, dimensions: int = 64) -> list[float]:
    """A deterministic unit vector in which texts that share words are close: each word
    (lower-cased letters and digits) adds one to a bucket chosen by its CRC-32."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def sse(payload: Any, event: str | None = None) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {data}\n\n".encode()
