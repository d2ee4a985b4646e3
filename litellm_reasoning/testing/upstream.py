"""A local OpenAI-compatible server on 127.0.0.1 that answers with scripted or recorded replies
and keeps every request body it received: what reached the wire.

Replies are scripted per `model` name (so concurrent scenarios never share a queue). A reply is
either a chat message (the server builds the JSON or the SSE stream the way OpenAI-compatible
servers send them) or a recorded raw body, served byte for byte.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    message: dict[str, Any] | None = None
    """An assistant message (`content`, `reasoning_content`/`reasoning`, `tool_calls`)."""
    raw_body: str | None = None
    """A recorded body, sent unchanged (JSON, or SSE text when `content_type` says so)."""
    content_type: str = "application/json"
    status: int = 200
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _chunk(model: str, cid: str, delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(payload) + "\n\n"


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_from_message(model: str, message: dict[str, Any], finish: str) -> str:
    """The SSE stream an OpenAI-compatible server sends for `message`."""
    cid = "chatcmpl-" + uuid.uuid4().hex[:12]
    out = [_chunk(model, cid, {"role": "assistant", "content": ""})]
    for name in ("reasoning_content", "reasoning"):
        text = message.get(name)
        if isinstance(text, str) and text:
            out += [_chunk(model, cid, {name: piece}) for piece in _pieces(text)]
    content = message.get("content")
    if isinstance(content, str) and content:
        out += [_chunk(model, cid, {"content": piece}) for piece in _pieces(content)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        start = {
            "index": index,
            "id": call.get("id") or f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": function.get("name", ""), "arguments": ""},
        }
        rest = {"index": index, "function": {"arguments": function.get("arguments") or ""}}
        out.append(_chunk(model, cid, {"tool_calls": [start]}))
        out.append(_chunk(model, cid, {"tool_calls": [rest]}))
    out.append(_chunk(model, cid, {}, finish))
    out.append("data: [DONE]\n\n")
    return "".join(out)


class Upstream:
    """The server. Use as a context manager; `base_url` is what LiteLLM's `api_base` takes."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._default: dict[str, Reply] = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, "application/json", json.dumps({"data": []}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                with upstream._lock:
                    upstream.received.append(
                        Received(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                    )
                reply = upstream._next(str(body.get("model", "")))
                if reply is None:
                    error = {"error": {"message": f"no scripted reply for {body.get('model')!r}"}}
                    self._send(500, "application/json", json.dumps(error).encode())
                    return
                if reply.raw_body is not None:
                    self._send(reply.status, reply.content_type, reply.raw_body.encode())
                    return
                message = dict(reply.message or {"role": "assistant", "content": ""})
                message.setdefault("role", "assistant")
                finish = reply.finish_reason or (
                    "tool_calls" if message.get("tool_calls") else "stop"
                )
                model = str(body.get("model", ""))
                if body.get("stream"):
                    self._send(
                        200, "text/event-stream", sse_from_message(model, message, finish).encode()
                    )
                    return
                payload = {
                    "id": "chatcmpl-" + uuid.uuid4().hex[:12],
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": reply.usage
                    or {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
                self._send(200, "application/json", json.dumps(payload).encode())

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, model: str, *replies: Reply) -> None:
        """Queue `replies` for requests naming `model` (answered in order)."""
        with self._lock:
            self._scripts[model].extend(replies)

    def always(self, model: str, reply: Reply) -> None:
        """Answer every request naming `model` with `reply` once its queue is empty."""
        with self._lock:
            self._default[model] = reply

    def _next(self, model: str) -> Reply | None:
        with self._lock:
            queue = self._scripts.get(model)
            if queue:
                return queue.popleft()
            return self._default.get(model)

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        """Request bodies received, oldest first (only those naming `model`, if given)."""
        with self._lock:
            return [r.body for r in self.received if model is None or r.body.get("model") == model]

    def start(self) -> Upstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Upstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
