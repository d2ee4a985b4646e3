"""Faults around a call: the provider answering 400/429/500 (also in the middle of a stream),
LiteLLM retries, a Router fallback to another provider mid-turn, and store errors and timeouts
injected at every single store call of a tool loop.

The rule checked: the call's outcome (reply, or exception type and status) is the one LiteLLM
gives without the callback, and reasoning captured before the fault is never lost: the next
successful request of the conversation carries it on the wire.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import ResilientStore
from litellm_reasoning.testing.stores import FaultyStore
from litellm_reasoning.testing.upstream import Reply, Upstream, sse_from_message

PLAN = "First read a.py, then fix the bug."


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


def _error(status: int) -> Reply:
    body = {"error": {"message": f"synthetic {status}", "type": "x", "code": status}}
    return Reply(raw_body=json.dumps(body), status=status)


def _mid_stream_error(model: str, status: int) -> Reply:
    """Reasoning chunks, then the error event OpenAI-compatible servers send mid-stream."""
    head = sse_from_message(model, {"reasoning_content": "Half a thou", "content": ""}, "stop")
    events = [e for e in head.split("\n\n") if e.strip()][:3]
    error = {"error": {"message": f"overloaded ({status})", "type": "server_error", "code": status}}
    return Reply(
        raw_body="\n\n".join([*events, "data: " + json.dumps(error)]) + "\n\n",
        content_type="text/event-stream",
    )


async def _outcome(**params: Any) -> str:
    """What the caller sees: the reply's content, or the exception's type and status."""
    try:
        response = await litellm.acompletion(**params)
        if params.get("stream"):
            chunks = [chunk async for chunk in response]
            built = litellm.stream_chunk_builder(chunks)
            return f"ok:{built.choices[0].message.content if built else None}"
        return f"ok:{response.choices[0].message.content}"
    except Exception as exc:
        return f"{type(exc).__name__}:{getattr(exc, 'status_code', None)}"


async def _first_step(upstream: Upstream, model: str, call_id: str) -> list[dict[str, Any]]:
    """Step 1 of a tool loop (captured by the registered callback); returns the history a
    reasoning-dropping client sends next."""
    upstream.script(
        model,
        Reply(
            message={"content": "", "reasoning_content": PLAN, "tool_calls": [_tool_call(call_id)]}
        ),
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    reply = await litellm.acompletion(
        model=f"openai/{model}", messages=history, api_base=upstream.base_url, api_key="k"
    )
    assert reply.choices[0].message.reasoning_content == PLAN
    return [
        *history,
        {"role": "assistant", "content": "", "tool_calls": [_tool_call(call_id)]},
        {"role": "tool", "tool_call_id": call_id, "content": "x = 1"},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("status", [400, 429, 500])
async def test_provider_error_same_outcome_and_nothing_captured_is_lost(
    status: int, stream: bool, upstream: Upstream
) -> None:
    model = f"err-{status}-{uuid.uuid4().hex[:6]}"
    params = {"api_base": upstream.base_url, "api_key": "k", "max_retries": 0, "stream": stream}
    history = [{"role": "user", "content": "hi"}]

    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []
    upstream.script(model, _error(status))
    without = await _outcome(model=f"openai/{model}", messages=history, **params)

    callback = register(ReasoningCallback(capture_wait_seconds=0.5))
    try:
        call_id = "call_" + uuid.uuid4().hex[:10]
        history = await _first_step(upstream, model, call_id)
        upstream.script(model, _error(status))
        with_callback = await _outcome(model=f"openai/{model}", messages=history, **params)
        assert with_callback == without and not without.startswith("ok"), (without, with_callback)
        sent = upstream.bodies(model)[-1]["messages"]
        assert sent[1]["reasoning_content"] == PLAN  # the failed attempt was rendered too
        # The retry after the error still finds what was captured before it.
        upstream.script(model, Reply(message={"content": "done"}))
        assert await _outcome(model=f"openai/{model}", messages=history, **params) == "ok:done"
        assert upstream.bodies(model)[-1]["messages"][1]["reasoning_content"] == PLAN
        assert callback.stats["errors"] == 0
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


@pytest.mark.parametrize("status", [429, 500])
async def test_error_in_the_middle_of_a_stream(status: int, upstream: Upstream) -> None:
    """The provider sends reasoning chunks, then an error event: same outcome with and without
    the callback; nothing of the broken reply is stored; the earlier capture is kept."""
    model = f"mid-{status}-{uuid.uuid4().hex[:6]}"
    params = {"api_base": upstream.base_url, "api_key": "k", "max_retries": 0, "stream": True}
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []
    upstream.script(model, _mid_stream_error(model, status))
    without = await _outcome(
        model=f"openai/{model}", messages=[{"role": "user", "content": "hi"}], **params
    )

    callback = register(ReasoningCallback(capture_wait_seconds=0.5))
    try:
        history = await _first_step(upstream, model, "call_" + uuid.uuid4().hex[:10])
        captured = callback.stats["captured"]
        upstream.script(model, _mid_stream_error(model, status))
        with_callback = await _outcome(model=f"openai/{model}", messages=history, **params)
        assert with_callback.split(":")[0] == without.split(":")[0], (without, with_callback)
        await asyncio.sleep(0.1)  # a success event, if LiteLLM sent one, has run
        records = [r.record.text for r in callback.store.list_records("ns=default") if r.record]
        assert "Half a thou" not in records and PLAN in records
        assert callback.stats["captured"] - captured in (0, 1)
        upstream.script(model, Reply(message={"content": "done"}))
        assert await _outcome(model=f"openai/{model}", messages=history, **params) == "ok:done"
        assert upstream.bodies(model)[-1]["messages"][1]["reasoning_content"] == PLAN
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


async def test_litellm_retries_render_every_attempt(upstream: Upstream) -> None:
    """`num_retries`: the 500 then the success both carry the restored reasoning; the reply is
    captured once."""
    callback = register(ReasoningCallback(capture_wait_seconds=0.5))
    try:
        model = f"retry-{uuid.uuid4().hex[:6]}"
        history = await _first_step(upstream, model, "call_" + uuid.uuid4().hex[:10])
        before = len(upstream.bodies(model))
        upstream.script(
            model, _error(500), Reply(message={"content": "done", "reasoning_content": "ok now"})
        )
        captured = callback.stats["captured"]
        reply = await litellm.acompletion(
            model=f"openai/{model}",
            messages=history,
            api_base=upstream.base_url,
            api_key="k",
            num_retries=1,
            max_retries=0,
        )
        assert reply.choices[0].message.content == "done"
        attempts = upstream.bodies(model)[before:]
        assert len(attempts) == 2
        assert [a["messages"][1]["reasoning_content"] for a in attempts] == [PLAN, PLAN]
        assert callback.stats["captured"] - captured == 1
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


async def test_router_fallback_to_another_provider_mid_turn(upstream: Upstream) -> None:
    """Step 1 on an OpenAI-compatible server (reasoning_content); step 2's deployment answers
    500 and the Router falls back to a vLLM deployment: the fallback gets the same reasoning in
    its own field (`reasoning`), the reply equals the one without the callback."""
    primary, backup = f"fa-{uuid.uuid4().hex[:6]}", f"fb-{uuid.uuid4().hex[:6]}"

    def router() -> litellm.Router:
        return litellm.Router(
            model_list=[
                {
                    "model_name": "primary",
                    "litellm_params": {
                        "model": f"openai/{primary}",
                        "api_base": upstream.base_url,
                        "api_key": "k",
                        "max_retries": 0,
                    },
                },
                {
                    "model_name": "backup",
                    "litellm_params": {
                        "model": f"hosted_vllm/{backup}",
                        "api_base": upstream.base_url,
                        "api_key": "k",
                    },
                },
            ],
            fallbacks=[{"primary": ["backup"]}],
            num_retries=0,
        )

    history = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "", "tool_calls": [_tool_call("call_fb_1")]},
        {"role": "tool", "tool_call_id": "call_fb_1", "content": "x = 1"},
    ]
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []
    upstream.script(primary, _error(500))
    upstream.script(backup, Reply(message={"content": "fixed"}))
    without = (await router().acompletion(model="primary", messages=history)).choices[0]

    callback = register(ReasoningCallback(capture_wait_seconds=0.5))
    try:
        upstream.script(
            primary,
            Reply(
                message={
                    "content": "",
                    "reasoning_content": PLAN,
                    "tool_calls": [_tool_call("call_fb_1")],
                }
            ),
            _error(500),
        )
        upstream.script(backup, Reply(message={"content": "fixed", "reasoning_content": "b"}))
        step_1 = await router().acompletion(model="primary", messages=history[:1])
        assert step_1.choices[0].message.reasoning_content == PLAN
        step_2 = (await router().acompletion(model="primary", messages=history)).choices[0]
        assert step_2.message.content == without.message.content == "fixed"
        assert upstream.bodies(primary)[-1]["messages"][1]["reasoning_content"] == PLAN
        fallback_wire = upstream.bodies(backup)[-1]["messages"][1]
        assert fallback_wire.get("reasoning") == PLAN and "reasoning_content" not in fallback_wire
        assert callback.stats["errors"] == 0
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


# ------------------------------------------------------------------ store faults, every call


async def _tool_loop(upstream: Upstream, model: str) -> tuple[list[str], list[Any]]:
    """Three steps (two tool calls, then the answer), from a client that drops reasoning.
    Returns the replies' contents and, per step, the reasoning on the wire for each earlier
    assistant message."""
    plans = ["Plan A: read a.py.", "Plan B: read b.py."]
    upstream.script(
        model,
        Reply(
            message={
                "content": "",
                "reasoning_content": plans[0],
                "tool_calls": [_tool_call("call_a")],
            }
        ),
        Reply(
            message={
                "content": "",
                "reasoning_content": plans[1],
                "tool_calls": [_tool_call("call_b")],
            }
        ),
        Reply(message={"content": "done", "reasoning_content": "Done."}),
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix a and b."}]
    contents, wires = [], []
    before = len(upstream.bodies(model))
    for call_id in ("call_a", "call_b", None):
        reply = await litellm.acompletion(
            model=f"openai/{model}", messages=list(history), api_base=upstream.base_url, api_key="k"
        )
        contents.append(reply.choices[0].message.content)
        if call_id:
            history += [
                {"role": "assistant", "content": "", "tool_calls": [_tool_call(call_id)]},
                {"role": "tool", "tool_call_id": call_id, "content": "ok"},
            ]
    for body in upstream.bodies(model)[before:]:
        wires.append(
            [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
        )
    return contents, wires


@pytest.mark.parametrize("kind", ["raise", "timeout"])
async def test_store_fault_at_every_store_call(kind: str, upstream: Upstream) -> None:
    """A three-step tool loop makes N store calls; for each i < N a fresh run fails exactly the
    i-th. Bare store: the callback fails open (same replies; only that call's reasoning is
    missing). Behind `ResilientStore` (what SQLite and Redis use): nothing is ever missing, the
    local layer answers."""
    probe = FaultyStore(kind=kind)
    register(ReasoningCallback(store=probe, capture_wait_seconds=0.5))
    clean, clean_wires = await _tool_loop(upstream, f"probe-{uuid.uuid4().hex[:6]}")
    assert clean_wires == [[], ["Plan A: read a.py."], ["Plan A: read a.py.", "Plan B: read b.py."]]
    total = probe.calls
    assert total >= 5
    for fail_at in range(total):
        bare = FaultyStore(fail_at=fail_at, kind=kind)
        callback = register(ReasoningCallback(store=bare, capture_wait_seconds=0.5))
        start = time.perf_counter()
        contents, wires = await _tool_loop(upstream, f"bare-{fail_at}-{uuid.uuid4().hex[:6]}")
        assert contents == clean, fail_at
        assert callback.stats["errors"] == 1, fail_at
        for got, want in zip(wires, clean_wires, strict=True):
            assert all(g in (w, None) for g, w in zip(got, want, strict=True)), (fail_at, wires)
        assert time.perf_counter() - start < 30  # no hang (far outside machine noise)

        resilient = ResilientStore(FaultyStore(fail_at=fail_at, kind=kind), retry_seconds=0.01)
        callback = register(ReasoningCallback(store=resilient, capture_wait_seconds=0.5))
        contents, wires = await _tool_loop(upstream, f"res-{fail_at}-{uuid.uuid4().hex[:6]}")
        assert contents == clean and wires == clean_wires, (fail_at, wires)
        assert callback.stats["errors"] == 0 and resilient.stats["failures"] == 1
        # A late answer is no outage: the store stays up (a failure is one), and a write it
        # answered late is kept locally and written with the store's next call.
        assert resilient.stats["outages"] == (0 if kind == "timeout" else 1)
        await asyncio.sleep(0.02)
        await resilient.aget_many("another tenant", ["k"])
        assert resilient.pending == 0 or not resilient.available
    litellm.logging_callback_manager._reset_all_callbacks()


def test_a_call_one_callback_rendered_is_captured_by_no_other() -> None:
    """LiteLLM runs a reply's success event with the callbacks registered when it runs (its
    logging worker carries an event still queued when a loop ends onto the next loop, which is
    how the Gemini cassette test once counted the previous test's reply as captured). The call
    state is LiteLLM's, shared; the capture belongs to the engine that rendered the call: any
    other instance's claim is refused, so it never files a record in its store."""
    from litellm_reasoning.integration.calls import Capture, start_attempt

    first, second = ReasoningCallback(), ReasoningCallback()
    details: dict[str, Any] = {}
    state = start_attempt(details, first.engine, first.engine.pending)
    first.engine.begin(state, Capture("scope", "digest", "deepseek", "deepseek-chat"))
    assert state.claim(second.engine) is None
    assert state.claim(first.engine) is not None
    assert state.claim(first.engine) is None  # once


def test_an_adapters_part_of_a_call_is_one_per_class_shared_by_copies_and_never_pickled() -> None:
    """What an adapter keeps of a call (`CallState.part`) is one value per class it defines:
    made on first use, the same through LiteLLM's copies of its details, gone once taken, and
    nothing of it travels when the state is pickled for a subprocess."""
    import copy
    import pickle

    from litellm_reasoning.integration.calls import CallState
    from litellm_reasoning.wire.anthropic.messages import CollectedSSE
    from litellm_reasoning.wire.openai_responses.input_items import StreamedItems

    state = CallState()
    assert state.peek(CollectedSSE) is None
    state.part(CollectedSSE).pieces = [b"event: message_start\n"]
    state.part(StreamedItems).keep(0, {"type": "reasoning"})
    assert copy.deepcopy({"call": state})["call"].part(CollectedSSE).pieces == [
        b"event: message_start\n"
    ]
    assert pickle.loads(pickle.dumps(state)).peek(CollectedSSE) is None
    taken = state.take(StreamedItems)
    assert taken is not None and taken.over([{"type": "message"}]) == [{"type": "reasoning"}]
    assert state.take(StreamedItems) is None and state.peek(CollectedSSE) is not None
