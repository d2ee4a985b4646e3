"""A local OpenAI-compatible server on 127.0.0.1 that answers with scripted or recorded replies
and keeps every request body it received: what reached the wire.

Replies are scripted per `model` name (so concurrent scenarios never share a queue). A reply is
either a chat message (the server builds the JSON or the SSE stream the way OpenAI-compatible
servers send them) or a recorded raw body, served byte for byte.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._server import Received, ScriptedServer

__all__ = ["Received", "Reply", "Upstream", "sse_from_message"]


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


def _chunk(
    model: str,
    cid: str,
    delta: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> str:
    payload: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        payload["usage"] = usage
    return "data: " + json.dumps(payload) + "\n\n"


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_from_message(
    model: str, message: dict[str, Any], finish: str, usage: dict[str, Any] | None = None
) -> str:
    """The SSE stream an OpenAI-compatible server sends for `message`; `usage` on its finish
    chunk, as DeepSeek sends it."""
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
    out.append(_chunk(model, cid, {}, finish, usage))
    out.append("data: [DONE]\n\n")
    return "".join(out)


Refusal = Callable[[dict[str, Any]], tuple[int, dict[str, Any]] | None]
"""A provider's validation: (status, error body) for a request body it refuses, else None."""


class Upstream(ScriptedServer[Reply]):
    """The OpenAI-compatible server; `base_url` ends in `/v1`. `refuse`: validations it runs on
    every request before answering (`testing.refusals`)."""

    base_path = "/v1"

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, refuse: Sequence[Refusal] = ()
    ) -> None:
        super().__init__(host, port)
        self.refuse = list(refuse)
        self.refusals: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any], reply: Reply | None) -> tuple[int, str, bytes]:
        for check in self.refuse:
            refused = check(body)
            if refused is not None:
                self.refusals.append(refused[1])
                return refused[0], "application/json", json.dumps(refused[1]).encode()
        if reply is None:
            error = {"error": {"message": f"no scripted reply for {body.get('model')!r}"}}
            return 500, "application/json", json.dumps(error).encode()
        if reply.raw_body is not None:
            return reply.status, reply.content_type, reply.raw_body.encode()
        message = dict(reply.message or {"role": "assistant", "content": ""})
        message.setdefault("role", "assistant")
        finish = reply.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
        model = str(body.get("model", ""))
        if body.get("stream"):
            stream = sse_from_message(model, message, finish, reply.usage)
            return 200, "text/event-stream", stream.encode()
        payload = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": reply.usage
            or {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        return 200, "application/json", json.dumps(payload).encode()
