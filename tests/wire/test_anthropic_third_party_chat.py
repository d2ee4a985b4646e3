"""`anthropic/` deployments at a third-party Anthropic-compatible API (MiniMax, Kimi, DeepSeek,
MiMo, Thinking Machines' Tinker for Inkling: a custom `api_base`) on the chat route: their
thinking blocks carry no Anthropic signature. A client that drops them gets them back as the
deployment issued them, in place (LiteLLM 1.110 drops unsigned blocks when it translates a chat
message: they are put on the body it built); never on another deployment's request (another
credential: a real Claude would refuse an unsigned block), and Claude's own signed path is
unchanged (its tests).

Through real LiteLLM (`acompletion` and `completion`) against the local Anthropic-format
server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clients import complete
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
THOUGHT = {"type": "thinking", "thinking": "Read a.py first."}
"""A third-party API's block: no signature."""


def _call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


async def _tool_loop(
    how: str,
    server: AnthropicUpstream,
    model: str,
    api_key: str,
    second_key: str,
    stream: bool = False,
) -> dict[str, Any]:
    """A tool call, then its result from a client that dropped the block (the second request
    with `second_key`): the tool-call message as it reached the server."""
    call_id = "toolu_" + uuid.uuid4().hex[:10]
    server.script(
        model,
        AnthropicReply(
            [THOUGHT, {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}]
        ),
        AnthropicReply([{"type": "text", "text": "done"}]),
    )
    messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
    common = {"stream": stream, "tools": TOOLS, "max_tokens": 1024}
    reply = await complete(
        how, f"anthropic/{model}", server.base_url, messages, api_key=api_key, **common
    )
    messages += [
        {"role": "assistant", "content": reply.content, "tool_calls": [_call(call_id)]},
        {"role": "tool", "tool_call_id": call_id, "content": "x = 1"},
    ]
    await complete(
        how, f"anthropic/{model}", server.base_url, messages, api_key=second_key, **common
    )
    sent: dict[str, Any] = server.bodies(model)[-1]["messages"][1]
    return sent


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("how", ["acompletion", "completion"])
@pytest.mark.parametrize("model", ["MiniMax-M3", "kimi-k2.7", "thinkingmachines/inkling"])
async def test_a_third_party_apis_blocks_go_back_as_issued(
    how: str, model: str, stream: bool
) -> None:
    callback = register(ReasoningCallback(capture_wait_seconds=5))
    with AnthropicUpstream() as server:
        sent = await _tool_loop(how, server, model, "key-a", "key-a", stream)
    assert sent["content"][0] == THOUGHT  # as issued: no signature added, none required
    assert [b["type"] for b in sent["content"]] == ["thinking", "tool_use"]
    assert callback.stats["restored"] == 1 and callback.stats["dropped"] == 0


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_never_to_another_deployment(how: str) -> None:
    """The same model name behind other credentials (another account, or Claude itself): an
    unsigned block is not its to take."""
    callback = register(ReasoningCallback(capture_wait_seconds=5))
    with AnthropicUpstream() as server:
        sent = await _tool_loop(how, server, "MiniMax-M3", "key-a", "key-b")
    assert [b["type"] for b in sent["content"]] == ["tool_use"]
    assert callback.stats["restored"] == 0
