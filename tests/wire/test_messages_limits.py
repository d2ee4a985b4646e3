"""The Anthropic-format route applies the chat path's policy and budget to earlier turns
(`litellm.anthropic.messages`, what the proxy's `/v1/messages` calls): a turn the policy leaves
out loses the blocks a client kept, `max_reasoning_tokens` drops the oldest blocks as one
leading run, the current turn is never touched, and the strict Claude server accepts each
request. The decisions summary says what happened to each message."""

from __future__ import annotations

from typing import Any

import litellm
from clients import send_messages
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _turn(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": f"Think about {tag}. " * 20, "signature": f"EqQB-{tag}=="},
        {"type": "text", "text": f"{tag} done."},
    ]


def _call(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": f"Read {tag}.", "signature": f"EqQB-call-{tag}=="},
        {"type": "tool_use", "id": f"toolu_{tag}", "name": "read_file", "input": {"path": tag}},
    ]


async def _conversation(
    model: str, callback: ReasoningCallback
) -> tuple[list[dict[str, Any]], AnthropicUpstream]:
    """Two answered turns, then a tool loop in the current turn; the client keeps every block.
    Returns the last request's messages as they reached Claude."""
    with AnthropicUpstream(strict=True) as claude:
        claude.script(
            model,
            AnthropicReply(_turn("one")),
            AnthropicReply(_turn("two")),
            AnthropicReply(_call("three")),
        )
        claude.always(model, AnthropicReply([{"type": "text", "text": "three done."}]))

        async def send(messages: list[Any]) -> Any:
            return await send_messages(claude.base_url, model, messages, tools=[TOOL])

        messages: list[Any] = []
        for question in ("One?", "Two?", "Three?"):
            messages.append({"role": "user", "content": question})
            reply = await send(messages)
            messages.append({"role": "assistant", "content": reply["content"]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_three", "content": "x"}],
            }
        )
        await send(messages)
        assert claude.refusals == []
        return claude.bodies(model)[-1]["messages"], claude


def _kinds(message: dict[str, Any]) -> list[str]:
    return [b["type"] for b in message["content"]]


async def test_current_turn_takes_the_blocks_a_client_kept_out_of_earlier_turns() -> None:
    callback = register(ReasoningCallback(policies={"claude-sonnet-4-5*": "current_turn"}))
    try:
        wire, _ = await _conversation("claude-sonnet-4-5-limits", callback)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert _kinds(wire[1]) == ["text"] and _kinds(wire[3]) == ["text"]
    assert wire[5]["content"] == _call("three")  # the current turn's loop, untouched
    # Request 2 leaves turn one's block out, requests 3 and 4 (the tool result continues
    # turn three) those of turns one and two.
    assert callback.stats["stripped"] == 1 + 2 + 2


async def test_the_budget_drops_the_oldest_blocks_as_one_leading_run() -> None:
    callback = register(ReasoningCallback(max_reasoning_tokens=150))
    try:
        wire, _ = await _conversation("claude-opus-4-6-limits", callback)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    # Each earlier turn's block is ~88 estimated tokens, the loop's ~7: 183 > 150, so the
    # oldest (turn one's) goes; requests 3 and 4 both drop it.
    assert _kinds(wire[1]) == ["text"]
    assert _kinds(wire[3]) == ["thinking", "text"]
    assert wire[5]["content"] == _call("three")
    assert callback.stats["over_budget"] == 2


def test_a_long_stream_is_read_back_whole() -> None:
    """12 000 thinking deltas and a tool input in 400 pieces (a long Claude Code step): the
    blocks come back whole, each field's pieces joined once."""
    import json as _json

    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, sse_from_reply
    from litellm_reasoning.wire.anthropic.messages import content_of_stream

    thinking = "".join(f"step {i}. " for i in range(12_000))
    tool_input = {"path": "x" * 2_000}
    reply = AnthropicReply(
        [
            {"type": "thinking", "thinking": thinking, "signature": "EqQB-long=="},
            {"type": "tool_use", "id": "toolu_long", "name": "read_file", "input": tool_input},
        ]
    )
    events = []
    recut: set[str] = set()
    for event in sse_from_reply("claude-sonnet-4-6", reply).split("\n\n"):
        data = event.partition("data: ")[2]
        payload = _json.loads(data) if data else None
        delta = (payload or {}).get("delta") or {}
        kind = delta.get("type")
        if kind in recut:
            continue  # the server's own pieces of what was re-cut already
        if kind in ("thinking_delta", "input_json_delta"):
            recut.add(kind)
        if kind == "thinking_delta":  # re-cut into one delta per step
            for i in range(12_000):
                piece = {**payload, "delta": {**delta, "thinking": f"step {i}. "}}
                events.append(f"event: content_block_delta\ndata: {_json.dumps(piece)}")
            continue
        if kind == "input_json_delta":
            text = _json.dumps(tool_input)
            for start in range(0, len(text), 5):
                piece = {**payload, "delta": {**delta, "partial_json": text[start : start + 5]}}
                events.append(f"event: content_block_delta\ndata: {_json.dumps(piece)}")
            continue
        if event:
            events.append(event)
    deltas = [e for e in events if "thinking_delta" in e]
    assert len(deltas) == 12_000
    assert content_of_stream("\n\n".join(events) + "\n\n") == reply.content
