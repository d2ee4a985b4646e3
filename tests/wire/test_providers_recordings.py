"""Ollama, OpenRouter, Mistral, Groq and Cerebras recordings replayed through real LiteLLM.

Each test plays one cassette (`cassettes/build_provider_cassettes.py`) from a local server: the
recorded reply, then the next request as a client sends it after LiteLLM's reply, keeping the
whole reply or only role, content and tool calls. Expectations come from the recordings: the raw
recorded replies, and the follow-up request the cassette holds (the recorded reply in the
provider's own send-back format), never from LiteLLM or the callback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from conftest import register
from provider_recordings import REASONING_FIELDS, Json, RecordingServer, play

from litellm_reasoning import ReasoningCallback

modes = pytest.mark.parametrize("mode", ["sync", "async"])
keeps_or_drops = pytest.mark.parametrize("keep", [True, False], ids=["keeps", "drops"])


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer() as up:
        yield up


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


def reasoning_keys(message: Json) -> set[str]:
    return set(message) & REASONING_FIELDS


def no_turn_anywhere(body: Json) -> bool:
    return all("turn" not in m for m in body["messages"])


# ---------------------------------------------------------------- Ollama


def _ndjson_thinking(body: str) -> str:
    lines = [json.loads(line) for line in body.split("\n") if line.strip()]
    return "".join((line.get("message") or {}).get("thinking") or "" for line in lines)


@modes
@keeps_or_drops
async def test_ollama_tool_call_sends_its_thinking_with_the_tool_result(
    mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """`ollama_chat/`: the recorded reply's `message.thinking` is on the tool-call message of
    the next request (the tool result), as Ollama's own `thinking` field, and nothing else."""
    played = await play("ollama_tool_call", mode, keep=keep, server=server)

    recorded = json.loads(played.cassette.recorded_response(0))["message"]
    assert played.paths == ["/api/chat", "/api/chat"]
    sent = played.assistant(1, 1)
    assert sent["thinking"] == recorded["thinking"]
    assert reasoning_keys(sent) == {"thinking"}
    assert [c["function"] for c in sent["tool_calls"]] == [
        {"name": "get_current_weather", "arguments": {"city": "Paris"}}
    ]
    # The cassette's follow-up request: what a client that keeps reasoning sends natively.
    assert played.cassette.recorded_request(1)["messages"][1]["thinking"] == sent["thinking"]
    assert callback.stats["restored"] == (0 if keep else 1)
    assert callback.stats["errors"] == 0


