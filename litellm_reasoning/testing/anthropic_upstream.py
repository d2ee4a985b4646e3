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

from ..core.extract import BLOCK_TYPES
from ._server import ScriptedServer


@dataclass
class AnthropicReply:
    """One scripted answer: Anthropic content blocks."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level fields added to the message (`input_transformations`, …)."""


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _api_pieces(text: str) -> list[str]:
    return [text]


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
        **reply.extra,
    }


def sse_from_reply(model: str, reply: AnthropicReply, *, api_style: bool = False) -> str:
    """The SSE stream the Anthropic API sends for `reply`: each block's text in three pieces,
    or (`api_style`) as the API sends a short reply: compact JSON, a `ping` after the first
    block starts, one delta per block, a `caller` on each tool use."""
    message = message_json(model, reply)
    start = {**message, "content": [], "stop_reason": None}
    out = [_event("message_start", {"message": start})]
    empty: dict[str, Any]
    delta: dict[str, Any]
    pieces_of = _api_pieces if api_style else _pieces
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        if kind == "redacted_thinking":
            out.append(_event("content_block_start", {"index": index, "content_block": block}))
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in pieces_of(block.get("thinking", "")) if block.get("thinking") else []:
                delta = {"type": "thinking_delta", "thinking": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
            if block.get("signature"):  # absent: a stream cut before the signature arrived
                delta = {"type": "signature_delta", "signature": block["signature"]}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        elif kind == "text":
            empty = {"type": "text", "text": ""}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in pieces_of(block["text"]):
                delta = {"type": "text_delta", "text": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        elif kind == "tool_use":
            empty = {**block, "input": {}, **({"caller": {"type": "direct"}} if api_style else {})}
            out.append(_event("content_block_start", {"index": index, "content_block": empty}))
            for piece in pieces_of(json.dumps(block.get("input") or {})):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(_event("content_block_delta", {"index": index, "delta": delta}))
        out.append(_event("content_block_stop", {"index": index}))
        if api_style and index == 0:
            out.insert(2, 'event: ping\ndata: {"type": "ping"}\n\n')
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
    if api_style:
        out = [_compact(event) for event in out]
    return "".join(out)


def _compact(event: str) -> str:
    head, _, data = event.partition("\ndata: ")
    return f"{head}\ndata: {json.dumps(json.loads(data), separators=(',', ':'))}\n\n"


def _fingerprint(block: Any) -> tuple[Any, ...]:
    """What identifies a content block when comparing a sent message with a reply."""
    if not isinstance(block, dict):
        return ("?",)
    kind = block.get("type")
    if kind == "thinking":
        return (kind, block.get("thinking"), block.get("signature"))
    if kind == "redacted_thinking":
        return (kind, block.get("data"))
    if kind == "tool_use":
        return (kind, block.get("id"))
    if kind == "text":
        return (kind, block.get("text"))
    return (str(kind),)


ALWAYS_THINKS = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5", "claude-mythos-5")
"""Models that think whatever the request says (Anthropic's model pages: Opus 5.5 and Fable 5.1
"thinking can't be disabled"; Sonnet 5.5 turns off only up-front thinking, with
`between_tools`), as name prefixes (this server's test models carry suffixes)."""
THINKS_UNLESS_DISABLED = ("claude-opus-5", "claude-sonnet-5", "claude-haiku-5-5")
"""Models that think unless the request says `thinking: {"type": "disabled"}` (Opus 5:
"thinking on by default", Haiku 5.5), as name prefixes; tried after `ALWAYS_THINKS`."""


def _thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in (
        "enabled",
        "adaptive",
        "between_tools",
    ):
        return True
    model = str(body.get("model") or "")
    if model.startswith(ALWAYS_THINKS):
        return True
    disabled = isinstance(thinking, dict) and thinking.get("type") == "disabled"
    return model.startswith(THINKS_UNLESS_DISABLED) and not disabled


def claude_refusal(body: dict[str, Any], issued: list[list[dict[str, Any]]]) -> str | None:
    """Claude's validation of a request's thinking blocks, with the API's own error texts
    (shared notes, provider rules §1): None when it passes. `issued`: the content of every
    reply the server gave, to recognise its own blocks."""
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled" and str(body.get("model") or "").startswith(ALWAYS_THINKS):
        # Opus 5.5 ("What's new in Claude Opus 5.5": thinking can't be disabled; the API
        # refuses `enabled` with a budget the same way, not imitated: the tests' older LiteLLM
        # lines send it)
        return (
            f'"thinking.type.{kind}" is not supported for this model. Use '
            '"thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not _thinking_on(body):
        return None
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "assistant" or not isinstance(content, list) or not content:
            continue
        kinds = [b.get("type") if isinstance(b, dict) else None for b in content]
        if any(k in BLOCK_TYPES for k in kinds) and kinds[0] not in BLOCK_TYPES:
            return (
                f"messages.{i}.content.0: If an assistant message contains any thinking blocks, "
                f"the first block must be thinking or redacted_thinking. Found {kinds[0]}."
            )
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_content = messages[last_user].get("content") if last_user >= 0 else None
    answers_tools = isinstance(user_content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in user_content
    )
    previous = last_user - 1
    if answers_tools and previous >= 0 and messages[previous].get("role") == "assistant":
        content = messages[previous].get("content")
        blocks = content if isinstance(content, list) else [{"type": "text"}]
        first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else "text"
        if first not in BLOCK_TYPES:
            return (
                f"messages.{previous}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block (preceeding the lastmost "
                "set of `tool_use` and `tool_result` blocks). We recommend you include thinking "
                "blocks from previous turns. To avoid this requirement, disable `thinking`."
            )
    latest = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    content = messages[latest].get("content") if latest >= 0 else None
    if isinstance(content, list):
        sent = [_fingerprint(b) for b in content]
        # The replies this message's blocks came from (a real signature is unique; a test may
        # script the same block twice): it must be one of them exactly.
        originals = [
            original
            for original in ([_fingerprint(b) for b in reply] for reply in issued)
            if {f for f in original if f[0] in BLOCK_TYPES} & set(sent)
        ]
        if originals and sent not in originals:
            original = originals[-1]
            j = next(
                (n for n, (a, b) in enumerate(zip(sent, original, strict=False)) if a != b),
                min(len(sent), len(original)),
            )
            return (
                f"messages.{latest}.content.{j}: `thinking` or `redacted_thinking` blocks in "
                "the latest assistant message cannot be modified. These blocks must remain "
                "as they were in the original response."
            )
    return None


def revoked_refusal(body: dict[str, Any], revoked: set[str]) -> str | None:
    """Claude's refusal of a thinking block whose signature it does not accept."""
    messages = body.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) and revoked else []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and block.get("signature") in revoked:
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
    return None


class AnthropicUpstream(ScriptedServer[AnthropicReply]):
    """The Anthropic Messages API server. LiteLLM appends `/v1/messages` to its `base_url`.

    `strict=True`: requests are validated as Claude validates thinking blocks
    (`claude_refusal`), and refused with its status and error texts. `api_style=True`: streams
    as the API streams a short reply (`sse_from_reply`)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        strict: bool = False,
        api_style: bool = False,
    ) -> None:
        super().__init__(host, port)
        self.strict = strict
        self.api_style = api_style
        self.issued: list[list[dict[str, Any]]] = []
        self.refusals: list[str] = []
        self.revoked: set[str] = set()
        """Signatures refused as invalid (a key rotation, another account's block)."""

    def answer(self, body: dict[str, Any], reply: AnthropicReply | None) -> tuple[int, str, bytes]:
        refusal = revoked_refusal(body, self.revoked)
        if refusal is None and self.strict:
            refusal = claude_refusal(body, self.issued)
        if refusal is not None:
            self.refusals.append(refusal)
            error = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": refusal},
            }
            return 400, "application/json", json.dumps(error).encode()
        if reply is None:
            error = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "no scripted reply"},
            }
            return 400, "application/json", json.dumps(error).encode()
        self.issued.append(reply.content)
        model = str(body.get("model", ""))
        if body.get("stream"):
            stream = sse_from_reply(model, reply, api_style=self.api_style)
            return 200, "text/event-stream", stream.encode()
        return 200, "application/json", json.dumps(message_json(model, reply)).encode()


