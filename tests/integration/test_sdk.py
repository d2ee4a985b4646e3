"""End to end through the real LiteLLM SDK and Router against a local server: what reaches the wire.

The client in these tests behaves like the openai SDK user or agent framework that drops
reasoning: it keeps only role, content and tool_calls of each reply.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.stores import FaultyStore
from litellm_reasoning.testing.upstream import Reply, Upstream

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
REASONING_KEYS = {"reasoning_content", "reasoning", "thinking_blocks", "provider_specific_fields"}


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


def tool_loop_replies(call_id: str) -> tuple[Reply, Reply]:
    """A tool call reasoned about, then the answer after its result."""
    return (
        Reply(
            message={
                "content": "",
                "reasoning_content": "Read a.py before editing.",
                "tool_calls": [_tool_call(call_id)],
            }
        ),
        Reply(message={"content": "Fixed.", "reasoning_content": "Line 3 was wrong."}),
    )


def _dropped(message: Any) -> dict[str, Any]:
    """What a reasoning-dropping client keeps of a reply."""
    data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    if data.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                },
            }
            for c in data["tool_calls"]
        ]
    return out


async def call(
    how: str,
    upstream: Upstream,
    model: str,
    messages: list[Any],
    *,
    stream: bool = False,
    **extra: Any,
) -> Any:
    """One request through `how`; returns the assembled reply message the caller got."""
    params: dict[str, Any] = {"messages": messages, "stream": stream, **extra}
    if how.startswith("router."):
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "group",
                    "litellm_params": {
                        "model": f"openai/{model}",
                        "api_base": upstream.base_url,
                        "api_key": "k",
                    },
                }
            ],
            num_retries=0,
        )
        target: Any = router
        params["model"] = "group"
    else:
        target = litellm
        params.update(model=f"openai/{model}", api_base=upstream.base_url, api_key="k")
    if how.endswith("acompletion"):
        response = await target.acompletion(**params)
        if stream:
            chunks = [chunk async for chunk in response]
            return litellm.stream_chunk_builder(chunks).choices[0].message
        return response.choices[0].message
    response = await asyncio.to_thread(lambda: target.completion(**params))
    if stream:
        chunks = await asyncio.to_thread(lambda: list(response))
        return litellm.stream_chunk_builder(chunks).choices[0].message
    return response.choices[0].message


def assert_no_turn(bodies: Sequence[Mapping[str, Any]]) -> None:
    for body in bodies:
        for message in body["messages"]:
            assert "turn" not in message


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_dropping_client_tool_loop(
    how: str, stream: bool, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """Tool-loop reasoning is restored on the wire, the reply is unchanged, a new turn drops it."""
    model = f"loop-{uuid.uuid4().hex[:8]}"
    call_id = "call_" + uuid.uuid4().hex
    upstream.script(
        model,
        *tool_loop_replies(call_id),
        Reply(message={"content": "Sure.", "reasoning_content": "New question."}),
    )
    messages: list[Any] = [{"role": "user", "content": "Fix a.py", "turn": True}]
    first = await call(how, upstream, model, messages, stream=stream)
    assert first.reasoning_content == "Read a.py before editing."  # the caller's reply is untouched
    messages += [_dropped(first), {"role": "tool", "tool_call_id": call_id, "content": "x = 1"}]
    sent = copy.deepcopy(messages)

    second = await call(how, upstream, model, messages, stream=stream)  # at once: no sleep
    assert second.reasoning_content == "Line 3 was wrong."
    assert messages == sent  # the caller's dicts are never mutated
    wire = upstream.bodies(model)[1]["messages"]
    assert wire[1]["reasoning_content"] == "Read a.py before editing."
    assert wire[1]["tool_calls"][0]["id"] == call_id

    messages += [_dropped(second), {"role": "user", "content": "Thanks. Now b.py?"}]
    await call(how, upstream, model, messages, stream=stream)
    wire = upstream.bodies(model)[2]["messages"]
    assert [m.get("reasoning_content") for m in wire] == [None] * 5
    assert not any(REASONING_KEYS & set(m) for m in wire)
    assert_no_turn(upstream.bodies(model))
    assert callback.stats["restored"] == 1


async def test_turn_false_delivery_keeps_the_turn(
    upstream: Upstream, callback: ReasoningCallback
) -> None:
    """A job's note with `turn: false` starts no turn; the earlier reply keeps its reasoning."""
    model = f"deliver-{uuid.uuid4().hex[:8]}"
    upstream.script(
        model,
        Reply(message={"content": "Started the tests.", "reasoning_content": "Kick off the job."}),
    )
    upstream.always(model, Reply(message={"content": "ok"}))
    messages: list[Any] = [{"role": "user", "content": "Run the tests in the background."}]
    first = await call("acompletion", upstream, model, messages)
    messages += [
        _dropped(first),
        {"role": "user", "content": "[job 1 finished: exit 0]", "turn": False},
    ]
    await call("acompletion", upstream, model, messages)
    wire = upstream.bodies(model)[-1]["messages"]
    assert wire[1]["reasoning_content"] == "Kick off the job."
    assert wire[2] == {"role": "user", "content": "[job 1 finished: exit 0]"}


