"""A local Anthropic Messages API server on 127.0.0.1 (`POST /v1/messages`, JSON and SSE) that
answers with scripted content blocks and keeps every request body it received.

Replies are scripted per `model` name. A reply is a list of Anthropic content blocks
(`thinking` with `signature`, `redacted_thinking`, `text`, `tool_use`); streamed, it is sent the
way the Anthropic API streams: `thinking_delta` pieces then one `signature_delta`, redacted
blocks whole in `content_block_start`, `text_delta` pieces, `input_json_delta` pieces.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .upstream import Received


@dataclass
class AnthropicReply:
    """One scripted answer: Anthropic content blocks."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _event(kind: str, payload: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n"


def message_json(model: str, reply: AnthropicReply) -> dict[str, Any]:
    stop = reply.stop_reason or (
        "tool_use" if any(b.get("type") == "tool_use" for b in reply.content) else "end_turn"
    )
    return {
        "id": "msg_" + uuid.uuid4().hex[:20],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": reply.content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def sse_from_reply(model: str, reply: AnthropicReply) -> str:
    """The SSE stream the Anthropic API sends for `reply`."""
    message = message_json(model, reply)
    start = {**message, "content": [], "stop_reason": None}
    out = [_event("message_start", {"message": start})]
    empty: dict[str, Any]
    delta: dict[str, Any]
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        if kind == "redacted_thinking":
            out.append(_event("content_block_start", {"index": index, "content_block": block}))
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in _pieces(block.get("thinking", "")) if block.get("thinking") else []:
                delta = {"type": "thinking_delta", "thinking": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
            if block.get("signature"):  # absent: a stream cut before the signature arrived
                delta = {"type": "signature_delta", "signature": block["signature"]}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        elif kind == "text":
            empty = {"type": "text", "text": ""}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in _pieces(block["text"]):
                delta = {"type": "text_delta", "text": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        elif kind == "tool_use":
            empty = {**block, "input": {}}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in _pieces(json.dumps(block.get("input") or {})):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        out.append(_event("content_block_stop", {"index": index}))
    out.append(
        _event(
            "message_delta",
            {
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        )
    )
    out.append(_event("message_stop", {}))
    return "".join(out)


class AnthropicUpstream:
    """The server. Use as a context manager; `base_url` is what LiteLLM's `api_base` takes."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._scripts: dict[str, deque[AnthropicReply]] = defaultdict(deque)
        self._default: dict[str, AnthropicReply] = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

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
                model = str(body.get("model", ""))
                reply = upstream._next(model)
                if reply is None:
                    error = {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "no scripted reply"},
                    }
                    self._send(400, "application/json", json.dumps(error).encode())
                    return
                if body.get("stream"):
                    data = sse_from_reply(model, reply).encode()
                    self._send(200, "text/event-stream", data)
                    return
                self._send(200, "application/json", json.dumps(message_json(model, reply)).encode())

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
        """LiteLLM appends `/v1/messages` to an anthropic `api_base`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, model: str, *replies: AnthropicReply) -> None:
        with self._lock:
            self._scripts[model].extend(replies)

    def always(self, model: str, reply: AnthropicReply) -> None:
        with self._lock:
            self._default[model] = reply

    def _next(self, model: str) -> AnthropicReply | None:
        with self._lock:
            queue = self._scripts.get(model)
            if queue:
                return queue.popleft()
            return self._default.get(model)

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.received if model is None or r.body.get("model") == model]

    def start(self) -> AnthropicUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> AnthropicUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
