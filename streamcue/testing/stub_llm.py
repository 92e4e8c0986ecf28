"""A small, deterministic OpenAI-compatible chat server on 127.0.0.1, for tests and offline demos.

It speaks the real HTTP protocol (``POST /v1/chat/completions``, ``GET /v1/models``), so the
``openai`` client, its retries and streamcue's validation all run for real. It is plumbing,
not a model: answers are computed by a ``responder`` function from the request. The default
responder grades judge prompts by token overlap and otherwise fills the requested JSON
Schema with a deterministic instance.

Fault injection for tests: :meth:`StubLLMServer.inject` queues, for the next chat requests, HTTP errors
(``("status", 429)``, optionally with a ``Retry-After``: ``("status", (429, "0"))``), malformed answers
(``("content", "garbage")``, a huge one: ``("content", "x" * 3_000_000)``), a hostile body
(``("body", ("text/html", b"<html>..."))``: HTTP 200 with these bytes), other ``usage`` fields
(``("usage", {"prompt_tokens": "12"})``), or no answer at all (``("hang", 30)``: the connection is
accepted and nothing is sent for 30 s, or until the server stops), or an answer sent a byte at a time
(``("trickle", 0.05)``: a pause before each byte). ``api_key`` makes it refuse other
keys with 401. ``delay_s`` makes every answer take that long (a slow model), ``delay_of(body)`` sets it per call
(``spans`` logs when each answer started and ended); ``card`` is the model's
entry in ``GET /v1/models`` and ``GET /v1/models/{id}`` (change it to play another model behind the
same name); ``entry_route=False`` serves the list alone, as vLLM and llama.cpp do.

A request with ``"stream": true`` is answered as OpenAI-compatible servers do, with Server-Sent Events: a first
event with the role, the answer in pieces of a few words (``piece_delay_s`` apart), a last event with ``usage``
when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``; ``streams=False`` plays a server that
does not stream (one JSON body whatever the request says). ``requests`` holds every request body as received.

>>> with StubLLMServer() as server:                     # doctest: +SKIP
...     print(server.base_url)                          # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from streamcue.metrics.text import token_f1

__all__ = ["StubLLMServer", "default_responder", "schema_instance", "message_text"]

Responder = Callable[[dict[str, Any]], str]


def message_text(message: dict[str, Any]) -> str:
    """The text parts of a chat message (string content or a list of content parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("json_schema", {}).get("schema")
    return fmt.get("schema")


def schema_instance(schema: dict[str, Any], seed: str = "") -> Any:
    """A deterministic value valid for simple JSON Schemas (objects, arrays, enums, scalars)."""
    digest = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][digest % len(schema["enum"])]
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        return {name: schema_instance(sub, f"{seed}/{name}") for name, sub in props.items()}
    if kind == "array":
        n = max(schema.get("minItems", 1), 1)
        return [schema_instance(schema.get("items", {}), f"{seed}/{i}") for i in range(n)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 10)
        value = low + digest % (int(high - low) + 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return bool(digest % 2)
    return f"text {digest % 1000}"


_BLOCK = re.compile(r"Reference answer:\s*\n(.*?)\n\s*\nAssistant's answer:\s*\n(.*?)\n\s*\n", re.S)


def default_responder(body: dict[str, Any]) -> str:
    """Grade judge prompts by token F1; fill any other requested schema deterministically."""
    messages = body.get("messages", [])
    text = message_text(messages[-1]) if messages else ""
    schema = request_schema(body) or {"type": "object", "properties": {"answer": {"type": "string"}}}
    match = _BLOCK.search(text)
    if match and "score" in schema.get("properties", {}):
        f1 = token_f1(match.group(1).strip(), match.group(2).strip())
        if "match" in schema["properties"]:
            score = int(round(3 * f1))
            return json.dumps({"score": score, "match": score >= 2})
        return json.dumps({"score": 1 + int(round(4 * f1))})
    return json.dumps(schema_instance(schema, text))


def _pieces(content: Any, words: int = 3) -> list[Any]:
    """An answer cut into pieces of a few words (a content that is not text, a hostile one, goes whole)."""
    if not isinstance(content, str) or not content:
        return [content]
    tokens = re.findall(r"\S+\s*|\s+", content)
    return ["".join(tokens[i:i + words]) for i in range(0, len(tokens), words)]


class StubLLMServer:
    """Run the stub in a background thread; use as a context manager."""

    def __init__(self, responder: Responder = default_responder, *, api_key: str | None = None,
                 model: str = "stub-model", port: int = 0, delay_s: float = 0.0,
                 card: dict[str, Any] | None = None, entry_route: bool = True, streams: bool = True,
                 piece_delay_s: float = 0.0, delay_of: Callable[[dict[str, Any]], float] | None = None) -> None:
        self.responder = responder
        self.delay_of = delay_of
        #: ``(start, end, body)`` of every answered chat completion, in the server's own clock (perf_counter): which
        #: calls were in flight at once.
        self.spans: list[tuple[float, float, dict[str, Any]]] = []
        self.streams = streams
        self.piece_delay_s = piece_delay_s
        self.entry_route = entry_route
        self._stopping = threading.Event()
        self.api_key = api_key
        self.model = model
        self.delay_s = delay_s
        self.card = dict(card or {})
        self.requests: list[dict[str, Any]] = []
        self._faults: deque[tuple[str, Any]] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        # a short poll: stop() returns within 0.05 s (the default 0.5 s was paid at every stop, minutes over the suite)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def completions(self) -> int:
        """How many chat completions were answered successfully."""
        return sum(1 for r in self.requests if r.get("_answered"))

    def inject(self, kind: str, value: Any = None, times: int = 1) -> None:
        """Queue faults for the next requests: ``("status", 500)``, ``("content", "not json")``."""
        with self._lock:
            self._faults.extend([(kind, value)] * times)

    def start(self) -> StubLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"stub": self})


