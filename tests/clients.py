"""What clients send back of a LiteLLM reply: the shapes the tests play."""

from __future__ import annotations

from typing import Any


def dropping_client(message: Any) -> dict[str, Any]:
    """A client that keeps only role, content and tool calls (ids verbatim) of the reply
    `message` (a LiteLLM `Message`): every reasoning field is thrown away, as the openai SDK,
    agent frameworks and UIs do."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in message.tool_calls
        ]
    return out
