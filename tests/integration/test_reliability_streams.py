"""Interrupted reasoning streams, cut at EVERY point of a real recording: nothing partial is ever
stored as complete, and nothing the client did not receive is ever sent.

Two recordings, served event by event by `CutServer` and broken after each event (and, for the
Anthropic stream, also in the middle of each event's bytes):

* DeepSeek `deepseek_thinking_stream` (211 chunks of `reasoning_content`, then content);
* Anthropic `anthropic_stream_tool_use` (thinking deltas, one `signature_delta`, text, tool use).

Faults: the provider closes the connection (`eof`), the body is truncated mid chunked-encoding
(`chunked`), the provider stalls and the client's timeout fires (`stall`), and the client stops
reading after k chunks. After each, the client continues the conversation the way a
reasoning-dropping client does, with exactly what it received; the test reads the store directly
and the wire of that next request.

Every position runs as its own conversation (own namespace, own upstream model name) through one
callback, many at once, which keeps the whole sweep to seconds.

What LiteLLM itself does with a cut differs by version and is not the callback's choice:
LiteLLM 1.106.12 reads a connection closed cleanly mid-stream as the end of the reply (the client
gets a shorter "complete" reply, `finish_reason="stop"`), 1.110.2 raises. So for DeepSeek the rule
checked is: what is stored is exactly the reasoning the client received with that reply, never
more, never another position's, and nothing is stored when LiteLLM raised. For Claude: a
thinking block is only ever stored signed with the full recorded signature, and only such a block
is ever sent back.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import READ_FILE
from conftest import register
from reliability_utils import CutServer, Plan, event_data, recorded_events

from litellm_reasoning import Reasoning, ReasoningCallback

DEEPSEEK_EVENTS = recorded_events("deepseek_thinking_stream")
CLAUDE_EVENTS = recorded_events("anthropic_stream_tool_use")
CAPTURE_WAIT = 0.5
"""The callback's capture wait in these tests (a continuation of an abandoned reply waits it)."""
BATCH = 40
"""Conversations run at once."""
EVERY_EVENT = os.environ.get("LITELLM_REASONING_EVERY_EVENT") == "1"
"""Cut the 212-event DeepSeek stream after every event in every mode (about a minute more).
By default: every event where the kind of chunk changes, its neighbours, and every 10th."""


def _deepseek_positions(total: int) -> list[int]:
    if EVERY_EVENT:
        return list(range(total + 1))
    kinds = []
    for event in DEEPSEEK_EVENTS:
        data = event_data(event) or {}
        choice = (data.get("choices") or [{}])[0]
        delta = choice.get("delta") or {}
        kinds.append(
            "done"
            if not data
            else "finish"
            if choice.get("finish_reason")
            else "usage"
            if not data.get("choices")
            else "reasoning"
            if delta.get("reasoning_content")
            else "content"
            if delta.get("content")
            else "other"
        )
    edges = {i for i in range(1, total) if kinds[i] != kinds[i - 1]}
    near = {p + d for p in edges | {0, total} for d in (-1, 0, 1)}
    return sorted(p for p in near | set(range(0, total, 10)) if 0 <= p <= total)


CLAUDE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and state"}},
            "required": ["location"],
        },
    },
}
THINKING = {"type": "enabled", "budget_tokens": 1024}


def _deepseek_recorded() -> tuple[str, str]:
    reasoning = content = ""
    for event in DEEPSEEK_EVENTS:
        for choice in (event_data(event) or {}).get("choices") or ():
            delta = choice.get("delta") or {}
            reasoning += delta.get("reasoning_content") or ""
            content += delta.get("content") or ""
    return reasoning, content


def _claude_recorded() -> dict[str, Any]:
    """The recorded thinking block, joined from its deltas (signature included)."""
    block = {"type": "thinking", "thinking": "", "signature": ""}
    for event in CLAUDE_EVENTS:
        data = event_data(event) or {}
        delta = data.get("delta") or {}
        if data.get("index") == 0 and delta.get("type") == "thinking_delta":
            block["thinking"] += delta["thinking"]
        if data.get("index") == 0 and delta.get("type") == "signature_delta":
            block["signature"] += delta["signature"]
    return block


DEEPSEEK_REASONING, DEEPSEEK_CONTENT = _deepseek_recorded()
CLAUDE_BLOCK = _claude_recorded()


