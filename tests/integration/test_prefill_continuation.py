"""A reply that continues an assistant message (a client's prefill, or LiteLLM 1.109+'s
mid-stream fallback continuing a cut stream on another deployment) is one message in the
client's hands made by two: its reasoning is not kept, so it can never come back as the
whole message's, nor as one issuer's."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from conftest import register
from reliability_utils import CutServer, Plan, stored

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.messages import continues_prefill
from litellm_reasoning.testing.upstream import Reply, Upstream, sse_from_message

B_REASONING = "B works out the rest."


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=1.0))
    litellm.logging_callback_manager._reset_all_callbacks()


def test_a_request_ending_with_an_assistant_message_continues_it() -> None:
    user = {"role": "user", "content": "Why 42?"}
    assert continues_prefill([user, {"role": "assistant", "content": "Because", "prefix": True}])
    assert continues_prefill([user, {"role": "assistant", "content": "Because"}])
    assert not continues_prefill([user])
    assert not continues_prefill([])


async def test_a_clients_prefill_reply_is_not_kept(callback: ReasoningCallback) -> None:
    with Upstream() as up:
        up.script("deepseek-reasoner", Reply(message={"reasoning_content": "R", "content": " 42."}))
        await litellm.acompletion(
            model="deepseek/deepseek-reasoner",
            api_base=up.base_url,
            api_key="k",
            messages=[
                {"role": "user", "content": "Why 42?"},
                {"role": "assistant", "content": "It is", "prefix": True},
            ],
        )
    assert stored(callback) == []
    assert callback.stats["captured"] == 0


@pytest.mark.skipif(
    "enable_mid_stream_fallback_continuation" not in inspect.signature(litellm.Router).parameters,
    reason="LiteLLM before 1.109 has no mid-stream fallback continuation",
)
async def test_a_mid_stream_continuation_on_another_provider_is_not_kept(
    callback: ReasoningCallback,
) -> None:
    """Deployment A's stream breaks after some text; LiteLLM continues it on B (a reasoning
    model) with A's text as prefill and hands the client one message: A's text, B's text and
    B's reasoning. Nothing is stored, and the client's next request, which sends that message
    back, carries no reasoning for it."""
    first = "The answer to your question is for"
    events = [
        event + "\n\n"
        for event in sse_from_message(
            "deepseek-chat", {"content": first + "ty-two."}, "stop"
        ).split("\n\n")
        if event.strip()
    ]
    with CutServer() as cut, Upstream() as up:
        cut.plan("deepseek-chat", Plan(events=events, cut=3, how="eof"))
        up.always(
            "deepseek-reasoner",
            Reply(message={"reasoning_content": B_REASONING, "content": "ty-two."}),
        )
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "a",
                    "litellm_params": {
                        "model": "deepseek/deepseek-chat",
                        "api_base": cut.base_url,
                        "api_key": "k",
                    },
                },
                {
                    "model_name": "b",
                    "litellm_params": {
                        "model": "deepseek/deepseek-reasoner",
                        "api_base": up.base_url,
                        "api_key": "k",
                    },
                },
            ],
            fallbacks=[{"a": ["b"]}],
            enable_mid_stream_fallback_continuation=True,
            num_retries=0,
        )
        messages = [{"role": "user", "content": "Why 42?"}]
        stream = await router.acompletion(model="a", messages=messages, stream=True)
        text = reasoning = ""
        async for chunk in stream:
            delta = chunk.choices[0].delta
            text += delta.content or ""
            reasoning += getattr(delta, "reasoning_content", None) or ""
        # the continuation happened: B was asked to go on from A's text, the client got both
        (continued,) = up.bodies("deepseek-reasoner")
        prefill = continued["messages"][-1]
        assert prefill["role"] == "assistant" and prefill["prefix"] is True
        said_by_a = prefill["content"]
        assert said_by_a and (first + "ty-two.").startswith(said_by_a)
        assert text == said_by_a + "ty-two." and reasoning == B_REASONING
        await asyncio.sleep(0.5)  # success events run after the stream ends
        assert stored(callback) == []
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "And 43?"}]
        await router.acompletion(model="b", messages=messages)
        sent = up.bodies("deepseek-reasoner")[-1]["messages"]
    assert sent[1]["role"] == "assistant" and not sent[1].get("reasoning_content")


async def test_a_stream_restarted_after_a_cut_keeps_only_the_attempt_the_client_got(
    callback: ReasoningCallback,
) -> None:
    """A stream breaks after its reasoning began (LiteLLM raises, or ends it short) and the
    client starts the same request again, here on another server of the same deployment
    (a retry, a restart): the broken attempt stores nothing, the finished one is kept, and the
    conversation's next request gets exactly the reasoning of the reply the client has."""
    cut_reply = {"reasoning_content": "A thinks at length about it.", "content": "A says 42."}
    events = [
        event + "\n\n"
        for event in sse_from_message("deepseek-reasoner", cut_reply, "stop").split("\n\n")
        if event.strip()
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Why 42?"}]
    with CutServer() as cut, Upstream() as up:
        cut.plan("deepseek-reasoner", Plan(events=events, cut=4, how="eof"))
        up.script(
            "deepseek-reasoner",
            Reply(message={"reasoning_content": B_REASONING, "content": "B says 42."}),
            Reply(message={"content": "Because."}),
        )
        common = {"model": "deepseek/deepseek-reasoner", "api_key": "k", "num_retries": 0}
        broken = ""
        with contextlib.suppress(Exception):  # LiteLLM's verdict on a cut stream varies by line
            stream = await litellm.acompletion(
                messages=messages, stream=True, api_base=cut.base_url, max_retries=0, **common
            )
            async for chunk in stream:
                broken += getattr(chunk.choices[0].delta, "reasoning_content", None) or ""
        assert broken and "A thinks at length about it.".startswith(broken)
        text = ""
        stream = await litellm.acompletion(
            messages=messages, stream=True, api_base=up.base_url, **common
        )
        async for chunk in stream:
            text += chunk.choices[0].delta.content or ""
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": "Say why.", "turn": False},
        ]
        await litellm.acompletion(messages=messages, api_base=up.base_url, **common)
        sent = up.bodies("deepseek-reasoner")[-1]["messages"]
    assert [r.text for r in stored(callback)] == [B_REASONING]
    assert sent[1]["reasoning_content"] == B_REASONING
