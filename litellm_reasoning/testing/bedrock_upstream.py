"""Local servers standing in for Bedrock Converse.

`BedrockConverseUpstream`: a non-Claude model (Nova 2, DeepSeek,
Qwen, GLM, MiniMax on Bedrock): it answers `POST /model/{id}/converse` and refuses, as Bedrock
does for those models, a `reasoningContent` that carries a signature. Point LiteLLM at it with
`aws_bedrock_runtime_endpoint`; scripted replies are the assistant's text, by model id."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import unquote

from ._server import ScriptedServer
from .anthropic_upstream import (
    AnthropicReply,
    _pieces,
    claude_refusal,
    message_json,
    sse_from_reply,
)
from .aws_eventstream import CONTENT_TYPE, event_stream

SIGNATURE_REFUSAL = (
    "This model doesn't support the reasoningContent.reasoningText.signature field. Remove "
    "reasoningContent.reasoningText.signature and try again."
)
"""Bedrock's ValidationException text for a signed reasoning block sent to a non-Claude model."""


def signed_reasoning(body: dict[str, Any]) -> bool:
    """Whether any message of a Converse body carries a signed `reasoningContent`."""
    for message in body.get("messages") or ():
        for block in message.get("content") or () if isinstance(message, dict) else ():
            reasoning = block.get("reasoningContent") if isinstance(block, dict) else None
            text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
            if isinstance(text, dict) and "signature" in text:
                return True
    return False