@modes
@keeps_or_drops
async def test_ollama_stream_thinking_reaches_the_next_request(
    mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """A streamed Ollama reply (`message.thinking` pieces, then content) continued by a
    `turn: false` note: the joined thinking is on the reply's message, `turn` is not sent."""
    played = await play("ollama_stream", mode, keep=keep, server=server)

    thinking = _ndjson_thinking(played.cassette.recorded_response(0))
    assert len(thinking) > 1000
    sent = played.assistant(1, 1)
    assert sent["thinking"] == thinking
    assert sent["content"] == "1\n2\n3\n4\n5"
    assert reasoning_keys(sent) == {"thinking"}
    assert no_turn_anywhere(played.wire[1])
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- OpenRouter


def _sse(body: str) -> list[Json]:
    return [
        json.loads(line[5:])
        for line in body.splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


def _expected_openrouter(played: Any) -> Json:
    """The assistant message the cassette's follow-up request sends (the recorded reply with
    its reasoning_details), which the wire must equal exactly."""
    expected: Json = played.cassette.recorded_request(1)["messages"][1]
    return expected


@modes
@keeps_or_drops
@pytest.mark.parametrize(
    "name", ["openrouter_claude_signed", "openrouter_glm_text", "openrouter_o3_encrypted_stream"]
)
async def test_openrouter_reasoning_details_go_back_unmodified(
    name: str, mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """OpenRouter: the reply's `reasoning_details` (a signed Claude text, an unsigned GLM text,
    an encrypted o3 item with its `rs_` id) are on the next request's assistant message exactly
    as recorded, top-level, with no other reasoning field."""
    played = await play(name, mode, keep=keep, server=server)

    sent = played.assistant(1, 1)
    expected = _expected_openrouter(played)
    assert sent == expected
    assert reasoning_keys(sent) == {"reasoning_details"}
    if name == "openrouter_claude_signed":
        raw = json.loads(played.cassette.recorded_response(0))["choices"][0]["message"]
        assert sent["reasoning_details"] == raw["reasoning_details"]
        assert sent["reasoning_details"][0]["signature"].startswith("ErcBCkgICBACGAIiQ")
    if name == "openrouter_o3_encrypted_stream":
        (item,) = sent["reasoning_details"]
        raw_items = [
            d
            for chunk in _sse(played.cassette.recorded_response(0))
            for d in chunk["choices"][0]["delta"].get("reasoning_details") or ()
        ]
        assert raw_items == [item]
        assert item["type"] == "reasoning.encrypted" and item["id"].startswith("rs_")
    assert no_turn_anywhere(played.wire[1])
    assert callback.stats["errors"] == 0


@modes
@keeps_or_drops
async def test_openrouter_stream_signature_arriving_later_is_merged(
    mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """A streamed Claude reply through OpenRouter: the text arrives in pieces and the signature
    in a later delta that LiteLLM never yields. The next request carries one merged item: the
    joined text, the signature, format and index as streamed."""
    played = await play("openrouter_claude_stream", mode, keep=keep, server=server)

    deltas = [
        d
        for chunk in _sse(played.cassette.recorded_response(0))
        for choice in chunk["choices"]
        for d in choice["delta"].get("reasoning_details") or ()
    ]
    signature = next(d["signature"] for d in deltas if d.get("signature"))
    text = "".join(d.get("text", "") for d in deltas)
    sent = played.assistant(1, 1)
    assert sent["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": text,
            "signature": signature,
            "format": "anthropic-claude-v1",
            "index": 0,
        }
    ]
    assert sent == _expected_openrouter(played)
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- Mistral


@modes
@keeps_or_drops
async def test_mistral_thinking_goes_back_as_a_closed_chunk(
    mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """Magistral's streamed thinking chunks: the next request's assistant message is the
    closed thinking chunk (pieces joined) then the text, and carries no other field (Mistral
    422s on unknown ones), on both LiteLLM versions."""
    played = await play("mistral_magistral_stream", mode, keep=keep, server=server)

    pieces = [
        item["text"]
        for chunk in _sse(played.cassette.recorded_response(0))
        for choice in chunk["choices"]
        if isinstance(choice["delta"].get("content"), list)
        for part in choice["delta"]["content"]
        if part["type"] == "thinking"
        for item in part["thinking"]
    ]
    sent = played.assistant(1, 1)
    expected = played.cassette.recorded_request(1)["messages"][1]
    assert sent == expected
    assert sent["content"][0] == {
        "type": "thinking",
        "thinking": [{"type": "text", "text": "".join(pieces)}],
        "closed": True,
    }
    assert set(sent) == {"role", "content"}
    assert no_turn_anywhere(played.wire[1])
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- Groq, Cerebras


@modes
@keeps_or_drops
async def test_groq_history_carries_no_reasoning_field(
    mode: str, keep: bool, server: RecordingServer, callback: ReasoningCallback
) -> None:
    """Groq: the recorded client re-sent its history without any reasoning field and Groq
    rejects them on messages; whatever the client keeps, none reaches the wire."""
    played = await play("groq_thinking_part", mode, keep=keep, server=server)

    recorded = played.cassette.recorded_request(1)
    assert [m["role"] for m in played.wire[1]["messages"]] == [
        m["role"] for m in recorded["messages"]
    ]
    for message in played.wire[1]["messages"]:
        assert reasoning_keys(message) == set()
    assert played.wire[1]["reasoning_format"] == "parsed"
    assert callback.stats["errors"] == 0


@modes
@keeps_or_drops
@pytest.mark.parametrize("policy", ["default", "all_turns"])
async def test_cerebras_sends_reasoning_as_recorded(
    mode: str, keep: bool, policy: str, server: RecordingServer
) -> None:
    """Cerebras reads `reasoning` (the recording sends it back on turn 2 and is accepted). With
    the default rule turn 2, a new question, carries none; with `all_turns` the wire body's
    messages equal the recorded request's exactly."""
    policies = {"cerebras/*": "all_turns"} if policy == "all_turns" else {}
    callback = register(ReasoningCallback(capture_wait_seconds=10.0, policies=policies))
    try:
        played = await play("cerebras_reasoning_multiturn", mode, keep=keep, server=server)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()

    recorded = played.cassette.recorded_request(1)["messages"]
    if policy == "all_turns":
        assert played.wire[1]["messages"] == recorded
    else:
        assert played.wire[1]["messages"][1] == {"role": "assistant", "content": "4."}
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- through the proxy


@pytest.mark.proxy
@pytest.mark.parametrize("name", ["openrouter_claude_stream", "mistral_magistral_stream"])
def test_proxy_stream_reasoning_reaches_the_next_request(
    name: str, server: RecordingServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The official `openai` client (it keeps only role and content of a stream) through the
    LiteLLM proxy: the recorded stream's reasoning is on the next request in the provider's
    own format (OpenRouter's merged signed detail, Mistral's closed chunk), exactly as the
    cassette's follow-up request has it."""
    import openai
    from provider_recordings import Cassette
    from proxy_utils import proxy_config, run_proxy

    cassette = Cassette.load(name)
    first = cassette.requests[0]["body"]
    config = proxy_config(
        [
            {
                "model_name": "group",
                "litellm_params": {
                    "model": f"{cassette.provider}/{first['model']}",
                    "api_base": server.base_url + "/v1",
                    "api_key": "k",
                },
            }
        ]
    )
    server.load(cassette.interactions)
    before = len(server.chat_bodies())
    settings = {"LITELLM_REASONING_STORE": "memory://"}
    with run_proxy(config, tmp_path_factory.mktemp("proxy"), env=settings) as proxy:
        client: Any = openai.OpenAI(base_url=proxy.base_url, api_key=proxy.master_key)
        history: list[Any] = [{"role": "user", "content": first["messages"][0]["content"]}]
        extra = first.get("extra_body") or {}
        content = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model="group", messages=history, stream=True, extra_body=extra
            )
            if chunk.choices
        )
        history += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": "Go on.", "turn": False},
        ]
        client.chat.completions.create(model="group", messages=history, extra_body=extra)
    wire = server.chat_bodies()[before:]
    assert len(wire) == 2
    assert wire[1]["messages"][1] == cassette.recorded_request(1)["messages"][1]
    assert no_turn_anywhere(wire[1])
