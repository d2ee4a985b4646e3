"""Every provider family in process, dict in and dict out: the conformance cases, and the
recordings.

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
after LiteLLM's translation: end to end only).

Families whose replies only LiteLLM's translation turns into chat messages (Gemini's parts,
Ollama's JSON, OpenRouter's and MiniMax's `reasoning_details`) run with LiteLLM's own provider
translation called in process: each reply's JSON through its `transform_response`, the hook's
messages through its request translation, compared with the case's `expect` or the recorded
request.

The Responses family (`openai_responses`) has no conformance JSON: its recorded tool loops run
here the same way, through the `responses` entry point (each reply as LiteLLM's
`ResponsesAPIResponse` of the recorded JSON), against what the recorded client sent. So does
Claude's recorded tool loop through `/v1/messages` (`anthropic_messages`: the Anthropic body
in, the API's JSON reply through the deployment's success hook, as LiteLLM hands it).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
import uuid
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import httpx
import litellm
import pytest
from conftest import register
from litellm.litellm_core_utils.litellm_logging import Logging
from litellm.llms.vertex_ai.gemini.transformation import (
    _gemini_convert_messages_with_history as gemini_contents,
)
from litellm.types.utils import LlmProviders
from litellm.utils import ProviderConfigManager
from paths import REPO
from provider_recordings import REASONING_FIELDS, Cassette, client_view
from test_minimax import CALL, DETAILS, SPLIT, TOOLS
from test_minimax import MODEL as MINIMAX
from test_responses_cassettes import ALL as RESPONSES_RECORDINGS
from test_responses_cassettes import _load, dropping_input, expected_input, recorded_output, script

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.cli import conformance_wires as wires
from litellm_reasoning.cli.conformance import DEFAULT_MODEL, Case, compare, load_cases
from litellm_reasoning.core.formats.blocks import without_reasoning_blocks
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.testing.gemini_upstream import response_json
from litellm_reasoning.wire import dialect_names, get_dialect

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

API_BASE = "http://127.0.0.1:9/v1"
"""A local deployment's address (as the end-to-end runner's servers): nothing is sent to it."""

THINKING = ("thinking", "redacted_thinking")


def _family_of(model: str, params: dict[str, Any], overrides: Any = ()) -> str:
    """The dialect a call of `model` (provider/name) with `params` resolves to (its provider
    family's), under the operator's `overrides`."""
    provider, name = model.split("/", 1)
    target = resolve_target(
        provider,
        name,
        API_BASE,
        has_tools=bool(params.get("tools")),
        overrides=overrides,
        dialect_of=get_dialect,
    )
    return target.dialect.name


def _family(case: Case) -> str:
    """The dialect a conformance case's target resolves to, under its own overrides."""
    raw = case.raw
    overrides = ReasoningCallback(dialects=raw.get("dialects"), policies=raw.get("policies"))
    return _family_of(str(raw.get("model") or DEFAULT_MODEL), raw, overrides.overrides)


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


def _hook_kwargs(
    model: str, params: dict[str, Any], logging_obj: Any = None, **request: Any
) -> dict[str, Any]:
    """What LiteLLM hands `async_pre_call_deployment_hook`: the request's `params` (less what
    the call names itself) and `request` fields, the deployment's model and key, the call's id
    and its logging object (where the callback keeps the call's state; a bare one unless
    LiteLLM's own translation reads it too)."""
    kwargs = {k: v for k, v in params.items() if k not in ("model", "stream", *request)}
    kwargs.update(
        request,
        model=model,
        api_key="k",
        litellm_call_id=str(uuid.uuid4()),
        litellm_logging_obj=logging_obj or SimpleNamespace(model_call_details={}),
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


# ------------------------------------------- families only LiteLLM's translation reads
#
# Gemini's replies are Gemini parts, Ollama's its own JSON, OpenRouter's and MiniMax's carry
# `reasoning_details`: what the callback is handed is what LiteLLM's translation makes of them.
# So here each reply is turned into LiteLLM's `ModelResponse` by LiteLLM's own provider
# translation (`transform_response` of the provider's JSON), and the hook's messages into the
# provider's wire by LiteLLM's own request translation, in process: no server, no HTTP.


def _logging_obj(model: str, messages: list[Any]) -> Any:
    """LiteLLM's own per-call logging object (its translation reads the call's params there)."""
    obj = Logging(model, messages, False, "acompletion", datetime.now(), str(uuid.uuid4()), "test")
    obj.update_environment_variables(litellm_params={}, optional_params={}, model=model)
    return obj


def _config(model: str) -> Any:
    provider, name = model.split("/", 1)
    return ProviderConfigManager.get_provider_chat_config(name, LlmProviders(provider))


def _wire(model: str, messages: list[Any]) -> list[Any]:
    """What LiteLLM's request translation sends the provider of `model` for `messages`: its
    `messages`, or Gemini's `contents`."""
    provider, name = model.split("/", 1)
    if provider in ("gemini", "vertex_ai"):
        return list(gemini_contents(messages=copy.deepcopy(messages), model=name))
    body = _config(model).transform_request(name, copy.deepcopy(messages), {}, {}, {})
    return list(body["messages"])


async def _translated_turn(
    callback: ReasoningCallback,
    model: str,
    messages: list[Any],
    params: dict[str, Any],
    reply_json: str | None,
) -> tuple[list[Any], Any]:
    """One call: the hook's messages as LiteLLM's translation puts them on the wire, and (for a
    `reply_json`) LiteLLM's reply message made of it by its own translation, captured."""
    kwargs = _hook_kwargs(
        model, params, _logging_obj(model, messages), api_base=API_BASE, messages=messages
    )
    out = await callback.async_pre_call_deployment_hook(kwargs, "acompletion")
    sent = list((out or kwargs)["messages"])
    if reply_json is None:
        _no_reply(callback, kwargs)
        return _wire(model, sent), None
    raw = httpx.Response(200, text=reply_json, request=httpx.Request("POST", API_BASE))
    response = _config(model).transform_response(
        model.split("/", 1)[1],
        raw,
        litellm.ModelResponse(),
        kwargs["litellm_logging_obj"],
        {},
        sent,
        {},
        {},
        None,
    )
    await callback.async_log_success_event(_details(kwargs), response, time.time(), time.time())
    return _wire(model, sent), response.choices[0].message


GEMINI_CASES = [c for c in load_cases([REPO / "conformance"]) if c.raw.get("wire") == "gemini"]
GEMINI_PLATFORMS = ("gemini/", "vertex_ai/")
"""Gemini's cases run on the Gemini API and again on Vertex AI (each its own dialect)."""


def _on_gemini(case: Case, prefix: str) -> str:
    """The case's model on the platform `prefix` names."""
    return prefix + str(case.raw["model"]).split("/", 1)[1]


GEMINI_RUNS = [
    pytest.param(case, prefix, client, id=f"{prefix.rstrip('/')}-{case.name}-{client}")
    for case in GEMINI_CASES
    for prefix in GEMINI_PLATFORMS
    for client in case.raw.get("clients") or ("drops", "keeps")
]


@pytest.mark.parametrize(("case", "prefix", "client"), GEMINI_RUNS)
async def test_gemini_case_in_process(case: Case, prefix: str, client: str) -> None:
    """Gemini's cases (the API's and Vertex AI's dialect): each reply's parts through LiteLLM's
    Gemini translation, the last request's `contents` compared with `expect`."""
    raw = case.raw
    model = _on_gemini(case, prefix)
    params = {**(raw.get("params") or {}), **({"tools": raw["tools"]} if raw.get("tools") else {})}
    callback = register(ReasoningCallback())
    history: list[dict[str, Any]] = []
    reply: dict[str, Any] = {}
    for message in raw["messages"]:
        if message.get("role") == "assistant":
            parts = json.dumps(response_json(model.split("/", 1)[1], list(message["parts"])))
            _, made = await _translated_turn(callback, model, list(history), params, parts)
            reply = made.model_dump()
            history.append(wires.gemini_client_message(reply, keeps=client == "keeps"))
        elif message.get("role") == "tool":
            answered = reply["tool_calls"][int(message.get("call", 0))]
            tool = {"role": "tool", "tool_call_id": answered["id"], "content": message["content"]}
            history.append(tool)
        else:
            history.append(wires.client_message(message, keeps=client == "keeps"))
    assert callback.open_captures == 0
    contents, _ = await _translated_turn(callback, model, history, params, None)
    litellm.logging_callback_manager._reset_all_callbacks()
    assert compare(wires.without_call_ids(contents), raw["expect"]) == ""


RECORDINGS = {
    "ollama_tool_call": "ollama_chat",
    "openrouter_claude_signed": "openrouter_anthropic",
    "openrouter_glm_text": "openrouter",
}
"""The non-streamed recordings of the families above (streams: end to end only), and the
dialect each one's target resolves to."""


def _reasoning_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k in REASONING_FIELDS}


@pytest.mark.parametrize("client", ["drops", "keeps"])
@pytest.mark.parametrize("name", list(RECORDINGS))
async def test_recording_in_process(name: str, client: str) -> None:
    """Each recorded request as its client sends it after LiteLLM's reply (kept whole or only
    role, content and tool calls), the replies made by LiteLLM's own translation of the
    recorded JSON: every assistant message reaches the wire with the reasoning fields, and only
    those, of the request the recording holds (the provider's own send-back format)."""
    cassette = Cassette.load(name)
    callback = register(ReasoningCallback())
    replies: list[Any] = []
    for k, request in enumerate(cassette.requests):
        body = copy.deepcopy(request["body"])
        for index, j in request["echoes"].items():
            body["messages"][int(index)] = client_view(replies[j], keep=client == "keeps")
        model = f"{cassette.provider}/{body['model']}"
        assert _family_of(model, body) == RECORDINGS[name]
        wire, reply = await _translated_turn(
            callback, model, body.pop("messages"), body, cassette.recorded_response(k)
        )
        replies.append(reply)
        recorded = cassette.recorded_request(k)["messages"]
        assert len(wire) == len(recorded)
        for sent, expected in zip(wire, recorded, strict=True):
            if expected.get("role") == "assistant":
                assert _reasoning_fields(sent) == _reasoning_fields(expected)
    litellm.logging_callback_manager._reset_all_callbacks()
    assert callback.open_captures == 0
    if client == "drops":  # the one reply the later request echoes
        assert callback.stats["restored"] == 1


async def test_minimax_in_process() -> None:
    """MiniMax with `reasoning_split`: the reply's `reasoning_details` (LiteLLM's MiniMax
    translation keeps them in `provider_specific_fields`) go back unmodified on the tool-call
    message, for the tool's result and again after a new question, though the client dropped
    them."""
    model = f"minimax/{MINIMAX}"
    assert _family_of(model, SPLIT) == "minimax"
    message = {
        "role": "assistant",
        "content": "",
        "reasoning_details": DETAILS,
        "tool_calls": [CALL],
    }
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    reply = {"id": "mm-1", "object": "chat.completion", "model": MINIMAX, "choices": [choice]}
    callback = register(ReasoningCallback())
    history: list[Any] = [{"role": "user", "content": "Use f."}]
    await _translated_turn(callback, model, list(history), SPLIT, json.dumps(reply))
    history += [
        {"role": "assistant", "content": "", "tool_calls": [CALL]},  # details dropped
        {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
    ]
    tool_result, _ = await _translated_turn(callback, model, list(history), SPLIT, None)
    history += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "And?"}]
    new_turn, _ = await _translated_turn(callback, model, list(history), SPLIT, None)
    litellm.logging_callback_manager._reset_all_callbacks()
    assert tool_result[1]["reasoning_details"] == DETAILS
    assert new_turn[1]["reasoning_details"] == DETAILS
    assert callback.stats["restored"] == 2