@pytest.mark.parametrize("how", CALLS)
async def test_turn_nested_in_parts_and_tool_calls_never_reaches_the_wire(
    how: str, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """`turn` is a message-level key; one a client put inside a content part, a tool call or
    its function (meaningless there) is taken out too, and starts or ends no turn."""
    model = f"nested-turn-{uuid.uuid4().hex[:8]}"
    upstream.always(model, Reply(message={"content": "ok"}))
    call_in = {
        "id": "call_1",
        "type": "function",
        "turn": False,
        "function": {"name": "f", "arguments": "{}", "turn": True},
    }
    messages: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "Go.", "turn": False}]},
        {"role": "assistant", "content": None, "tool_calls": [call_in]},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"},
    ]
    sent = copy.deepcopy(messages)
    await call(how, upstream, model, messages)
    assert messages == sent  # the caller's messages are not written to
    wire = upstream.bodies(model)[-1]["messages"]
    assert "turn" not in str(wire), wire
    assert wire[0]["content"][0] == {"type": "text", "text": "Go."}
    assert wire[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}


async def test_positional_messages_are_rendered_too(
    upstream: Upstream, callback: ReasoningCallback
) -> None:
    """`acompletion(model, messages)` hides messages from the deployment hook: body patched."""
    model = f"positional-{uuid.uuid4().hex[:8]}"
    upstream.always(model, Reply(message={"content": "ok"}))
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "old turn"},
        {"role": "user", "content": "q2", "turn": True},
    ]
    await litellm.acompletion(f"openai/{model}", messages, api_base=upstream.base_url, api_key="k")
    wire = upstream.bodies(model)[-1]["messages"]
    assert wire == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q2"},
    ]


async def test_tenants_never_share_reasoning(
    upstream: Upstream, callback: ReasoningCallback
) -> None:
    """Identical history and tool-call ids from another namespace get nothing restored."""
    model = f"tenant-{uuid.uuid4().hex[:8]}"
    call_id = "call_" + uuid.uuid4().hex
    upstream.script(
        model,
        Reply(
            message={
                "content": "",
                "reasoning_content": "alice's plan",
                "tool_calls": [_tool_call(call_id)],
            }
        ),
    )
    upstream.always(model, Reply(message={"content": "ok"}))
    messages: list[Any] = [{"role": "user", "content": "go"}]
    first = await call(
        "acompletion", upstream, model, messages, metadata={"reasoning_namespace": "alice"}
    )
    messages += [_dropped(first), {"role": "tool", "tool_call_id": call_id, "content": "r"}]
    await call("acompletion", upstream, model, messages, metadata={"reasoning_namespace": "bob"})
    assert "reasoning_content" not in upstream.bodies(model)[-1]["messages"][1]
    await call("acompletion", upstream, model, messages, metadata={"reasoning_namespace": "alice"})
    assert upstream.bodies(model)[-1]["messages"][1]["reasoning_content"] == "alice's plan"