class _Handler(BaseHTTPRequestHandler):
    """The stub's HTTP side (``stub``: the server it answers for)."""

    stub: StubLLMServer

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
              kind: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client hung up (e.g. refused a huge answer)
            pass

    def _authorized(self) -> bool:
        if self.stub.api_key is None:
            return True
        return self.headers.get("Authorization") == f"Bearer {self.stub.api_key}"

    def do_GET(self) -> None:  # noqa: N802
        stub = self.stub
        entry = {"id": stub.model, "object": "model", "created": int(time.time()), **stub.card}
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [entry]})
        elif stub.entry_route and self.path == f"/v1/models/{stub.model}":
            self._send(200, entry)
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        stub = self.stub
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        with stub._lock:
            stub.requests.append(body)
            fault = stub._faults.popleft() if stub._faults else None
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found"}})
        if not self._authorized():
            return self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
        if fault and fault[0] in ("status", "hang", "trickle", "body"):
            return self._fault(fault, body)
        started = time.perf_counter()
        self._answer(body, fault)
        with stub._lock:
            stub.spans.append((started, time.perf_counter(), body))

    def _fault(self, fault: tuple[str, Any], body: dict[str, Any]) -> None:
        """An injected HTTP error, a hang, a trickled answer or a hostile body."""
        stub = self.stub
        if fault[0] == "status":
            code, after = fault[1] if isinstance(fault[1], tuple) else (fault[1], None)
            return self._send(code, {"error": {"message": f"injected {code}"}},
                              {"Retry-After": after} if after is not None else None)
        if fault[0] == "hang":
            stub._stopping.wait(fault[1])
            return None
        if fault[0] == "body":
            return self._send(200, fault[1][1], kind=fault[1][0])
        data = json.dumps({"choices": [{"message": {"content": stub.responder(body)}}]}).encode()
        self.send_response(200)  # a trickle: headers at once, then the body a byte at a time
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        for byte in data:
            if stub._stopping.wait(fault[1]):
                return None
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
        return None

    def _answer(self, body: dict[str, Any], fault: tuple[str, Any] | None) -> None:
        """The responder's answer (or an injected content or usage), streamed when asked and the stub streams."""
        stub = self.stub
        delay = stub.delay_of(body) if stub.delay_of is not None else stub.delay_s
        if delay:
            time.sleep(delay)
        try:
            content = fault[1] if fault and fault[0] == "content" else stub.responder(body)
        except Exception as exc:  # a responder that fails answers HTTP 500, like a crashed model server
            return self._send(500, {"error": {"message": f"responder failed: {exc}"}})
        body["_answered"] = True
        prompt_tokens = sum(len(message_text(m).split()) for m in body.get("messages", []))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(str(content).split()),
                 "total_tokens": prompt_tokens + len(str(content).split())}
        usage = fault[1] if fault and fault[0] == "usage" else usage
        if body.get("stream") and stub.streams:
            return self._stream(body, content, usage)
        return self._send(200, {
            "id": f"chatcmpl-{len(stub.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", stub.model),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": usage})

    def _stream(self, body: dict[str, Any], content: Any, usage: Any) -> None:
        """The answer as Server-Sent Events: role, pieces of text, usage if asked, ``[DONE]``."""
        stub = self.stub
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        head = {"id": f"chatcmpl-{len(stub.requests)}", "object": "chat.completion.chunk", "created": 0,
                "model": body.get("model", stub.model)}
        events = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
        events += [{**head, "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in _pieces(content)]
        events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**head, "choices": [], "usage": usage})
        try:
            for n, event in enumerate(events):
                if n > 1 and stub.piece_delay_s and stub._stopping.wait(stub.piece_delay_s):
                    return
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):  # the client hung up (e.g. refused a huge answer)
            pass
