"""A local Anthropic Messages API server on 127.0.0.1 (`POST /v1/messages`, JSON and SSE) that
answers with scripted content blocks and keeps every request body it received.

Replies are scripted per `model` name. A reply is a list of Anthropic content blocks
(`thinking` with `signature`, `redacted_thinking`, `text`, `tool_use`); streamed, it is sent the
way the Anthropic API streams: `thinking_delta` pieces then one `signature_delta`, redacted
blocks whole in `content_block_start`, `text_delta` pieces, `input_json_delta` pieces.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from ._server import ScriptedServer


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


class AnthropicUpstream(ScriptedServer[AnthropicReply]):
    """The Anthropic Messages API server. LiteLLM appends `/v1/messages` to its `base_url`."""

    def answer(self, body: dict[str, Any], reply: AnthropicReply | None) -> tuple[int, str, bytes]:
        if reply is None:
            error = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "no scripted reply"},
            }
            return 400, "application/json", json.dumps(error).encode()
        model = str(body.get("model", ""))
        if body.get("stream"):
            return 200, "text/event-stream", sse_from_reply(model, reply).encode()
        return 200, "application/json", json.dumps(message_json(model, reply)).encode()
