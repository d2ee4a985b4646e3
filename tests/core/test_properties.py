"""Property-based: arbitrary histories never make the callback raise, lose a message or leak `turn`.

Two levels: the hooks called directly with arbitrary kwargs (many examples, fast), and real
`litellm.acompletion` against the local server with and without the callback (fewer examples):
whenever LiteLLM accepts a call without the callback, it accepts it with the callback too.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from typing import Any

import litellm
import pytest
from conftest import register
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
content = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.lists(
        st.one_of(
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
            st.fixed_dictionaries(
                {"type": st.just("thinking"), "thinking": st.text(max_size=20), "signature": junk}
            ),
            st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": junk}),
            junk,
        ),
        max_size=3,
    ),
    junk,
)
tool_call = st.one_of(
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.text(min_size=1, max_size=20), junk),
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {"name": st.text(min_size=1, max_size=10), "arguments": st.text(max_size=20)}
            ),
        }
    ),
    junk,
)
message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "x"])},
        optional={
            "content": content,
            "turn": junk,
            "reasoning_content": junk,
            "reasoning": junk,
            "thinking_blocks": junk,
            "reasoning_items": junk,
            "reasoning_details": junk,
            "provider_specific_fields": junk,
            "tool_calls": st.one_of(st.lists(tool_call, max_size=3), junk),
            "tool_call_id": junk,
        },
    ),
    junk,
)
histories = st.lists(message, max_size=12)


def _no_turn(messages: Any) -> bool:
    return not any(isinstance(m, dict) and "turn" in m for m in messages or [])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=histories,
    model=st.sampled_from(
        [
            "openai/x",
            "deepseek/r",
            "openai/gpt-5",
            "anthropic/c",
            "bedrock/anthropic.claude-3-7-sonnet",
            "nope/z",
        ]
    ),
)
def test_hooks_never_raise_and_never_leak_turn(history: list[Any], model: str) -> None:
    """The deployment hook and the body patch return a usable request for any history."""
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    try:
        original = copy.deepcopy(history)
        kwargs = {
            "model": model,
            "messages": history,
            "litellm_call_id": str(uuid.uuid4()),
            "api_base": "http://127.0.0.1:9/v1",
        }
        out = asyncio.run(callback.async_pre_call_deployment_hook(dict(kwargs), "acompletion"))
        assert history == original  # never mutated
        assert out is not None and len(out["messages"]) == len(history)
        assert _no_turn(out["messages"])
        body = {"messages": copy.deepcopy(history)}
        callback.log_pre_api_call(
            model,
            history,
            {
                "litellm_call_id": str(uuid.uuid4()),
                "model": model,
                "additional_args": {"complete_input_dict": body},
                "litellm_params": {},
            },
        )
        assert len(body["messages"]) == len(history) and _no_turn(body["messages"])
        callback.log_success_event(
            {"litellm_call_id": kwargs["litellm_call_id"]}, junk_response(history), None, None
        )
    finally:
        litellm.callbacks = []


def junk_response(history: list[Any]) -> Any:
    """An object shaped roughly like a reply, built from the history's own junk."""

    class Choice:
        message = history[-1] if history else None

    class Response:
        def __init__(self) -> None:
            self.choices = [Choice()]

    return Response()


@pytest.fixture(scope="module")
def wire_upstream() -> Any:
    with Upstream() as up:
        up.always("prop", Reply(message={"content": "ok", "reasoning_content": "r"}))
        yield up


wire_history = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.text(max_size=20)},
        optional={
            "turn": junk,
            "reasoning_content": st.one_of(st.text(max_size=20), junk),
            "reasoning": junk,
            "thinking_blocks": junk,
            "provider_specific_fields": junk,
        },
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=wire_history, stream=st.booleans())
def test_real_litellm_accepts_with_the_callback_what_it_accepts_without(
    history: list[Any], stream: bool, wire_upstream: Upstream
) -> None:
    """Through real acompletion: same outcome with and without the callback, and no `turn` sent."""

    async def attempt() -> str:
        try:
            response = await litellm.acompletion(
                model="openai/prop",
                messages=copy.deepcopy(history),
                api_base=wire_upstream.base_url,
                api_key="k",
                stream=stream,
            )
            if stream:
                async for _ in response:
                    pass
            return "ok"
        except Exception as exc:  # LiteLLM's own verdict on the input
            return type(exc).__name__

    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []
    without = asyncio.run(attempt())
    register(ReasoningCallback())
    try:
        before = len(wire_upstream.bodies("prop"))
        with_callback = asyncio.run(attempt())
        assert with_callback == without or (without != "ok" and with_callback == "ok"), (
            without,
            with_callback,
        )
        if with_callback == "ok":
            sent = wire_upstream.bodies("prop")[before:]
            assert sent and all(_no_turn(body["messages"]) for body in sent)
            json.dumps(sent)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
