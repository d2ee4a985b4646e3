"""Providers' validations of the reasoning in a request, with their own status codes and error
bodies (shared notes, provider rules §6, §7, §9): what `Upstream(refuse=[...])` runs."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .upstream import Refusal


def deepseek_reasoning_required(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """DeepSeek V4 thinking mode with tools: every assistant message must carry its
    `reasoning_content` (earlier turns too)."""
    if not body.get("tools"):
        return None
    for index, message in enumerate(body.get("messages") or []):
        assistant = isinstance(message, dict) and message.get("role") == "assistant"
        if assistant and not message.get("reasoning_content"):
            text = (
                "Missing `reasoning_content` field in the assistant message at message index "
                f"{index}. For more information, please refer to "
                "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
            )
            return 400, {
                "error": {
                    "message": text,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
    return None


def kimi_reasoning_required(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """Kimi thinking (K2 Thinking, K2.5, K2.6, K3; on Moonshot and on other hosts): every
    earlier assistant message with tool calls must carry its `reasoning_content`."""
    for index, message in enumerate(body.get("messages") or []):
        calls = isinstance(message, dict) and message.get("role") == "assistant"
        if calls and message.get("tool_calls") and not message.get("reasoning_content"):
            text = (
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                f"message at index {index}"
            )
            return 400, {"error": {"message": text, "type": "invalid_request_error"}}
    return None


def openai_encrypted_content(revoked: Collection[str]) -> Refusal:
    """OpenAI Responses refusing reasoning items whose `encrypted_content` it cannot decrypt
    (another organisation's, a rotated key)."""

    def refuse(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("encrypted_content") in revoked:
                subject = f"for item {item['id']} " if item.get("id") else ""
                text = (
                    f"The encrypted content {subject}could not be verified. Reason: Encrypted "
                    "content could not be decrypted or parsed."
                )
                return 400, {
                    "error": {
                        "message": text,
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_encrypted_content",
                    }
                }
        return None

    return refuse


def openai_function_call_needs_reasoning(issued: Mapping[str, str]) -> Refusal:
    """OpenAI Responses refusing a function call sent with its item id without the reasoning
    item its reply had (`issued`: function-call item id -> that reasoning item's id; cline#12242,
    rig#751)."""

    def refuse(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        items = body.get("input")
        items = items if isinstance(items, list) else []
        sent = {i.get("id") for i in items if isinstance(i, dict) and i.get("type") == "reasoning"}
        for item in items:
            if not isinstance(item, dict) or item.get("type") != "function_call":
                continue
            needed = issued.get(str(item.get("id")))
            if needed is not None and needed not in sent:
                text = (
                    f"Item '{item['id']}' of type 'function_call' was provided without its "
                    f"required 'reasoning' item: '{needed}'."
                )
                return 400, {
                    "error": {
                        "message": text,
                        "type": "invalid_request_error",
                        "param": "input",
                        "code": None,
                    }
                }
        return None

    return refuse
