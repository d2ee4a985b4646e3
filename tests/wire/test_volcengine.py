"""Kimi, DeepSeek and GLM served by Volcano Engine Ark (`volcengine/`): each family's own rule
for `reasoning_content`, which LiteLLM's Volcengine route passes through to Ark (measured on
1.106.12, 1.108.7 and 1.110.2: it is not removed). Before these rows Volcengine had no row and
was passed through: a client that dropped reasoning met Kimi's and DeepSeek's 400 in a tool loop.
Model names as Ark lists them (`kimi-k2-5-260127`, `deepseek-v3-2-251201`, `glm-4-7-251222`)."""

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

CALL = {"id": "call_f_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=5.0))
    litellm.logging_callback_manager._reset_all_callbacks()


@pytest.mark.parametrize("how", ["acompletion", "completion"])
@pytest.mark.parametrize(
    ("model", "refusal"),
    [
        ("kimi-k2-5-260127", kimi_reasoning_required),
        ("deepseek-v3-2-251201", deepseek_reasoning_required),
    ],
)
async def test_a_dropping_client_completes_a_tool_loop_and_a_new_turn(
    callback: ReasoningCallback, how: str, model: str, refusal: Any
) -> None:
    """Both families check every earlier tool-call message, so its reasoning goes back in
    turn 2 too; the answer's reasoning (no tool call) goes back where the rule keeps it:
    DeepSeek with tools every turn's, Kimi only tool-call messages'."""
    with Upstream(refuse=[refusal]) as ark:
        bodies = await tool_loop_and_new_turn(how, "volcengine", model, ark, CALL)
    assert ark.refusals == []
    assert bodies[1]["messages"][1]["reasoning_content"] == "Call f first."
    assert bodies[2]["messages"][1]["reasoning_content"] == "Call f first."
    answer = bodies[2]["messages"][3]
    assert answer["content"] == "Done."
    if "deepseek" in model:
        assert answer["reasoning_content"] == "f answered."
    else:
        assert "reasoning_content" not in answer


async def test_glm_gets_its_reasoning_back_within_the_turn_only(
    callback: ReasoningCallback,
) -> None:
    """GLM's interleaved thinking: the tool loop's reasoning goes back inside the turn; a new
    turn goes without the earlier turn's."""
    with Upstream() as ark:
        bodies = await tool_loop_and_new_turn(
            "acompletion", "volcengine", "glm-4-7-251222", ark, CALL
        )
    assert bodies[1]["messages"][1]["reasoning_content"] == "Call f first."
    assert all("reasoning_content" not in m for m in bodies[2]["messages"])


async def test_without_the_rows_ark_refuses_the_dropping_client() -> None:
    """The control: Volcengine passed through (as before these rows) answers the tool loop's
    next request with Kimi's 400."""
    register(ReasoningCallback(dialects={"volcengine/*": "passthrough"}))
    try:
        with Upstream(refuse=[kimi_reasoning_required]) as ark:
            params, messages = await tool_loop_first_step(
                "volcengine", "kimi-k2-5-260127", ark, CALL
            )
            with pytest.raises(litellm.BadRequestError, match="reasoning_content is missing"):
                await litellm.acompletion(messages=messages, **params)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
