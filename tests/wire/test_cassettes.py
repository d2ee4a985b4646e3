"""Real provider recordings replayed through real LiteLLM with the callback registered.

Each test plays one cassette from `cassettes/` (see its README): request 1 exactly as the
recorded client sent it, then every later request as a client sends it after LiteLLM's reply,
either keeping `reasoning_content` on its assistant messages (as the recorded client did) or
dropping it. vcrpy answers from the cassette and the tests look at the request bodies LiteLLM's
HTTP client actually sent. Expected reasoning is read from the raw recorded responses (JSON, or
SSE deltas joined), never from LiteLLM or the callback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import litellm
import pytest
from cassette_utils import (
    RECORD_MODE,
    Json,
    Provided,
    Script,
    Wire,
    litellm_kwargs,
    replay,
    without_reasoning,
)

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.stores import SpyStore

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")
REPLAYING = RECORD_MODE == "none"

keeps_or_drops = pytest.mark.parametrize("keep_reasoning", [True, False], ids=["keeps", "drops"])
sync_and_async = pytest.mark.parametrize("mode", MODES)


# ---------------------------------------------------------------- running a cassette


@dataclass(frozen=True)
class Received:
    """What the caller got back from LiteLLM (choice 0), streamed pieces joined."""

    reasoning: str
    content: str
    tool_call_ids: list[str]

    @classmethod
    def from_response(cls, response: Any) -> Received:
        message = response.choices[0].message
        return cls(
            reasoning=getattr(message, "reasoning_content", None) or "",
            content=message.content or "",
            tool_call_ids=[call.id for call in message.tool_calls or ()],
        )

    @classmethod
    def from_chunks(cls, chunks: list[Any]) -> Received:
        reasoning, content, ids = "", "", []
        for chunk in chunks:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            content += delta.content or ""
            ids += [call.id for call in getattr(delta, "tool_calls", None) or () if call.id]
        return cls(reasoning, content, ids)


async def send(mode: Mode, kwargs: Json) -> Received:
    """One request, its stream read to the end; sync calls run on a thread without a loop."""
    if mode == "async":
        response = await litellm.acompletion(**kwargs)
        if kwargs.get("stream"):
            return Received.from_chunks([chunk async for chunk in response])
        return Received.from_response(response)

    def call() -> Received:
        response = litellm.completion(**kwargs)
        if kwargs.get("stream"):
            return Received.from_chunks(list(response))
        return Received.from_response(response)

    return await asyncio.to_thread(call)


@dataclass
class Run:
    """One cassette played to the end."""

    script: Script
    wire: Wire
    callback: ReasoningCallback | None
    sent: list[Json] = field(default_factory=list)
    """The bodies the client handed to LiteLLM."""
    received: list[Received] = field(default_factory=list)
    restored_before: list[int] = field(default_factory=list)
    """`callback.stats["restored"]` just before each request."""

    @property
    def provided(self) -> list[Provided]:
        return [exchange.provided for exchange in self.wire.exchanges]

    def wire_messages(self, k: int) -> list[Json]:
        messages: list[Json] = self.wire.bodies[k]["messages"]
        return messages


async def play(
    name: str, mode: Mode, callback: ReasoningCallback | None, *, keep_reasoning: bool
) -> Run:
    """Send every request of `name`'s script, each right after the previous reply arrived."""
    script = Script.load(name)
    with replay(name) as wire:
        run = Run(script, wire, callback)
        for k in range(len(script.requests)):
            body = script.request(k, run.provided, keep_reasoning=keep_reasoning)
            if callback is None:
                # `turn` is this package's flag; a client without the callback does not send it.
                body["messages"] = without_turn(body["messages"])
            run.sent.append(body)
            run.restored_before.append(callback.stats["restored"] if callback else 0)
            run.received.append(await send(mode, litellm_kwargs(script, body)))
    check_run(run, keep_reasoning=keep_reasoning)
    return run


def check_run(run: Run, *, keep_reasoning: bool) -> None:
    """What holds for every cassette: one wire request per client request, request 1 sent as
    recorded, replies reaching the caller as the provider sent them, and the callback changing
    nothing but reasoning fields (and the `turn` flag) on the wire."""
    assert len(run.wire.exchanges) == len(run.sent)
    first, recorded = run.wire.bodies[0], run.script.recorded(0)
    for key in ("model", "messages", "tools"):
        assert first.get(key) == recorded.get(key), key
    for received, provided in zip(run.received, run.provided, strict=True):
        assert received.reasoning == provided.reasoning
        assert received.content == provided.content
        assert received.tool_call_ids == [call["id"] for call in provided.tool_calls]
    for k, sent in enumerate(run.sent):
        if REPLAYING and keep_reasoning:
            # The client rebuilt from LiteLLM's replies sends what the recorded client sent.
            recorded = run.script.recorded(k)
            if run.callback is None:
                recorded["messages"] = without_turn(recorded["messages"])
            assert sent == recorded
        wire = run.wire_messages(k)
        assert len(wire) == len(sent["messages"])
        for on_wire, from_client in zip(
            without_reasoning(wire), without_reasoning(sent["messages"]), strict=True
        ):
            assert "turn" not in on_wire
            # LiteLLM itself leaves out `content: null` (tool-call messages).
            assert on_wire == {
                key: v
                for key, v in from_client.items()
                if key != "turn" and not (key == "content" and v is None)
            }


