"""The one request-side fallback (`integration.fallback.fail_open`), for every entry point: a
failure anywhere inside a format's flow lets the request through exactly as the client sent
it less `turn`, counted and said once. The failure here is an operator's token counter that
breaks (what the budget calls on the reasoning a request carries), inside each format's limits
pass."""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from typing import Any

import litellm
import pytest

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning

THOUGHT = {"type": "thinking", "thinking": "Read a.py first.", "signature": "sig"}
CASES: dict[str, tuple[str, str, list[Any]]] = {
    "chat": (
        "acompletion",
        "deepseek/deepseek-reasoner",
        [
            {"role": "user", "content": "Fix a.py", "turn": True},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Read a.py first.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
            {"role": "user", "content": "(a note)", "turn": False},
        ],
    ),
    "messages": (
        "anthropic_messages",
        "anthropic/claude-sonnet-4-5",
        [
            {"role": "user", "content": "Fix a.py", "turn": True},
            {
                "role": "assistant",
                "content": [
                    THOUGHT,
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
                "turn": False,
            },
        ],
    ),
    "responses": (
        "aresponses",
        "openai/gpt-5",
        [
            {"role": "user", "content": "Fix a.py", "turn": True},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "x = 1"},
        ],
    ),
}


def _without_turn(items: list[Any]) -> list[Any]:
    return [{k: v for k, v in item.items() if k != "turn"} for item in items]


@pytest.mark.parametrize("entry", sorted(CASES))
def test_a_failure_inside_any_formats_flow_lets_the_request_through_less_turn(
    entry: str, caplog: pytest.LogCaptureFixture
) -> None:
    kind, model, sent = CASES[entry]
    calls: list[Reasoning] = []

    def broken_counter(reasoning: Reasoning) -> int:
        calls.append(reasoning)
        raise RuntimeError("the operator's token counter broke")

    callback = ReasoningCallback(max_reasoning_tokens=10, count_reasoning_tokens=broken_counter)
    litellm.callbacks = [callback]
    field = "input" if entry == "responses" else "messages"
    kwargs: dict[str, Any] = {
        "model": model,
        field: copy.deepcopy(sent),
        "litellm_call_id": str(uuid.uuid4()),
        "api_base": "http://127.0.0.1:9",
    }
    try:
        with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
            out = asyncio.run(callback.async_pre_call_deployment_hook(kwargs, kind))
    finally:
        litellm.callbacks = []
    assert calls, "the flow never reached the limits pass: the test proves nothing"
    assert out is not None and out[field] == _without_turn(sent)
    assert callback.stats["errors"] == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "the operator's token counter broke" in warnings[0]
    assert "goes through unchanged except for `turn`" in warnings[0]


def test_the_other_fallback_reports_a_failure_once_and_lets_only_base_exceptions_through() -> None:
    """`Contained`, the fallback of every hook with no request to let through (the reply side,
    LiteLLM functions patched, reporting): the failure goes to `fail` once and no further; a
    cancellation or an interrupt is not a failure of the callback and goes on."""
    from litellm_reasoning.integration.fallback import Contained

    failures: list[tuple[str, BaseException]] = []
    went_on = False
    with Contained(lambda where, exc: failures.append((where, exc)), "capturing"):
        raise ValueError("broken reply")
    went_on = True
    assert went_on
    assert [(where, str(exc)) for where, exc in failures] == [("capturing", "broken reply")]
    with (
        pytest.raises(asyncio.CancelledError),
        Contained(lambda where, exc: failures.append((where, exc)), "capturing"),
    ):
        raise asyncio.CancelledError
    assert len(failures) == 1
