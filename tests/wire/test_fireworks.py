"""Kimi, DeepSeek and Qwen served by Fireworks (`fireworks_ai/`): each family's own rule for
`reasoning_content`, which LiteLLM passes through to Fireworks (measured on 1.106.12, 1.108.7
and 1.110.2: it is not removed). A client that drops reasoning gets it back where the family
requires it; the server refuses like Kimi and DeepSeek do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import tool_loop_and_new_turn, tool_loop_first_step
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.refusals import deepseek_reasoning_required, kimi_reasoning_required
from litellm_reasoning.testing.upstream import Upstream

CALL = {"id": "functions.f:0", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=5.0))
    litellm.logging_callback_manager._reset_all_callbacks()


@pytest.mark.parametrize("how", ["acompletion", "completion"])
@pytest.mark.parametrize(
    ("model", "refusal"),
    [
        ("accounts/fireworks/models/kimi-k2p6", kimi_reasoning_required),
        ("accounts/fireworks/models/kimi-k3", kimi_reasoning_required),
        ("accounts/fireworks/models/deepseek-v4-pro", deepseek_reasoning_required),
    ],
)
async def test_a_dropping_client_completes_a_tool_loop_and_a_new_turn(
    callback: ReasoningCallback, how: str, model: str, refusal: Any
) -> None:
    """Turn 1 calls a tool, turn 2 asks again: both families check every earlier tool-call
    message, so its reasoning goes back in turn 2 too."""
    with Upstream(refuse=[refusal]) as fireworks:
        bodies = await tool_loop_and_new_turn(how, "fireworks_ai", model, fireworks, CALL)
    assert fireworks.refusals == []
    assert bodies[1]["messages"][1]["reasoning_content"] == "Call f first."
    assert bodies[2]["messages"][1]["reasoning_content"] == "Call f first."


async def test_without_the_rows_fireworks_refuses_the_dropping_client() -> None:
    """The control: Fireworks passed through (as before these rows) answers the tool loop's
    next request with Kimi's 400."""
    model = "accounts/fireworks/models/kimi-k2p6"
    register(ReasoningCallback(dialects={"fireworks_ai/*": "passthrough"}))
    try:
        with Upstream(refuse=[kimi_reasoning_required]) as fireworks:
            params, messages = await tool_loop_first_step("fireworks_ai", model, fireworks, CALL)
            with pytest.raises(litellm.BadRequestError, match="reasoning_content is missing"):
                await litellm.acompletion(messages=messages, **params)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
