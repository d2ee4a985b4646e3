"""The conformance runner's local providers: how a case's assistant message becomes a scripted
reply for the OpenAI-compatible, Anthropic Messages and Gemini servers, and how a client sends a
reply back (keeping its reasoning, or dropping it)."""

from __future__ import annotations

import json
from typing import Any

from ..testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from ..testing.gemini_upstream import GeminiUpstream
from ..testing.upstream import Reply


def client_message(message: dict[str, Any], *, keeps: bool) -> dict[str, Any]:
    """The message as the client sends it: `reasoning` kept as `reasoning_content`, or dropped."""
    out = {k: v for k, v in message.items() if k not in ("reasoning", "blocks")}
    if keeps and message.get("role") == "assistant" and message.get("reasoning"):
        reasoning = message["reasoning"]
        out["thinking_blocks" if isinstance(reasoning, list) else "reasoning_content"] = reasoning
    return out


def anthropic_reply_for(message: dict[str, Any]) -> AnthropicReply:
    """The Anthropic reply that produces `message`: its `blocks` as given (the reply's whole
    content in its order, for interleaved thinking), else its thinking blocks, text and tool
    uses."""
    if isinstance(message.get("blocks"), list):
        return AnthropicReply(list(message["blocks"]))
    blocks: list[dict[str, Any]] = list(message.get("reasoning") or [])
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": json.loads(function.get("arguments") or "{}"),
            }
        )
    return AnthropicReply(blocks)


_ANTHROPIC: AnthropicUpstream | None = None


def anthropic_upstream() -> AnthropicUpstream:
    """One local Anthropic server per process, started on first use."""
    global _ANTHROPIC
    if _ANTHROPIC is None:
        _ANTHROPIC = AnthropicUpstream(strict=True).start()
    return _ANTHROPIC


_GEMINI: GeminiUpstream | None = None


def gemini_upstream() -> GeminiUpstream:
    """One local Gemini server per process, started on first use."""
    global _GEMINI
    if _GEMINI is None:
        _GEMINI = GeminiUpstream().start()
    return _GEMINI


def gemini_client_message(reply: dict[str, Any], *, keeps: bool) -> dict[str, Any]:
    """A Gemini reply as the client sends it back: LiteLLM's whole message, or only role,
    content and tool calls (ids as LiteLLM gave them: they may embed a signature)."""
    if keeps:
        return {k: v for k, v in reply.items() if v is not None and k != "function_call"}
    out: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": dict(c["function"])}
            for c in reply["tool_calls"]
        ]
    return out


def without_call_ids(contents: list[Any]) -> list[Any]:
    """Gemini `contents` with the function call ids LiteLLM makes up (random per reply) shown
    as `<id>`, so a case can name the rest exactly."""
    out = []
    for content in contents:
        parts = []
        for part in content.get("parts") or [] if isinstance(content, dict) else []:
            part = dict(part)
            for name in ("function_call", "functionCall", "function_response", "functionResponse"):
                if isinstance(part.get(name), dict) and "id" in part[name]:
                    part[name] = {**part[name], "id": "<id>"}
            parts.append(part)
        out.append({**content, "parts": parts} if isinstance(content, dict) else content)
    return out


def reply_for(message: dict[str, Any]) -> Reply:
    content = message.get("content") or ""
    if isinstance(content, list):  # servers answer with a string; the client may send parts back
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    reply: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("reasoning"):
        reply["reasoning_content"] = message["reasoning"]
    if message.get("tool_calls"):
        reply["tool_calls"] = message["tool_calls"]
    return Reply(message=reply)
