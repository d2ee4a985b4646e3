"""Anthropic's mid-conversation system messages and tool changes
(`mid-conversation-tool-changes-2026-07-01`, `inline-tools-2026-09-15`: a `{"role": "system"}`
message inside `messages` carrying `tool_addition` / `tool_removal` blocks, a tool by name or by
value) on `/v1/messages` (`litellm.anthropic.messages`): the rewrite leaves these messages alone,
byte for byte, and restores the dropped thinking of the assistant messages around them; a
system message starts no turn, so the tool loop after it is the current turn's. The strict
Claude server accepts every request."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from clients import send_messages
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
GREP = {"name": "grep", "description": "Search files", "input_schema": {"type": "object"}}
CHANGES = {
    # a tool by value (inline-tools) and one taken away by name (mid-conversation tool changes)
    "inline": [{"type": "tool_addition", "tool": {"type": "tool_definition", "definition": GREP}}],
    "by_name": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "read_file"}}],
}


def _thinking(text: str, tag: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": f"EqQB-{tag}=="}


def _dropped(reply: Any) -> dict[str, Any]:
    kept = [block for block in reply["content"] if block["type"] != "thinking"]
    return {"role": "assistant", "content": kept}


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_tool_changes_pass_untouched_and_the_thinking_around_them_is_restored(
    change: str,
) -> None:
    callback = register(ReasoningCallback())
    model = "claude-opus-4-6"
    system = {"role": "system", "content": CHANGES[change]}
    sent_system = copy.deepcopy(system)
    with AnthropicUpstream(strict=True) as claude:
        claude.script(
            model,
            AnthropicReply(
                [
                    _thinking("Read it.", "a"),
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                ]
            ),
            AnthropicReply([_thinking("Done.", "b"), {"type": "text", "text": "done"}]),
            AnthropicReply(
                [
                    _thinking("Grep now.", "c"),
                    {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}},
                ]
            ),
            AnthropicReply([{"type": "text", "text": "found"}]),
        )
        messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
        reply = await send_messages(claude.base_url, model, messages, tools=[TOOL])
        messages += [
            _dropped(reply),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        ]
        reply = await send_messages(claude.base_url, model, messages, tools=[TOOL])
        messages += [_dropped(reply), system, {"role": "user", "content": "Now search"}]
        reply = await send_messages(claude.base_url, model, messages, tools=[TOOL])
        messages += [
            _dropped(reply),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2"}]},
        ]
        await send_messages(claude.base_url, model, messages, tools=[TOOL])
        assert claude.refusals == []
        bodies = claude.bodies(model)
    assert system == sent_system  # the client's own message is not changed in place
    for body in bodies[2:]:
        wire = body["messages"]
        assert wire[4] == sent_system  # on the wire byte for byte, where the client put it
        first = [m["content"][0]["type"] for m in wire if m["role"] == "assistant"]
        assert first == ["thinking"] * len(first)  # every dropped block back in place
    # The tool loop after the system message is the current turn's (Claude's 400 without it).
    assert bodies[3]["messages"][6]["content"][0] == _thinking("Grep now.", "c")
    assert callback.stats["restored"] == 1 + 2 + 3
