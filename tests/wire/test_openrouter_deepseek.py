"""OpenRouter relaying DeepSeek with tools: DeepSeek wants every earlier tool-call message's
reasoning back, and the relay refuses both a missing and an empty `reasoning_content`.

What is sent on a store miss (the client dropped the reasoning and no record exists: another
gateway served the earlier turn, the record expired): nothing is made up. The message goes as
the client sent it, counted `missing` in the decisions summary; the relayed refusal reaches the
client like any provider error (no empty placeholder, which the relay refuses too, and no
fabricated reasoning, which would teach the model things it never thought)."""

from __future__ import annotations

from typing import Any

import litellm
import pytest
from clients import complete

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

MODEL = "deepseek/deepseek-v4-pro"
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
CALL = {"id": "call_or_ds_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
DETAILS = [{"type": "reasoning.text", "text": "Call f.", "format": "unknown", "index": 0}]


def relay_refusal(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """OpenRouter relaying DeepSeek's rule: an assistant message must carry its reasoning in
    one of OpenRouter's input fields; none, or an empty `reasoning_content`, is DeepSeek's 400
    (its own text, relayed)."""
    for index, message in enumerate(body.get("messages") or []):
        if message.get("role") != "assistant":
            continue
        if not (
            message.get("reasoning_details")
            or message.get("reasoning")
            or message.get("reasoning_content")
        ):
            text = (
                f"Missing `reasoning_content` field in the assistant message at message index "
                f"{index}. For more information, please refer to "
                "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
            )
            return 400, {"error": {"message": text, "type": "invalid_request_error"}}
    return None


async def test_a_stored_record_goes_back_as_openrouter_issued_it(
    callback: ReasoningCallback,
) -> None:
    with Upstream(refuse=[relay_refusal]) as relay:
        relay.script(
            MODEL,
            Reply(
                message={
                    "reasoning": "Call f.",
                    "reasoning_details": DETAILS,
                    "content": "",
                    "tool_calls": [CALL],
                }
            ),
        )
        relay.always(MODEL, Reply(message={"reasoning": "Done.", "content": "42."}))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Use f."}]
        target = (f"openrouter/{MODEL}", relay.base_url)
        await complete("acompletion", *target, messages, stream=False, tools=TOOLS)
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
        ]
        await complete("acompletion", *target, messages, stream=False, tools=TOOLS)
        sent = relay.bodies(MODEL)[-1]["messages"][1]
    assert sent["reasoning_details"] == DETAILS
    assert relay.refusals == []


async def test_a_store_miss_sends_nothing_made_up(callback: ReasoningCallback) -> None:
    with Upstream(refuse=[relay_refusal]) as relay:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Use f."},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
        ]
        with pytest.raises(litellm.BadRequestError, match="reasoning_content"):
            await complete(
                "acompletion",
                f"openrouter/{MODEL}",
                relay.base_url,
                messages,
                stream=False,
                tools=TOOLS,
            )
        sent = relay.bodies(MODEL)[-1]["messages"][1]
    assert sent == {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert callback.stats["missing"] == 1 and callback.stats["restored"] == 0
