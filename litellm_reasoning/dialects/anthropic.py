"""Claude's signed thinking: the Anthropic Messages API, Bedrock (Converse and invoke) and Vertex.

What these targets take back (shared notes, provider rules §1-§2):

* an assistant message's `thinking` (text + `signature`) and `redacted_thinking` (`data`)
  blocks, byte for byte, in the order they came, before its text and `tool_use` blocks, an empty
  `thinking` text with a real signature included (`display: "omitted"`);
* within a tool loop they are required: with thinking on, the assistant message that made the
  tool calls a request answers must start with one (400 "Expected `thinking` or
  `redacted_thinking`, but found `tool_use`" otherwise);
* only blocks their issuer signed: a forged, foreign or missing signature is a 400 ("Invalid
  `signature`", "signature: Field required"), so unsigned or foreign reasoning is never
  converted into thinking text, it is left out.

Issuers. A block is sent back only to the platform that issued it: the Anthropic API
(`anthropic`), Bedrock (`bedrock`) or Vertex (`vertex_ai`). Anthropic's docs say signatures are
compatible across the three, but Bedrock binds blocks to the AWS account and the newest models
bind them to the prefix and model, and nothing recorded shows a cross-platform replay working,
so each platform counts as its own issuer. A record the client sent back itself (no issuer
known) is trusted as the client's own history. The model is not checked: the API verifies the
signature (or, on the newest models, silently drops a block it cannot read).

LiteLLM carries these blocks on an OpenAI-shaped message as `thinking_blocks`, which it
translates for every Claude route (the inline form loses `redacted_thinking` in LiteLLM
1.106.12), so that is what this dialect renders. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, ClassVar

from ..types import Reasoning, ReasoningPart
from ._base import strip_reasoning

ANTHROPIC_ISSUERS = {
    "anthropic": frozenset({"anthropic"}),
    "bedrock": frozenset({"bedrock"}),
    "vertex_ai": frozenset({"vertex_ai", "vertex_ai_beta"}),
}
"""Target platform -> the LiteLLM providers whose signatures it accepts."""


def signed_parts(reasoning: Reasoning) -> tuple[ReasoningPart, ...]:
    """The parts Claude can take back: signed thinking and redacted data, in order."""
    return tuple(
        part
        for part in reasoning.parts
        if (part.kind == "thinking" and part.signature) or (part.kind == "redacted" and part.data)
    )


def thinking_blocks(reasoning: Reasoning | None) -> list[dict[str, Any]]:
    """`reasoning` as Anthropic content blocks (unsigned parts left out)."""
    if reasoning is None:
        return []
    blocks: list[dict[str, Any]] = []
    for part in signed_parts(reasoning):
        if part.kind == "redacted":
            blocks.append({"type": "redacted_thinking", "data": part.data})
        else:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def bedrock_redacted_content(data: str) -> str:
    """The Converse `redactedContent` for a redacted block's `data`.

    Converse wraps Claude's own data in base64. LiteLLM 1.106.12 hands the wrapped value out as
    `data`; 1.110.2 unwraps it. Claude's own value starts with a protobuf tag byte that is not
    base64 text once decoded, so a value that decodes twice is already wrapped.
    """
    try:
        inner = base64.b64decode(data, validate=True).decode("ascii")
        base64.b64decode(inner, validate=True)
    except (binascii.Error, ValueError):
        return base64.b64encode(data.encode()).decode()
    return data


def tool_loop_needs_thinking(messages: Sequence[Any]) -> bool:
    """True when the request answers tool calls of an assistant message that carries no
    thinking block: with thinking on, Claude rejects that request."""
    for message in reversed(messages):
        if not isinstance(message, dict):
            return False
        role = message.get("role")
        if role in ("tool", "function"):
            continue
        if role != "assistant" or not message.get("tool_calls"):
            return False
        blocks = message.get("thinking_blocks")
        return not (isinstance(blocks, list) and blocks)
    return False


def thinking_requested(params: Sequence[Any]) -> bool:
    """Whether any of `params` (request keyword dicts) turns Claude's thinking on."""
    for p in params:
        if not isinstance(p, dict):
            continue
        thinking = p.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
            return True
        effort = p.get("reasoning_effort")
        if isinstance(effort, str) and effort not in ("", "none", "disable", "disabled"):
            return True
    return False


class AnthropicDialect:
    """Claude on the Anthropic API: signed `thinking_blocks` from Anthropic, or from the client."""

    name: ClassVar[str] = "anthropic"
    platform: ClassVar[str] = "anthropic"
    passthrough: ClassVar[bool] = False
    accepts_reasoning: ClassVar[bool] = True
    prefers_opaque: ClassVar[bool] = True

    def accepts(self, reasoning: Reasoning) -> bool:
        """Whether this target can take `reasoning` back: issued here (or by the client), and
        holding at least one signed or redacted block."""
        if reasoning.provider is not None and reasoning.provider not in ANTHROPIC_ISSUERS.get(
            self.platform, frozenset()
        ):
            return False
        return bool(signed_parts(reasoning))

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        if reasoning is not None and self.accepts(reasoning):
            blocks = thinking_blocks(reasoning)
            if blocks:
                out["thinking_blocks"] = blocks
        return out


class BedrockClaudeDialect(AnthropicDialect):
    """Claude on Bedrock (Converse and invoke): Bedrock-signed blocks only."""

    name: ClassVar[str] = "anthropic_bedrock"
    platform: ClassVar[str] = "bedrock"


class VertexClaudeDialect(AnthropicDialect):
    """Claude on Vertex AI: Vertex-signed blocks only."""

    name: ClassVar[str] = "anthropic_vertex"
    platform: ClassVar[str] = "vertex_ai"
