"""What every dialect shares: the interface and the removal of every reasoning field."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from ..extract import BLOCK_TYPES
from ..types import Reasoning

REASONING_KEYS = frozenset(
    {
        "reasoning_content",
        "reasoning",
        "thinking",
        "thinking_blocks",
        "reasoning_items",
        "reasoning_details",
        # LiteLLM-internal response carrier (thinking blocks, thought signatures, reasoning
        # details); LiteLLM forwards it verbatim to OpenAI-compatible servers, which reject it.
        "provider_specific_fields",
    }
)
"""Message keys that hold reasoning in some provider's or LiteLLM's format."""


class Dialect(Protocol):
    """How one family of targets wants an assistant message's reasoning."""

    name: ClassVar[str]
    passthrough: ClassVar[bool]
    accepts_reasoning: ClassVar[bool]
    """False when the target takes no reasoning at all (every policy then sends none)."""
    """True when the dialect leaves assistant messages exactly as the client sent them."""
    prefers_opaque: ClassVar[bool]
    """True when a stored signed/encrypted record beats plain text the client kept."""

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        """`message` for the wire: its reasoning replaced by `reasoning` (None: carries none)."""
        ...


def strip_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` without any reasoning field, inline thinking block or tool-call extra."""
    out = {key: value for key, value in message.items() if key not in REASONING_KEYS}
    calls = out.get("tool_calls")
    if isinstance(calls, list) and any(
        isinstance(call, dict) and "provider_specific_fields" in call for call in calls
    ):
        out["tool_calls"] = [
            {k: v for k, v in call.items() if k != "provider_specific_fields"}
            if isinstance(call, dict)
            else call
            for call in calls
        ]
    content = out.get("content")
    if isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in BLOCK_TYPES for part in content
    ):
        kept = [
            part
            for part in content
            if not (isinstance(part, dict) and part.get("type") in BLOCK_TYPES)
        ]
        out["content"] = kept or (None if out.get("tool_calls") else "")
    return out