def without_turn(messages: list[Json]) -> list[Json]:
    return [{key: v for key, v in m.items() if key != "turn"} for m in messages]


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for a capture that runs after the caller already has its reply (sync calls)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def reasoning_at(messages: list[Json], index: int) -> str | None:
    assert messages[index]["role"] == "assistant"
    value = messages[index].get("reasoning_content")
    return value if value is None else str(value)


# ---------------------------------------------------------------- fixtures


def _reset_litellm_callbacks() -> None:
    # `litellm.callbacks = []` is not enough: LiteLLM copies each callback into its success and
    # failure lists and refuses a second instance of the same class there, so a later test's
    # callback would never see its captures.
    litellm.logging_callback_manager._reset_all_callbacks()


def spy(callback: ReasoningCallback) -> SpyStore:
    assert isinstance(callback.store, SpyStore)
    return callback.store


def captured_texts(callback: ReasoningCallback) -> list[str]:
    return [record.text for record in spy(callback).records]


@pytest.fixture
def make_callback() -> Iterator[Callable[..., ReasoningCallback]]:
    """Registers a fresh `ReasoningCallback` over a `SpyStore` and unregisters it afterwards.

    `capture_wait_seconds` is raised from 2 s so a slow machine cannot turn a late capture into a
    false failure; a request still waits only until the capture it needs has landed."""

    def make(**kwargs: Any) -> ReasoningCallback:
        callback = ReasoningCallback(SpyStore(), capture_wait_seconds=10.0, **kwargs)
        litellm.callbacks = [callback]
        return callback

    _reset_litellm_callbacks()
    yield make
    _reset_litellm_callbacks()


@pytest.fixture
def callback(make_callback: Callable[..., ReasoningCallback]) -> ReasoningCallback:
    return make_callback()


# ---------------------------------------------------------------- tests


@sync_and_async
@keeps_or_drops
async def test_deepseek_new_question_sends_no_earlier_reasoning(
    mode: Mode, keep_reasoning: bool, callback: ReasoningCallback
) -> None:
    """DeepSeek without tools: the reply's reasoning is captured, and a follow-up question (a new
    turn) carries no earlier reasoning on the wire, whether or not the client kept it."""
    run = await play("deepseek_thinking_part", mode, callback, keep_reasoning=keep_reasoning)

    reply = run.provided[0]
    assert len(reply.reasoning) > 100
    await eventually(lambda: callback.stats["captured"] == 1)
    assert len(callback.store) == 1
    (record,) = spy(callback).records
    assert record.text == reply.reasoning
    assert [(p.kind, p.text, p.signature) for p in record.parts] == [
        ("thinking", reply.reasoning, None)
    ]

    assert reasoning_at(run.sent[1]["messages"], 1) == (reply.reasoning if keep_reasoning else None)
    assert reasoning_at(run.wire_messages(1), 1) is None
    assert callback.stats["stripped"] == (1 if keep_reasoning else 0)
    assert callback.stats["restored"] == 0
    assert callback.stats["missing"] == 0
    assert callback.stats["errors"] == 0


@sync_and_async
@keeps_or_drops
@pytest.mark.parametrize(
    "name",
    ["deepseek_thinking_stream", "dashscope_qwen3_max_stream", "deepseek_tool_call_stream"],
)
async def test_stream_reasoning_reaches_the_next_request(
    name: str, mode: Mode, keep_reasoning: bool, callback: ReasoningCallback
) -> None:
    """A streamed reply's reasoning (its `delta.reasoning_content` pieces joined) is on the
    assistant message of the request sent right after the stream ends, within the same turn
    (a `turn: false` note, or a tool result): restored when the client dropped it, untouched
    when it kept it."""
    run = await play(name, mode, callback, keep_reasoning=keep_reasoning)

    streamed = run.provided[0]
    assert len(streamed.reasoning) > 100
    assert run.script.echoes(1) == {1: 0}
    on_wire = run.wire_messages(1)
    assert reasoning_at(on_wire, 1) == streamed.reasoning
    if REPLAYING:
        assert reasoning_at(run.script.recorded(1)["messages"], 1) == streamed.reasoning
    assert [c["id"] for c in on_wire[1].get("tool_calls") or ()] == [
        c["id"] for c in streamed.tool_calls
    ]
    restored = callback.stats["restored"] - run.restored_before[1]
    assert restored == (0 if keep_reasoning else 1)
    assert callback.stats["stripped"] == 0
    await eventually(lambda: streamed.reasoning in captured_texts(callback))
    assert callback.stats["errors"] == 0


