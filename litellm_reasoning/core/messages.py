"""Facts about chat messages that several parts ask."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def is_assistant(message: Any) -> bool:
    """An assistant message dict (the only kind that carries reasoning back)."""
    return isinstance(message, dict) and message.get("role") == "assistant"


def continues_prefill(messages: Sequence[Any]) -> bool:
    """The request ends with an assistant message: the reply continues it (a client's prefill,
    or LiteLLM 1.109+'s mid-stream fallback continuing on another deployment what a cut stream
    had said). The client then holds one message made of both, so the reply's reasoning cannot
    be filed as that message's, nor as one issuer's: it is not kept."""
    return bool(messages) and is_assistant(messages[-1])


def tool_calls_answered(messages: Sequence[Any], end: int) -> int | None:
    """The assistant message whose tool calls the tool results up to `end` answer (one or more
    `tool` / `function` messages, the last at `end`); None when they do not stand there."""
    index = end
    while index >= 0 and isinstance(messages[index], dict):
        if messages[index].get("role") not in ("tool", "function"):
            break
        index -= 1
    if index == end or index < 0:
        return None
    message = messages[index]
    return index if is_assistant(message) and message.get("tool_calls") else None
