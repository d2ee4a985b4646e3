"""MiniMax M2.x / M3 (`minimax/`). With `reasoning_split` the thinking comes as
`reasoning_details` (LiteLLM keeps them in `provider_specific_fields`) and must go back
unmodified on every assistant message; without it the `<think>` text is part of `content` and
is never touched."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import complete
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

MODEL = "MiniMax-M2.5"
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
SPLIT: dict[str, Any] = {"tools": TOOLS, "reasoning_split": True}
CALL = {
    "id": "call_function_mm_1",
    "type": "function",
    "function": {"name": "f", "arguments": "{}"},
}
DETAILS = [
    {
        "type": "reasoning.text",
        "id": "reasoning-text-1",
        "format": "MiniMax-response-v1",
        "index": 0,
        "text": "I should call f first.",
    }
]


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=5.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def _tool_step(
    how: str, minimax: Upstream, first: Reply, *, stream: bool
) -> list[dict[str, Any]]:
    """A tool call answered with `first` (streamed or not), then the tool's result from a
    client that dropped the details; the messages sent, for more turns."""
    minimax.script(MODEL, first)
    minimax.always(MODEL, Reply(message={"content": "Done."}))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Use f."}]
    await complete(how, f"minimax/{MODEL}", minimax.base_url, messages, stream=stream, **SPLIT)
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [CALL]},  # details dropped
        {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
    ]
    await complete(how, f"minimax/{MODEL}", minimax.base_url, messages, stream=False, **SPLIT)
    return messages


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_reasoning_details_go_back_unmodified_on_every_turn(
    callback: ReasoningCallback, how: str
) -> None:
    with Upstream() as minimax:
        first = Reply(message={"content": "", "reasoning_details": DETAILS, "tool_calls": [CALL]})
        messages = await _tool_step(how, minimax, first, stream=False)
        target = (f"minimax/{MODEL}", minimax.base_url)
        messages += [
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "And now?"},  # a new turn: still sent
        ]
        await complete(how, *target, messages, stream=False, **SPLIT)
        bodies = minimax.bodies(MODEL)
    assert bodies[1]["messages"][1]["reasoning_details"] == DETAILS
    assert bodies[2]["messages"][1]["reasoning_details"] == DETAILS
    assert callback.stats["restored"] == 2


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
async def test_think_text_goes_back_in_content_as_it_came(
    callback: ReasoningCallback, keeps: bool
) -> None:
    """Without `reasoning_split` the reply's content starts with `<think>…</think>`, which
    LiteLLM splits off into `reasoning_content`: whether the client keeps that field or drops
    it, MiniMax gets the content back exactly as it sent it, on every turn."""
    content = "<think>The user greets me.</think>Hello!"
    with Upstream() as minimax:
        minimax.script(MODEL, Reply(message={"content": content}))
        minimax.always(MODEL, Reply(message={"content": "Fine."}))
        params: dict[str, Any] = {"model": f"minimax/{MODEL}", "api_base": minimax.base_url}
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
        first = await litellm.acompletion(messages=messages, api_key="k", **params)
        reply = first.choices[0].message
        kept = {"reasoning_content": reply.reasoning_content} if keeps else {}
        messages += [
            {"role": "assistant", "content": reply.content, **kept},
            {"role": "user", "content": "How are you?"},
        ]
        await litellm.acompletion(messages=messages, api_key="k", **params)
        sent = minimax.bodies(MODEL)[-1]["messages"]
    assert (reply.content, reply.reasoning_content) == ("Hello!", "The user greets me.")
    assert sent[1] == {"role": "assistant", "content": content}


def _split_stream(pieces: list[str]) -> str:
    """A MiniMax stream with `reasoning_split`: each chunk's `reasoning_details[].text` is the
    new text only (incremental: MiniMax-AI/MiniMax-M2 issue #95, tested against the API), the
    detail's id, format and index repeated; then the tool call."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": "mm-1",
            "object": "chat.completion.chunk",
            "model": MODEL,
            "choices": [choice],
        }
        return f"data: {json.dumps(body)}\n\n"

    head = {k: v for k, v in DETAILS[0].items() if k != "text"}
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_details": [{**head, "text": piece}]}) for piece in pieces]
    start = {**CALL, "index": 0, "function": {"name": "f", "arguments": ""}}
    out.append(chunk({"tool_calls": [start]}))
    out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}))
    out.append(chunk({}, "tool_calls"))
    return "".join(out) + "data: [DONE]\n\n"


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_a_split_stream_is_captured_whole_and_goes_back_unmodified(
    callback: ReasoningCallback, how: str
) -> None:
    """A streamed reply with `reasoning_split`: LiteLLM drops `reasoning_details` from the
    chunks it assembles, so they are merged from the raw deltas; the dropping client's next
    request carries the whole detail, as the non-streamed reply would have given it."""
    text = DETAILS[0]["text"]
    pieces = [text[:6], text[6:14], text[14:]]
    with Upstream() as minimax:
        streamed = Reply(raw_body=_split_stream(pieces), content_type="text/event-stream")
        await _tool_step(how, minimax, streamed, stream=True)
        bodies = minimax.bodies(MODEL)
    assert bodies[1]["messages"][1]["reasoning_details"] == DETAILS
    assert callback.stats["restored"] == 1