DEEPSEEK_REFUSAL = "The `content[].thinking` in the thinking mode must be passed back to the API."
"""DeepSeek's Anthropic-compatible API, thinking on, for an assistant message with tool uses and
no thinking block (https://github.com/sdcb/chats/issues/136)."""


def deepseek_refusal(body: dict[str, Any]) -> str | None:
    """DeepSeek V4's rule on its Anthropic-compatible API: in thinking mode every assistant
    message that made tool calls carries its thinking block back (every turn)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not _thinking_on(body):
        return None
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        kinds = {b.get("type") for b in content if isinstance(b, dict)}
        if "tool_use" in kinds and not kinds.intersection(BLOCK_TYPES):
            return DEEPSEEK_REFUSAL
    return None


class DeepSeekAnthropicUpstream(AnthropicUpstream):
    """DeepSeek's Anthropic-compatible API (LiteLLM's `deepseek/` on `/v1/messages` posts to
    `{api_base}/anthropic/v1/messages`): thinking blocks without an Anthropic signature, and
    DeepSeek's refusal of a tool loop that lost them, in DeepSeek's error shape."""

    def answer(self, body: dict[str, Any], reply: AnthropicReply | None) -> tuple[int, str, bytes]:
        refusal = deepseek_refusal(body)
        if refusal is not None:
            self.refusals.append(refusal)
            error = {
                "error": {
                    "message": refusal,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
            return 400, "application/json", json.dumps(error).encode()
        return super().answer(body, reply)
