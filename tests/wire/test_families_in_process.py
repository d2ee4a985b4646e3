"""Every provider family in process, dict in and dict out: the conformance cases, and the
recorded Responses tool loops.

The cases of `conformance/*.json` run through the callback's own hooks with the dicts LiteLLM
hands them (the deployment hook's kwargs, a reply as LiteLLM's `ModelResponse`), with no server
and no LiteLLM request: each reply is captured, the client drops (or keeps) its reasoning, and
the messages the hook hands LiteLLM for the next request are compared with the case's `expect`.
What LiteLLM's translation then does to them (and every call shape: sync, streamed, Router,
proxy) is `test_conformance.py`'s end-to-end matrix; this module is the fast per-family check,
run once.

Chat-shaped families (`openai_chat` and its variants, Mistral, OpenRouter) are compared as the
conformance runner compares the wire. Claude's cases name the Anthropic wire (and run again
with the model on Bedrock and Vertex AI); the hook hands
LiteLLM chat messages, so each assistant message's `thinking_blocks` is compared with the
thinking blocks of the expected wire message (where they stand among its content is laid out
after LiteLLM's translation: end to end only). Gemini's cases start from Gemini's own reply
parts, which only LiteLLM's response translation turns into chat messages: end to end only.

The Responses family (`openai_responses`) has no conformance JSON: its recorded tool loops run
here the same way, through the `responses` entry point (each reply as LiteLLM's
`ResponsesAPIResponse` of the recorded JSON), against what the recorded client sent. So does
Claude's recorded tool loop through `/v1/messages` (`anthropic_messages`: the Anthropic body
in, the API's JSON reply through the deployment's success hook, as LiteLLM hands it).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from types import SimpleNamespace
from typing import Any

import litellm
import pytest
from conftest import register
from paths import REPO
from test_responses_cassettes import ALL as RESPONSES_RECORDINGS
from test_responses_cassettes import _load, dropping_input, expected_input, recorded_output, script

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.cli import conformance_wires as wires
from litellm_reasoning.cli.conformance import DEFAULT_MODEL, Case, compare, load_cases
from litellm_reasoning.core.formats.blocks import without_reasoning_blocks
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.wire import get_dialect

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

API_BASE = "http://127.0.0.1:9/v1"
"""A local deployment's address (as the end-to-end runner's servers): nothing is sent to it."""

THINKING = ("thinking", "redacted_thinking")


def _family(case: Case) -> str:
    """The dialect the case's target resolves to (its provider family's)."""
    raw = case.raw
    provider, model = str(raw.get("model") or DEFAULT_MODEL).split("/", 1)
    overrides = ReasoningCallback(dialects=raw.get("dialects"), policies=raw.get("policies"))
    target = resolve_target(
        provider,
        model,
        API_BASE,
        has_tools=bool(raw.get("tools")),
        overrides=overrides.overrides,
        dialect_of=get_dialect,
    )
    return target.dialect.name


CLOUDS = ("bedrock/us.anthropic.", "vertex_ai/")
"""Claude's cases run again with the model on Bedrock and on Vertex AI (their own dialects:
signatures of their own platform)."""


def _on(case: Case, prefix: str) -> Case:
    model = prefix + str(case.raw["model"]).split("/", 1)[1]
    return dataclasses.replace(case, raw={**case.raw, "model": model})


CASES = [c for c in load_cases([REPO / "conformance"]) if c.raw.get("wire") != "gemini"]
CASES += [_on(c, cloud) for c in CASES if c.raw.get("wire") == "anthropic" for cloud in CLOUDS]
RUNS = [
    pytest.param(case, client, id=f"{_family(case)}-{case.name}-{client}")
    for case in CASES
    for client in case.raw.get("clients") or ("drops", "keeps")
]


def _hook_kwargs(model: str, params: dict[str, Any], **request: Any) -> dict[str, Any]:
    """What LiteLLM hands `async_pre_call_deployment_hook`: the request's `params` (less what
    the call names itself) and `request` fields, the deployment's model and key, the call's id
    and its logging object (where the callback keeps the call's state)."""
    kwargs = {k: v for k, v in params.items() if k not in ("model", "stream", *request)}
    kwargs.update(
        request,
        model=model,
        api_key="k",
        litellm_call_id=str(uuid.uuid4()),
        litellm_logging_obj=SimpleNamespace(model_call_details={}),
    )
    return kwargs


def _details(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's logging details (what LiteLLM hands the success and failure events)."""
    details: dict[str, Any] = kwargs["litellm_logging_obj"].model_call_details
    return details


def _no_reply(callback: ReasoningCallback, kwargs: dict[str, Any]) -> None:
    """No reply follows: the call ends as a failed one would, closing its capture."""
    callback.log_failure_event(_details(kwargs), None, None, None)


def _chat_kwargs(model: str, messages: list[Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The hook's kwargs for an `acompletion` of a conformance case."""
    tools = {"tools": raw["tools"]} if raw.get("tools") else {}
    return _hook_kwargs(
        model, raw.get("params") or {}, api_base=API_BASE, messages=messages, **tools
    )


def _reply(message: dict[str, Any], anthropic: bool) -> dict[str, Any]:
    """The assistant message LiteLLM makes of the case's reply: `reasoning_content` for a chat
    API; for Claude, its thinking blocks beside the text and tool calls, as LiteLLM's Anthropic
    translation gives them."""
    if not anthropic:
        return dict(wires.reply_for(message).message)
    blocks = wires.anthropic_reply_for(message).content
    thinking = [b for b in blocks if b.get("type") in THINKING]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    reply: dict[str, Any] = {"role": "assistant", "content": text or None}
    if thinking:
        reply["thinking_blocks"] = thinking
        reply["reasoning_content"] = "".join(b.get("thinking", "") for b in thinking)
    if message.get("tool_calls"):
        reply["tool_calls"] = message["tool_calls"]
    return reply


async def _sent(case: Case, client: str) -> list[Any]:
    """The messages the hook hands LiteLLM for the case's last request."""
    raw = case.raw
    model = str(raw.get("model") or DEFAULT_MODEL)
    anthropic = raw.get("wire") == "anthropic"
    callback = register(
        ReasoningCallback(
            dialects=raw.get("dialects"),
            policies=raw.get("policies"),
            max_reasoning_tokens=raw.get("max_reasoning_tokens"),
        )
    )
    history: list[dict[str, Any]] = []
    for message in raw["messages"]:
        if client == "drops" and message.get("role") == "assistant":
            kwargs = _chat_kwargs(model, list(history), raw)
            await callback.async_pre_call_deployment_hook(kwargs, "acompletion")
            response = litellm.ModelResponse(
                choices=[
                    {"index": 0, "finish_reason": "stop", "message": _reply(message, anthropic)}
                ],
                model=model.split("/", 1)[1],
            )
            await callback.async_log_success_event(
                _details(kwargs), response, time.time(), time.time()
            )
        history.append(wires.client_message(message, keeps=client == "keeps"))
    assert callback.open_captures == 0  # every reply captured
    kwargs = _chat_kwargs(model, history, raw)
    out = await callback.async_pre_call_deployment_hook(kwargs, "acompletion")
    _no_reply(callback, kwargs)
    litellm.logging_callback_manager._reset_all_callbacks()
    return list((out or kwargs)["messages"])


def _thinking_by_assistant_message(messages: list[Any], *, wire: bool) -> list[list[Any]]:
    """Each assistant message's thinking blocks, in order: from the Anthropic wire's content,
    or from a chat message's `thinking_blocks`."""
    out = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        blocks = message.get("content") if wire else message.get("thinking_blocks")
        out.append([b for b in blocks or () if isinstance(b, dict) and b.get("type") in THINKING])
    return out


@pytest.mark.parametrize(("case", "client"), RUNS)
async def test_case_in_process(case: Case, client: str) -> None:
    sent = await _sent(case, client)
    assert not any("turn" in m for m in sent if isinstance(m, dict))
    if case.raw.get("wire") == "anthropic":
        expected = _thinking_by_assistant_message(case.raw["expect"], wire=True)
        assert _thinking_by_assistant_message(sent, wire=False) == expected
    else:
        assert compare(sent, case.raw["expect"]) == ""


def test_every_family_with_a_case_runs_here() -> None:
    """The chat-shaped families and Claude's (Anthropic, Bedrock, Vertex), each with cases (a
    case file that stops naming a family, or a family whose cases stop running here, fails
    this)."""
    families = {_family(case) for case in CASES}
    assert families >= {
        "anthropic",
        "anthropic_bedrock",
        "anthropic_vertex",
        "mistral",
        "no_reasoning",
        "openai_chat",
        "openai_chat_reasoning",
        "openai_chat_required",
        "openrouter_anthropic",
    }


def test_a_dropped_capture_fails_the_comparison() -> None:
    """The comparison sees a missing restore: the seed's tool loop with nothing captured
    sends its tool-call messages without reasoning."""
    (seed,) = [c for c in CASES if c.name == "seed-reasoning#3"]
    history = [wires.client_message(m, keeps=False) for m in seed.raw["messages"]]
    assert "reasoning_content=None" in compare(history, seed.raw["expect"])


def _responses_kwargs(name: str, k: int, items: list[Any]) -> dict[str, Any]:
    """The hook's kwargs for request `k` of a recorded `aresponses` loop."""
    body = script(name)["requests"][k]["body"]
    return _hook_kwargs(f"openai/{body['model']}", body, input=items)


@pytest.mark.parametrize("name", RESPONSES_RECORDINGS)
async def test_responses_recording_in_process(name: str) -> None:
    """The recorded reply's reasoning items go back before the items they preceded, byte for
    byte, for a client that dropped them: the input equals what the recorded client sent."""
    callback = register(ReasoningCallback())
    first = _responses_kwargs(name, 0, script(name)["requests"][0]["body"]["input"])
    await callback.async_pre_call_deployment_hook(first, "aresponses")
    recorded = _load(name)["interactions"][0]["response"]["body"]["string"]
    reply = json.loads(recorded) if recorded.lstrip().startswith("{") else {}
    reply.setdefault("id", "resp_recorded")
    reply.setdefault("created_at", 0)
    reply.setdefault("model", script(name)["requests"][0]["body"]["model"])
    # A stream's items as its `response.output_item.done` events carried them.
    reply.update(object="response", status="completed", output=recorded_output(name, 0))
    response = litellm.ResponsesAPIResponse(**reply)
    await callback.async_log_success_event(_details(first), response, time.time(), time.time())
    assert callback.open_captures == 0
    second = _responses_kwargs(name, 1, dropping_input(name, 1))
    out = await callback.async_pre_call_deployment_hook(second, "aresponses")
    _no_reply(callback, second)
    litellm.logging_callback_manager._reset_all_callbacks()
    assert (out or second)["input"] == expected_input(name, 1, rs_ids=True)


def _recorded_exchanges(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A recording's (request body, reply JSON) pairs, in order."""
    out = []
    for interaction in _load(name)["interactions"]:
        body = interaction["request"]["body"]
        body = json.loads(body) if isinstance(body, str) else body
        out.append((body, json.loads(interaction["response"]["body"]["string"])))
    return out


def _without_thinking(messages: list[Any]) -> list[Any]:
    """Anthropic-format messages as a client that drops thinking blocks sends them back."""
    return [without_reasoning_blocks(m) if m.get("role") == "assistant" else m for m in messages]


async def test_messages_recording_in_process() -> None:
    """Claude's recorded tool loop through `/v1/messages`: the signed thinking block the client
    dropped goes back first in its message, byte for byte (the request equals what the recorded
    client sent)."""
    callback = register(ReasoningCallback())
    sent = []
    for step, (body, reply) in enumerate(_recorded_exchanges("anthropic_tool_loop")):
        messages = body["messages"] if step == 0 else _without_thinking(body["messages"])
        kwargs = _hook_kwargs(f"anthropic/{body['model']}", body, messages=messages)
        out = await callback.async_pre_call_deployment_hook(kwargs, "anthropic_messages")
        sent.append(((out or kwargs)["messages"], body["messages"]))
        await callback.async_post_call_success_deployment_hook(kwargs, reply, "anthropic_messages")
    litellm.logging_callback_manager._reset_all_callbacks()
    assert callback.open_captures == 0
    assert len(sent) == 2
    assert all(got == recorded for got, recorded in sent)
    assert callback.stats["restored"] == 1