@pytest.fixture(scope="module")
def server() -> Iterator[CutServer]:
    with CutServer() as running:
        yield running


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=CAPTURE_WAIT))
    litellm.logging_callback_manager._reset_all_callbacks()


def _records_of(callback: ReasoningCallback, namespace: str) -> list[Any]:
    return [
        row.record
        for row in callback.store.list_records(f"ns={namespace}", limit=1000)
        if row.record is not None
    ]


def _openai_reply(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-followup",
        "object": "chat.completion",
        "created": 0,
        "model": "x",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _claude_reply(text: str) -> dict[str, Any]:
    return {
        "id": "msg_followup",
        "type": "message",
        "role": "assistant",
        "model": "x",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


async def _consume(response: Any, stop_after: int | None) -> tuple[dict[str, Any], int]:
    """(what the client assembled from the chunks it read, how many it read)."""
    chunks: list[Any] = []
    async for chunk in response:
        if stop_after is not None and len(chunks) >= stop_after:
            break
        chunks.append(chunk)
    if stop_after is not None and hasattr(response, "aclose"):
        await response.aclose()  # what `async with` / a closing client does
    reasoning = content = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            content += delta.content or ""
            for call in delta.tool_calls or ():
                entry = calls.setdefault(
                    call.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
    got = {
        "reasoning": reasoning,
        "content": content,
        "tool_calls": [calls[i] for i in sorted(calls)],
    }
    return got, len(chunks)


# ------------------------------------------------------------------------------ DeepSeek


async def _deepseek_position(
    server: CutServer, name: str, plan: Plan, stop_after: int | None, timeout: float | None
) -> dict[str, Any]:
    model = f"deepseek-reasoner-{name}"
    server.plan(model, plan, Plan(json_body=_openai_reply("Hello again.")))
    common: dict[str, Any] = {
        "model": f"deepseek/{model}",
        "api_base": server.base_url,
        "api_key": "k",
        "metadata": {"reasoning_namespace": name},
        "num_retries": 0,
        "max_retries": 0,  # the openai client's own retries would replay the broken call
    }
    first = [{"role": "user", "content": "Hello"}]
    outcome = "ok"
    got: dict[str, Any] = {"reasoning": "", "content": "", "tool_calls": []}
    events = plan.events or []
    finished = any(
        any(c.get("finish_reason") for c in (event_data(e) or {}).get("choices") or ())
        for e in events[: len(events) if plan.cut is None else plan.cut]
    )
    try:
        extra = {"timeout": timeout} if timeout else {}
        response = await litellm.acompletion(messages=first, stream=True, **common, **extra)
        got, _ = await _consume(response, stop_after)
    except Exception as exc:  # LiteLLM's own verdict on the broken stream
        outcome = type(exc).__name__
    # The client continues with exactly what it received, reasoning dropped.
    follow = [
        *first,
        {"role": "assistant", "content": got["content"]},
        {"role": "user", "content": "Reply in one sentence.", "turn": False},
    ]
    start = time.perf_counter()
    await litellm.acompletion(messages=follow, **common)
    waited = time.perf_counter() - start
    wire = server.bodies(model)[-1]["messages"]
    return {
        "name": name,
        "outcome": outcome,
        "got": got,
        "wire": wire,
        "waited": waited,
        "finished": finished,
    }


def _check_deepseek(callback: ReasoningCallback, result: dict[str, Any], complete: bool) -> None:
    name, got, wire = result["name"], result["got"], result["wire"]
    records = _records_of(callback, name)
    texts = [r.text for r in records]
    assert all("turn" not in m for m in wire), name
    sent = wire[1].get("reasoning_content")
    if result["outcome"] != "ok" and result["finished"]:
        # The provider sent its finish before the fault (a stall before `[DONE]`): the reply is
        # whole and is kept whole, whatever LiteLLM says of the rest; it is restored only if the
        # client's message is that whole reply (LiteLLM may not have handed it all over).
        assert texts in ([], [DEEPSEEK_REASONING]), (name, texts)
        assert sent in (None, "", DEEPSEEK_REASONING), name
        return
    if result["outcome"] != "ok":
        assert records == [], (name, result["outcome"], texts)
        assert not sent, name
        return
    # Stored: at most the one record, exactly the reasoning the client received with the reply.
    assert texts in ([], [got["reasoning"]]), (name, texts, got["reasoning"])
    assert DEEPSEEK_REASONING.startswith(got["reasoning"]), name
    assert sent in (None, "", got["reasoning"]), name
    if complete:
        assert got["reasoning"] == DEEPSEEK_REASONING and got["content"] == DEEPSEEK_CONTENT
        assert texts == [DEEPSEEK_REASONING] and sent == DEEPSEEK_REASONING, name
    # At most one capture wait, never more: a bound far outside machine noise.
    assert result["waited"] < CAPTURE_WAIT + 30.0, (name, result["waited"])


async def _sweep(jobs: list[Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for start in range(0, len(jobs), BATCH):
        results += await asyncio.gather(*(job() for job in jobs[start : start + BATCH]))
    return results


@pytest.mark.parametrize("how", ["eof", "chunked"])
async def test_deepseek_stream_cut_by_the_provider_at_every_event(
    how: str, server: CutServer, callback: ReasoningCallback
) -> None:
    """The connection breaks after event n, for every n (the last n is the full stream)."""
    total = len(DEEPSEEK_EVENTS)
    jobs = [
        (
            lambda n=n: _deepseek_position(
                server,
                f"ds-{how}-{n}",
                Plan(DEEPSEEK_EVENTS, cut=n, how=how if n < total else "full"),
                None,
                None,
            )
        )
        for n in _deepseek_positions(total)
    ]
    results = await _sweep(jobs)
    complete = {f"ds-{how}-{total}", f"ds-{how}-{total - 1}"}  # [DONE] missing changes nothing
    for result in results:
        _check_deepseek(callback, result, result["name"] in complete)
    assert callback.stats["errors"] == 0
    outcomes = {r["outcome"] for r in results}
    print(f"\n{how}: {len(results)} cut positions, outcomes {sorted(outcomes)}")


async def test_deepseek_client_stops_reading_after_every_chunk(
    server: CutServer, callback: ReasoningCallback
) -> None:
    """The client breaks out of the stream (and closes it) after k chunks, for every k: LiteLLM
    reports no success, so nothing is stored; the continuation waits at most the capture wait."""
    chunks = sum(1 for e in DEEPSEEK_EVENTS if event_data(e) is not None)
    jobs = [
        (lambda k=k: _deepseek_position(server, f"ds-stop-{k}", Plan(DEEPSEEK_EVENTS), k, None))
        for k in _deepseek_positions(chunks - 1)
    ]
    results = await _sweep(jobs)
    for result in results:
        _check_deepseek(callback, result, complete=False)
    waits = sorted(r["waited"] for r in results)
    print(f"\nclient stop: continuation slowest {waits[-1]:.2f} s (capture wait {CAPTURE_WAIT} s)")


async def test_deepseek_provider_stalls_and_the_client_times_out(
    server: CutServer, callback: ReasoningCallback
) -> None:
    """The provider stops sending after event n; LiteLLM's timeout ends the call."""
    total = len(DEEPSEEK_EVENTS)
    positions = sorted({0, 1, 2, total - 2, total - 1, *range(5, total, 40)})
    jobs = [
        (
            lambda n=n: _deepseek_position(
                server, f"ds-stall-{n}", Plan(DEEPSEEK_EVENTS, cut=n, how="stall"), None, 1.0
            )
        )
        for n in positions
    ]
    results = await _sweep(jobs)
    for result in results:
        _check_deepseek(callback, result, complete=False)
    assert all(r["outcome"] != "ok" for r in results), [r["outcome"] for r in results]


# ------------------------------------------------------------------------------ Claude


async def _claude_position(
    server: CutServer, name: str, plan: Plan, stop_after: int | None
) -> dict[str, Any]:
    model = f"claude-sonnet-4-6-{name}"
    server.plan(model, plan, Plan(json_body=_claude_reply("It is sunny.")))
    common: dict[str, Any] = {
        "model": f"anthropic/{model}",
        "api_base": server.base_url,
        "api_key": "k",
        "metadata": {"reasoning_namespace": name},
        "num_retries": 0,
        "tools": [CLAUDE_TOOL],
        "thinking": THINKING,
        "max_tokens": 2048,
    }
    first = [{"role": "user", "content": "What is the weather in San Francisco?"}]
    outcome = "ok"
    got: dict[str, Any] = {"reasoning": "", "content": "", "tool_calls": []}
    try:
        response = await litellm.acompletion(messages=first, stream=True, **common)
        got, _ = await _consume(response, stop_after)
    except Exception as exc:
        outcome = type(exc).__name__
    assistant: dict[str, Any] = {"role": "assistant", "content": got["content"] or None}
    follow: list[Any] = [*first, assistant]
    # A tool call cut inside its JSON arguments cannot be run: the client does not send it back.
    calls = [c for c in got["tool_calls"] if _parses(c["function"]["arguments"])]
    if calls:
        assistant["tool_calls"] = calls
        follow += [{"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in calls]
    else:
        follow.append({"role": "user", "content": "Go on.", "turn": False})
    await litellm.acompletion(messages=follow, **common)
    wire = server.bodies(model)[-1]
    return {"name": name, "outcome": outcome, "got": got, "wire": wire}


def _parses(arguments: str) -> bool:
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


def _check_claude(callback: ReasoningCallback, result: dict[str, Any], complete: bool) -> None:
    name, wire = result["name"], result["wire"]
    for record in _records_of(callback, name):
        for part in record.parts:
            # Never a partial signature, never a signed part with partial text.
            if part.signature is not None:
                assert part.signature == CLAUDE_BLOCK["signature"], name
                assert part.text == CLAUDE_BLOCK["thinking"], name
    sent_blocks = [
        block
        for message in wire["messages"]
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") in ("thinking", "redacted_thinking")
    ]
    assert sent_blocks in ([], [CLAUDE_BLOCK]), (name, sent_blocks)
    assert all("turn" not in m for m in wire["messages"]), name
    if complete:
        assert sent_blocks == [CLAUDE_BLOCK], name


@pytest.mark.parametrize("how", ["eof", "chunked"])
async def test_claude_stream_cut_by_the_provider_at_every_event_and_inside_each(
    how: str, server: CutServer, callback: ReasoningCallback
) -> None:
    """Broken after event n and after half of event n+1's bytes (inside the signature event,
    inside a tool call's JSON …), for every n."""
    total = len(CLAUDE_EVENTS)
    jobs = []
    for n in range(total + 1):
        for half in (False, True) if n < total else (False,):
            plan = Plan(CLAUDE_EVENTS, cut=n, how=how if n < total else "full", half=half)
            name = f"cl-{how}-{n}{'h' if half else ''}"
            jobs.append(lambda name=name, plan=plan: _claude_position(server, name, plan, None))
    results = await _sweep(jobs)
    for result in results:
        _check_claude(callback, result, result["name"] == f"cl-{how}-{total}")
    assert callback.stats["errors"] == 0
    signed = [r["name"] for r in results if _records_of(callback, r["name"])]
    print(f"\n{how}: {len(results)} cut positions; stored something for {len(signed)}")


async def test_claude_client_stops_reading_after_every_chunk(
    server: CutServer, callback: ReasoningCallback
) -> None:
    """The client stops after k chunks and closes the stream, for every k. (LiteLLM 1.106.12
    logs a closed stream as a success: what it assembled is stored, which is only ever the
    complete signed block or unsigned text, never sent.)"""
    jobs = [
        (lambda k=k: _claude_position(server, f"cl-stop-{k}", Plan(CLAUDE_EVENTS), k))
        for k in range(len(CLAUDE_EVENTS))
    ]
    for result in await _sweep(jobs):
        _check_claude(callback, result, complete=False)


# ------------------------------------------------------------------ a late success event


def test_a_finished_sync_stream_is_captured_by_the_next_request_when_logging_runs_late(
    callback: ReasoningCallback,
) -> None:
    """A sync stream the client read to its end and let go of, whose success event LiteLLM
    runs late (another logging integration ahead of this one is slow, as on a loaded worker):
    the next request of the conversation does not wait out its capture wait and go without
    the reasoning (which DeepSeek refuses); it captures the reply from the stream's chunks."""
    from litellm.integrations.custom_logger import CustomLogger

    from litellm_reasoning.testing.refusals import deepseek_reasoning_required
    from litellm_reasoning.testing.upstream import Reply, Upstream

    released = threading.Event()

    class SlowLogger(CustomLogger):  # a logging integration that takes its time
        def log_success_event(self, *args: Any, **kwargs: Any) -> None:
            released.wait(10)

    litellm.callbacks = [SlowLogger(), callback]
    model = "deepseek-late-logging"
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    try:
        with Upstream(refuse=[deepseek_reasoning_required]) as server:
            server.script(
                model,
                Reply(
                    message={
                        "role": "assistant",
                        "content": "",
                        "reasoning_content": "Read a.py first.",
                        "tool_calls": [call],
                    },
                    finish_reason="tool_calls",
                ),
                Reply(message={"role": "assistant", "content": "done", "reasoning_content": "R"}),
            )
            common = {
                "model": f"openai/{model}",
                "api_base": server.base_url,
                "api_key": "k",
                "tools": [READ_FILE],
            }
            messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]

            def read_to_the_end() -> list[Any]:
                calls: list[Any] = []
                for chunk in litellm.completion(messages=messages, stream=True, **common):
                    calls += chunk.choices[0].delta.tool_calls or []
                return calls  # the stream object goes with this frame

            assert read_to_the_end()
            messages += [  # what a dropping client sends back
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
            ]
            answer = litellm.completion(messages=messages, **common)
            sent = server.bodies(model)[-1]["messages"][1]
    finally:
        released.set()
    assert answer.choices[0].message.content == "done"
    assert sent.get("reasoning_content") == "Read a.py first."
    assert server.refusals == []


def test_a_stream_the_client_let_go_of_is_assembled_from_its_chunks_once_finished() -> None:
    """The capture a waiting request makes itself (`streams.finished_stream`) when LiteLLM's
    stream object is gone: from the chunk list the call state kept, only once a chunk carries
    the provider's finish (a cut stream is never a reply)."""
    from litellm_reasoning.integration.calls import CallState
    from litellm_reasoning.integration.streams import finished_stream
    from litellm_reasoning.testing.upstream import Reply, Upstream

    with Upstream() as server:
        server.always(
            "late",
            Reply(message={"role": "assistant", "content": "ok", "reasoning_content": "Think."}),
        )
        chunks = list(
            litellm.completion(
                model="openai/late",
                api_base=server.base_url,
                api_key="k",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
        )
    gone = CallState(stream=lambda: None, stream_chunks=chunks)
    assembled = finished_stream(gone)
    assert assembled is not None
    assert assembled.choices[0].message.reasoning_content == "Think."
    finish = max(i for i, c in enumerate(chunks) if c.choices and c.choices[0].finish_reason)
    cut = CallState(stream=lambda: None, stream_chunks=chunks[:finish])
    assert finished_stream(cut) is None
    captured = CallState(stream=lambda: None, stream_chunks=chunks, captured=True)
    assert finished_stream(captured) is None


@pytest.mark.parametrize("filed_under", ["conversation", "place"])
def test_a_capture_closing_just_before_the_request_looks_for_open_ones_is_read_again(
    filed_under: str,
) -> None:
    """A capture (LiteLLM's logging thread) that writes its record and closes after the next
    request's read began, at the moment that request looks for captures still open: nothing is
    open any more, but the record has just landed, so it is read again, not gone without (what
    a Claude tool loop then answers with 400). Found by its conversation state, or by its place
    in the turn (a history cut at its head). Seen once in CI as a sync stream continued at once."""
    from litellm_reasoning.integration.flows import drive
    from litellm_reasoning.memo.pending import Closing, PendingCaptures
    from litellm_reasoning.stores.memory import MemoryStore

    record = Reasoning.from_text("Open the lexer first.")

    class CaptureEndsAsTheRequestLooks(PendingCaptures):
        def owners(self, scope: str, digest: str) -> list[tuple[Closing, Any]]:
            if len(self):  # the logging thread finishes now: record written, capture closed
                store.put_many(scope, {"key": record})
                self.close("call-1")
            return super().owners(scope, digest)

    store = MemoryStore()
    callback = ReasoningCallback(store)
    engine = callback.engine
    engine.pending = pending = CaptureEndsAsTheRequestLooks()
    by_place = filed_under == "place"
    pending.open("call-1", "scope", "state-before-5", owner=None, place="@turn-5")
    # By place: the request's history was cut at its head, so no conversation state names it.
    before = {} if by_place else {5: "state-before-5"}
    places = (lambda i: "@turn-5") if by_place else None
    flow = engine.lookup("scope", {5: "key"}, before, required=True, places=places)
    found = drive(store, flow)
    assert found == {"key": record}
    assert len(pending) == 0