class BedrockConverseUpstream(ScriptedServer[str]):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.refusals: list[str] = []

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        parts = path.split("/")
        return unquote(parts[2]) if len(parts) > 3 and parts[1] == "model" else ""

    def answer(self, body: dict[str, Any], reply: str | None) -> tuple[int, str, bytes]:
        if signed_reasoning(body):
            self.refusals.append(SIGNATURE_REFUSAL)
            error = {"message": SIGNATURE_REFUSAL}
            return 400, "application/json", json.dumps(error).encode()
        payload = {
            "output": {"message": {"role": "assistant", "content": [{"text": reply or "ok"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
            "metrics": {"latencyMs": 1},
        }
        return 200, "application/json", json.dumps(payload).encode()


# ------------------------------------------------------------------ Claude on Bedrock Converse

MODEL_ERRORS = "The model returned the following errors: "
"""How Bedrock passes Claude's own validation texts on (a ValidationException)."""

PREFILL_REFUSAL = "This model does not support assistant message prefill."


def empty_content_refusal(index: int) -> str:
    return (
        f"The content field in the Message object at messages.{index} is empty. Add a "
        "ContentBlock object to the content field and try again."
    )


def converse_block(block: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic content block as Converse writes it (redacted data wrapped in base64)."""
    kind = block.get("type")
    if kind == "thinking":
        text = {"text": block.get("thinking", ""), "signature": block.get("signature", "")}
        return {"reasoningContent": {"reasoningText": text}}
    if kind == "redacted_thinking":
        wrapped = base64.b64encode(str(block.get("data", "")).encode()).decode()
        return {"reasoningContent": {"redactedContent": wrapped}}
    if kind == "tool_use":
        use = {"toolUseId": block["id"], "name": block["name"], "input": block.get("input", {})}
        return {"toolUse": use}
    return {"text": block.get("text", "")}


def anthropic_block(block: Any) -> dict[str, Any] | None:
    """A Converse content block as the Anthropic API writes it (None: a cache point)."""
    if not isinstance(block, dict):
        return {"type": "?"}
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, dict):
        if "redactedContent" in reasoning:
            data = base64.b64decode(str(reasoning["redactedContent"])).decode(errors="replace")
            return {"type": "redacted_thinking", "data": data}
        text = reasoning.get("reasoningText") or {}
        out = {"type": "thinking", "thinking": text.get("text", "")}
        if "signature" in text:
            out["signature"] = text["signature"]
        return out
    if "toolUse" in block:
        use = block["toolUse"]
        return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name")}
    if "toolResult" in block:
        return {"type": "tool_result", "tool_use_id": block["toolResult"].get("toolUseId")}
    if "cachePoint" in block:
        return None
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    return {"type": next(iter(block), "?")}


def as_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """A Converse request as the Anthropic Messages request Claude validates."""
    fields = body.get("additionalModelRequestFields") or {}
    messages = [
        {
            "role": m.get("role"),
            "content": [b for b in map(anthropic_block, m.get("content") or ()) if b is not None],
        }
        for m in body.get("messages") or ()
        if isinstance(m, dict)
    ]
    return {"thinking": fields.get("thinking"), "messages": messages}


def bedrock_refusal(body: dict[str, Any]) -> str | None:
    """Bedrock's own checks before the model sees a request: no message may be empty, and
    (Claude 5, Opus 4.6+) none may end the request as an assistant prefill of reasoning only.
    A reasoning-only assistant message elsewhere is refused as empty: the model sees nothing
    it can answer after (an assumption: Bedrock's text for that case is not recorded)."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    for i, message in enumerate(messages):
        content = [b for b in message.get("content") or () if "cachePoint" not in b]
        if not content:
            return empty_content_refusal(i)
        only_reasoning = all(isinstance(b, dict) and "reasoningContent" in b for b in content)
        if message.get("role") == "assistant" and only_reasoning:
            return PREFILL_REFUSAL if i == len(messages) - 1 else empty_content_refusal(i)
    return None


def converse_stream(content: list[dict[str, Any]], stop: str) -> bytes:
    """The `converse-stream` events Bedrock sends for a reply of Anthropic `content` blocks:
    reasoning text pieces then its signature, redacted data whole, text pieces, a tool use's
    start then its input in pieces; each block closed."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        kind = block.get("type")
        deltas: list[dict[str, Any]] = []
        if kind == "thinking":
            deltas += [{"reasoningContent": {"text": p}} for p in _pieces(block["thinking"])]
            if block.get("signature"):
                deltas.append({"reasoningContent": {"signature": block["signature"]}})
        elif kind == "redacted_thinking":
            deltas.append(converse_block(block))
            deltas[-1] = {"reasoningContent": deltas[-1]["reasoningContent"]}
        elif kind == "tool_use":
            start = {"toolUse": {"toolUseId": block["id"], "name": block["name"]}}
            events.append(("contentBlockStart", {"start": start, "contentBlockIndex": index}))
            piece_input = _pieces(json.dumps(block.get("input") or {}))
            deltas += [{"toolUse": {"input": p}} for p in piece_input]
        else:
            deltas += [{"text": p} for p in _pieces(block.get("text", ""))]
        events += [("contentBlockDelta", {"delta": d, "contentBlockIndex": index}) for d in deltas]
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": stop}))
    usage = {"inputTokens": 10, "outputTokens": 10, "totalTokens": 20}
    events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return event_stream(events)


class _BedrockClaudeServer(ScriptedServer[AnthropicReply]):
    """What both Bedrock routes for Claude share: the model from `/model/{id}/…`, the replies
    issued (what Claude's own check recognises), and refusals in Bedrock's error shape."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, strict: bool = True) -> None:
        super().__init__(host, port)
        self.strict = strict
        self.issued: list[list[dict[str, Any]]] = []
        self.refusals: list[str] = []

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        parts = path.split("/")
        return unquote(parts[2]) if len(parts) > 3 and parts[1] == "model" else ""

    def refusal(self, body: dict[str, Any]) -> str | None:
        """What this route refuses `body` for, in Bedrock's words (strict servers only)."""
        raise NotImplementedError

    def reply(self, body: dict[str, Any], reply: AnthropicReply) -> tuple[int, str, bytes]:
        """`reply` in this route's framing (JSON or the AWS event stream)."""
        raise NotImplementedError

    def answer(self, body: dict[str, Any], reply: AnthropicReply | None) -> tuple[int, str, bytes]:
        refusal = self.refusal(body) if self.strict else None
        if refusal is None and reply is None:
            refusal = "no scripted reply"
        if refusal is not None or reply is None:
            self.refusals.append(str(refusal))
            return 400, "application/json", json.dumps({"message": refusal}).encode()
        self.issued.append(reply.content)
        return self.reply(body, reply)


class BedrockClaudeUpstream(_BedrockClaudeServer):
    """Claude on Bedrock Converse (`/model/{id}/converse` and `/converse-stream`): answers with
    scripted Anthropic content blocks in Converse's form and, when `strict`, refuses like
    Bedrock (`bedrock_refusal`) and like Claude behind it (`claude_refusal`: thinking first,
    the open tool loop's block, the latest assistant message exactly as it came), with the
    texts Bedrock sends (a ValidationException)."""

    def refusal(self, body: dict[str, Any]) -> str | None:
        found = bedrock_refusal(body)
        if found is None:
            claude = claude_refusal(as_anthropic(body), self.issued)
            found = None if claude is None else MODEL_ERRORS + claude
        return found

    def reply(self, body: dict[str, Any], reply: AnthropicReply) -> tuple[int, str, bytes]:
        stop = message_json("", reply)["stop_reason"]
        if self.path.endswith("/converse-stream"):
            return 200, CONTENT_TYPE, converse_stream(reply.content, stop)
        message = {"role": "assistant", "content": [converse_block(b) for b in reply.content]}
        payload = {
            "output": {"message": message},
            "stopReason": stop,
            "usage": {"inputTokens": 10, "outputTokens": 10, "totalTokens": 20},
            "metrics": {"latencyMs": 1},
        }
        return 200, "application/json", json.dumps(payload).encode()


def invoke_stream(model: str, reply: AnthropicReply) -> bytes:
    """The `invoke-with-response-stream` events Bedrock sends for a Claude reply: each
    Anthropic stream event, base64-wrapped in a `chunk` event."""
    events = []
    for block in sse_from_reply(model, reply).split("\n\n"):
        data = next((line[6:] for line in block.splitlines() if line.startswith("data: ")), None)
        if data is not None:
            wrapped = base64.b64encode(data.encode()).decode()
            events.append(("chunk", {"bytes": wrapped}))
    return event_stream(events)


class BedrockInvokeClaudeUpstream(_BedrockClaudeServer):
    """Claude on the Bedrock invoke route (`/model/{id}/invoke` and
    `/invoke-with-response-stream`, Anthropic Messages bodies): answers like the Anthropic API
    inside Bedrock's framing and, when `strict`, refuses as Claude does (`claude_refusal`), with
    Bedrock's texts."""

    def refusal(self, body: dict[str, Any]) -> str | None:
        found = claude_refusal(body, self.issued)
        return None if found is None else MODEL_ERRORS + found

    def reply(self, body: dict[str, Any], reply: AnthropicReply) -> tuple[int, str, bytes]:
        model = self.model_of(self.path, body)
        if self.path.endswith("/invoke-with-response-stream"):
            return 200, CONTENT_TYPE, invoke_stream(model, reply)
        return 200, "application/json", json.dumps(message_json(model, reply)).encode()