@sync_and_async
@keeps_or_drops
async def test_deepseek_tool_loop_sends_every_reply_reasoning_back(
    mode: Mode, keep_reasoning: bool, callback: ReasoningCallback
) -> None:
    """DeepSeek with tools, 3 requests: every assistant message that repeats a reply carries
    that reply's reasoning on the wire, equal to what the recorded client sent."""
    run = await play("deepseek_tool_loop", mode, callback, keep_reasoning=keep_reasoning)

    assert [run.script.echoes(k) for k in (1, 2)] == [{3: 0}, {3: 0, 7: 1}]
    for k in (1, 2):
        for index, j in run.script.echoes(k).items():
            expected = run.provided[j].reasoning
            assert expected
            assert reasoning_at(run.wire_messages(k), index) == expected
            if REPLAYING:
                assert reasoning_at(run.script.recorded(k)["messages"], index) == expected
    before_2, before_3 = run.restored_before[1:]
    assert before_3 - before_2 == (0 if keep_reasoning else 1)
    assert callback.stats["restored"] - before_3 == (0 if keep_reasoning else 2)
    await eventually(lambda: captured_texts(callback) == [p.reasoning for p in run.provided])
    # Message 5 is the recorded client's own tool call (not a reply) with an empty (keeps) or no
    # (drops) reasoning_content: nothing is stored for it, in requests 2 and 3.
    assert callback.stats["missing"] == 2
    assert callback.stats["errors"] == 0


@sync_and_async
async def test_deepseek_tool_loop_keeps_an_empty_reasoning_content(
    mode: Mode, callback: ReasoningCallback
) -> None:
    """The recorded client sent `reasoning_content: ""` on its own tool-call message (index 5)
    and DeepSeek accepted it; the same request must reach the wire with that field."""
    run = await play("deepseek_tool_loop", mode, callback, keep_reasoning=True)

    for k in (1, 2):
        assert reasoning_at(run.sent[k]["messages"], 5) == ""
        assert reasoning_at(run.wire_messages(k), 5) == ""


@sync_and_async
@keeps_or_drops
async def test_zai_preserved_thinking_with_all_turns_policy(
    mode: Mode, keep_reasoning: bool, make_callback: Callable[..., ReasoningCallback]
) -> None:
    """Z.ai glm-4.7 with `clear_thinking: false` (preserved thinking) and the `all_turns` policy:
    turn 2 carries turn 1's reasoning on the wire as the recorded client sent it."""
    callback = make_callback(policies={"zai/*": "all_turns"})
    run = await play("zai_preserved_thinking", mode, callback, keep_reasoning=keep_reasoning)

    expected = run.provided[0].reasoning
    assert expected
    assert run.wire.bodies[1]["thinking"] == {"type": "enabled", "clear_thinking": False}
    assert reasoning_at(run.wire_messages(1), 1) == expected
    if REPLAYING:
        assert reasoning_at(run.script.recorded(1)["messages"], 1) == expected
    assert callback.stats["restored"] == (0 if keep_reasoning else 1)
    assert callback.stats["stripped"] == 0
    assert callback.stats["errors"] == 0


@sync_and_async
@keeps_or_drops
async def test_zai_preserved_thinking_with_default_rules(
    mode: Mode, keep_reasoning: bool, callback: ReasoningCallback
) -> None:
    """Z.ai glm-4.7 with `clear_thinking: false` and the default rules: turn 2 carries turn 1's
    reasoning on the wire as the recorded client sent it."""
    run = await play("zai_preserved_thinking", mode, callback, keep_reasoning=keep_reasoning)

    assert reasoning_at(run.wire_messages(1), 1) == run.provided[0].reasoning


@sync_and_async
@pytest.mark.parametrize(
    "name",
    [
        "deepseek_thinking_stream",
        "dashscope_qwen3_max_stream",
        "deepseek_tool_call_stream",
        "deepseek_tool_loop",
        "zai_preserved_thinking",
    ],
)
async def test_keeping_client_reaches_the_wire_as_without_the_callback(
    name: str, mode: Mode, make_callback: Callable[..., ReasoningCallback]
) -> None:
    """A client that keeps reasoning, continuing within the turn as the recording does: with the
    callback registered, LiteLLM sends exactly the bodies it sends without it."""
    without = await play(name, mode, None, keep_reasoning=True)
    callback = make_callback()
    with_callback = await play(name, mode, callback, keep_reasoning=True)

    differences = [
        (k, i, key, before.get(key), after.get(key))
        for k, (body_before, body_after) in enumerate(
            zip(without.wire.bodies, with_callback.wire.bodies, strict=True)
        )
        for i, (before, after) in enumerate(
            zip(body_before["messages"], body_after["messages"], strict=True)
        )
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key) or (key in before) != (key in after)
    ]
    assert differences == []
    assert without.wire.bodies == with_callback.wire.bodies
    assert callback.stats["restored"] == callback.stats["stripped"] == 0
