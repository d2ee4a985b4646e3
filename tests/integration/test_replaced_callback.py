"""A ReasoningCallback replaced in `litellm.callbacks` stays in LiteLLM's internal event lists,
so LiteLLM still calls its hooks: it must leave the calls of the instance that replaced it
alone. Before, the replaced instance marked the new instance's call as sent in
`log_pre_api_call`, and the new instance took its own first attempt for a retry: every call
rendered twice (a second store read on LiteLLM's thread, every figure counted twice)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import litellm
import pytest
from conftest import settled
from test_healing import SIG, _claude, _loop_with_a_revoked_signature, _sent_with
from test_sdk import CALLS, _dropped, call, tool_loop_replies

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.testing.anthropic_upstream import AnthropicUpstream
from litellm_reasoning.testing.upstream import Reply, Upstream

Pair = tuple[ReasoningCallback, ReasoningCallback]
"""(the replaced instance, the one registered now)."""


@pytest.fixture
async def replaced(upstream: Upstream) -> AsyncIterator[Pair]:
    """(the replaced instance, the one registered now): the first served a call, so LiteLLM
    holds it in its event lists, then an application put a new one in `litellm.callbacks`."""
    litellm.logging_callback_manager._reset_all_callbacks()
    first = ReasoningCallback()
    litellm.callbacks = [first]
    warm = f"warm-{uuid.uuid4().hex[:8]}"
    upstream.script(warm, Reply(message={"content": "hi", "reasoning_content": "r"}))
    await call("acompletion", upstream, warm, [{"role": "user", "content": "hi"}])
    await settled(first)  # its figures settle before the test reads them
    second = ReasoningCallback()
    litellm.callbacks = [second]  # without LiteLLM's reset, as an application would
    yield first, second
    litellm.logging_callback_manager._reset_all_callbacks()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_replaced_callback_leaves_its_successors_calls_alone(
    how: str,
    stream: bool,
    upstream: Upstream,
    replaced: Pair,
) -> None:
    first, second = replaced
    assert first in litellm.input_callback  # LiteLLM still calls it
    first_stats = dict(first.stats)
    model = f"loop-{uuid.uuid4().hex[:8]}"
    call_id = "call_" + uuid.uuid4().hex
    upstream.script(model, *tool_loop_replies(call_id))
    messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
    reply = await call(how, upstream, model, messages, stream=stream)
    messages += [_dropped(reply), {"role": "tool", "tool_call_id": call_id, "content": "x"}]
    await call(how, upstream, model, messages, stream=stream)

    wire = upstream.bodies(model)[1]["messages"]
    assert wire[1]["reasoning_content"] == "Read a.py before editing."
    assert second.stats["restored"] == 1  # rendered once (2 before the fix)
    sent = Reasoning(parts=(ReasoningPart(text="Read a.py before editing."),))
    assert second.stats["reasoning_tokens_sent"] == second.engine.count_tokens(sent)
    assert dict(first.stats) == first_stats  # the replaced instance did nothing


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_a_refusal_is_healed_by_the_instance_that_made_the_call(
    how: str, replaced: Pair
) -> None:
    """Claude refuses a signature the registered instance restored: that instance heals it
    once; the replaced one, which LiteLLM also hands the failure, neither heals nor evicts."""
    first, second = replaced
    model = f"claude-sonnet-4-5-replaced-{how}"
    with AnthropicUpstream(strict=True) as claude:
        messages = await _loop_with_a_revoked_signature(how, model, claude, stream=False)
        with pytest.raises(litellm.BadRequestError, match="Invalid `signature`"):
            await _claude(how, model, claude, messages, stream=False)
        answer = await _claude(how, model, claude, messages, stream=False)  # the resend
        assert answer.content == "a.py holds one line."
        bodies = claude.bodies(model)
    assert _sent_with(bodies, SIG) == 1, "the refused signature reached Claude twice"
    assert second.stats["refusals_healed"] == 1
    assert first.stats["refusals_healed"] == 0
    assert len(first.engine.refused) == 0