async def test_fallback_is_rendered_for_the_deployment_it_hits(
    upstream: Upstream, callback: ReasoningCallback
) -> None:
    """A Router fallback from a compatible server to OpenAI's gpt-4o re-renders: none there."""
    primary, backup = f"qwen-{uuid.uuid4().hex[:8]}", "gpt-4o"
    upstream.script(primary, Reply(raw_body='{"error": {"message": "overloaded"}}', status=500))
    before = len(upstream.bodies(backup))
    upstream.script(backup, Reply(message={"content": "from gpt-4o"}))
    router = litellm.Router(
        model_list=[
            {
                "model_name": "primary",
                "litellm_params": {
                    "model": f"openai/{primary}",
                    "api_base": upstream.base_url,
                    "api_key": "k",
                },
            },
            {
                "model_name": "backup",
                "litellm_params": {
                    "model": f"openai/{backup}",
                    "api_base": upstream.base_url,
                    "api_key": "k",
                },
            },
        ],
        fallbacks=[{"primary": ["backup"]}],
        num_retries=0,
    )
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "kept by the client",
            "tool_calls": [_tool_call("call_fallback_1")],
        },
        {"role": "tool", "tool_call_id": "call_fallback_1", "content": "r"},
    ]
    response = await router.acompletion(model="primary", messages=messages)
    assert response.choices[0].message.content == "from gpt-4o"
    assert upstream.bodies(primary)[-1]["messages"][1]["reasoning_content"] == "kept by the client"
    assert len(upstream.bodies(backup)) == before + 1
    assert not REASONING_KEYS & set(upstream.bodies(backup)[-1]["messages"][1])


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_store_failure_never_breaks_the_call(
    how: str, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing store: the call succeeds, one warning, `turn` removed, nothing else changed."""
    cb = register(ReasoningCallback(store=FaultyStore(fault="reads down", message="store is down")))
    model = f"broken-{uuid.uuid4().hex[:8]}"
    upstream.always(model, Reply(message={"content": "still answered"}))
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [_tool_call("call_broken_1")]},
        {"role": "tool", "tool_call_id": "call_broken_1", "content": "r"},
        {"role": "user", "content": "note", "turn": False},
    ]
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        for _ in range(3):
            reply = await call(how, upstream, model, messages)
            assert reply.content == "still answered"
    warnings = [
        r for r in caplog.records if r.name == "litellm_reasoning" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1 and "store is down" in warnings[0].getMessage()
    assert cb.stats["errors"] == 3
    for body in upstream.bodies(model)[-3:]:
        assert body["messages"] == [{k: v for k, v in m.items() if k != "turn"} for m in messages]


async def test_many_concurrent_conversations_get_their_own_reasoning(upstream: Upstream) -> None:
    """Fifty interleaved streamed tool loops: each restores exactly its own reasoning."""
    # The wait ends as soon as each capture lands; the long bound only matters on a loaded machine.
    register(ReasoningCallback(capture_wait_seconds=15))

    async def conversation(n: int) -> None:
        model = f"conc-{n}-{uuid.uuid4().hex[:6]}"
        call_id = f"call_{uuid.uuid4().hex}"
        upstream.script(
            model,
            Reply(
                message={
                    "content": "",
                    "reasoning_content": f"plan {n}",
                    "tool_calls": [_tool_call(call_id)],
                }
            ),
            Reply(message={"content": "done"}),
        )
        messages: list[Any] = [{"role": "user", "content": "same question"}]
        first = await call("acompletion", upstream, model, messages, stream=True)
        messages += [
            _dropped(first),
            {"role": "tool", "tool_call_id": call_id, "content": "same result"},
        ]
        await call("acompletion", upstream, model, messages, stream=True)
        assert upstream.bodies(model)[1]["messages"][1]["reasoning_content"] == f"plan {n}"

    try:
        await asyncio.gather(*(conversation(n) for n in range(50)))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