@pytest.mark.parametrize("client", ["drops", "keeps"])
async def test_passthrough_in_process(client: str) -> None:
    """A provider this package has no rules for (`together_ai/`): its assistant messages go
    exactly as the client sent them, reasoning or none; only `turn` is removed."""
    model = "together_ai/Qwen/Qwen3-235B-A22B-Thinking"
    tools = {"tools": TOOLS}
    assert _family_of(model, tools) == "passthrough"
    reply = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Call f.",
        "tool_calls": [CALL],
    }
    callback = register(ReasoningCallback())
    history: list[Any] = [{"role": "user", "content": "Use f."}]
    kwargs = _hook_kwargs(model, tools, api_base=API_BASE, messages=list(history))
    await callback.async_pre_call_deployment_hook(kwargs, "acompletion")
    response = litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "tool_calls", "message": reply}], model="q"
    )
    await callback.async_log_success_event(_details(kwargs), response, time.time(), time.time())
    kept = (
        reply if client == "keeps" else {k: v for k, v in reply.items() if k != "reasoning_content"}
    )
    history += [
        kept,
        {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
        {"role": "user", "content": "(a note)", "turn": False},
    ]
    expected = [*copy.deepcopy(history[:-1]), {"role": "user", "content": "(a note)"}]
    kwargs = _hook_kwargs(model, tools, api_base=API_BASE, messages=history)
    out = await callback.async_pre_call_deployment_hook(kwargs, "acompletion")
    _no_reply(callback, kwargs)
    litellm.logging_callback_manager._reset_all_callbacks()
    assert (out or kwargs)["messages"] == expected
    assert callback.stats["restored"] == 0


def test_every_family_runs_here_but_those_named() -> None:
    """Every dialect of the registry runs in process here but three, named with why (a family
    that stops running here, or a new one without an in-process test, fails this)."""
    families = {_family(case) for case in CASES}
    families |= {
        _family_of(_on_gemini(c, p), c.raw) for c in GEMINI_CASES for p in GEMINI_PLATFORMS
    }
    # MiniMax's and passthrough's tests assert their family; the Responses recordings' entry
    # point has the one Responses dialect
    families |= {"minimax", "passthrough", "openai_responses"}
    families |= set(RECORDINGS.values())
    end_to_end_only = {
        # Its records come only from a stream (the recording is one), which LiteLLM's stream
        # wrapper assembles: `test_providers_recordings.py`.
        "openrouter_openai",
        # No recording of Gemini through OpenRouter exists; its rendering is pure-tested
        # (`test_providers_core.py`).
        "openrouter_google",
        # Its blocks are put on the Anthropic body LiteLLM built (`log_pre_api_call`), after
        # the hook: `test_claude.py`'s third-party API tests.
        "anthropic_as_issued",
    }
    assert families == set(dialect_names()) - end_to_end_only
    assert not families & end_to_end_only
