"""Real Gemini recordings (cassettes/gemini_*.yaml) replayed through real LiteLLM with the
callback, for a client that keeps only role, content and tool calls (ids verbatim).

Expected signatures come from the recorded bodies: the reply Gemini sent and, where the recorded
client sent it back, its next request (compared as bytes: the recorded client re-sent them in
URL-safe base64). `acompletion` and `completion`, streamed as recorded.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from cassette_utils import replay
from clients import dropping_client
from conftest import register, settled
from paths import REPO

from litellm_reasoning import ReasoningCallback

CASSETTES = REPO / "cassettes"
Json = dict[str, Any]


def as_bytes(signature: str) -> bytes:
    normal = signature.replace("-", "+").replace("_", "/")
    return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)


def script(name: str) -> Json:
    data: Json = json.loads((CASSETTES / "scripts" / f"{name}.json").read_text(encoding="utf-8"))
    return data


def recorded_replies(name: str) -> list[list[Json]]:
    """Each recorded reply's parts (SSE chunks joined), straight from the cassette."""
    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    out: list[list[Json]] = []
    for item in raw["interactions"]:
        body = item["response"]["body"]["string"]
        payloads = (
            [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]
            if body.lstrip().startswith("data:")
            else [json.loads(body)]
        )
        out.append([p for pl in payloads for p in pl["candidates"][0]["content"]["parts"]])
    return out


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


script_api_base = "https://generativelanguage.googleapis.com/v1beta"
"""`api_base` of every Gemini script (the recordings call v1beta)."""


async def send(how: str, body: Json) -> Any:
    kwargs: Json = {
        "model": f"gemini/{body['model']}",
        "messages": body["messages"],
        "api_key": "replay-without-a-key",
        "api_base": script_api_base,
        **{k: body[k] for k in ("tools", "stream", "thinking") if k in body},
    }
    stream = bool(kwargs.get("stream"))

    def assemble(chunks: list[Any]) -> Any:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return built.choices[0].message

    if how == "acompletion":
        response = await litellm.acompletion(**kwargs)
        return assemble([c async for c in response]) if stream else response.choices[0].message

    def run() -> Any:
        response = litellm.completion(**kwargs)
        return assemble(list(response)) if stream else response.choices[0].message

    return await asyncio.to_thread(run)


def dropped(message: Any) -> Json:
    """What a client that keeps role, content and tool calls (ids verbatim) sends back."""
    return dropping_client(message)


def model_parts(body: Json) -> list[list[Json]]:
    return [c["parts"] for c in body["contents"] if c.get("role") == "model"]


def signature_of(parts: list[Json]) -> list[tuple[str, bytes]]:
    kinds = []
    for part in parts:
        if "thoughtSignature" in part:
            kind = "call" if ("functionCall" in part or "function_call" in part) else "text"
            kinds.append((kind, as_bytes(part["thoughtSignature"])))
    return kinds


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_streamed_call_signature_goes_back_byte_exact(
    callback: ReasoningCallback, how: str
) -> None:
    name = "gemini_stream_tool_call"
    plan = script(name)
    native_next = plan["requests"][1]["native"]
    with replay(name) as wire:
        first = await send(how, plan["requests"][0]["body"])
        assistant = dropped(first)
        messages = [
            *plan["requests"][0]["body"]["messages"],
            assistant,
            {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "Mexico"},
        ]
        await send(how, {**plan["requests"][1]["body"], "messages": messages})
    (reply_call,) = [p for p in recorded_replies(name)[0] if "functionCall" in p]
    (sent_step,) = model_parts(wire.bodies[1])
    (recorded_step,) = model_parts(native_next)
    expected = as_bytes(reply_call["thoughtSignature"])
    assert signature_of(recorded_step) == [("call", expected)]  # the recording agrees
    assert signature_of(sent_step) == [("call", expected)]
    assert callback.stats["restored"] == 1, sorted(callback.stats.items())


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_new_question_sends_no_earlier_thought_or_signature(
    callback: ReasoningCallback, how: str
) -> None:
    """The recorded client re-sent turn 1's thought part and signature with its new question;
    only the current turn is validated, so the callback sends neither."""
    name = "gemini_thinking_part"
    plan = script(name)
    with replay(name) as wire:
        first = await send(how, plan["requests"][0]["body"])
        messages = [
            *plan["requests"][0]["body"]["messages"],
            dropped(first),
            plan["requests"][1]["body"]["messages"][-1],
        ]
        await send(how, {**plan["requests"][1]["body"], "messages": messages})
    reply = recorded_replies(name)[0]
    assert any(p.get("thought") for p in reply) and any("thoughtSignature" in p for p in reply)
    await settled(callback)
    assert callback.stats["captured"] == 2  # both recorded replies carry thoughts + signatures
    (turn1,) = model_parts(wire.bodies[1])
    assert not any(p.get("thought") for p in turn1)
    assert signature_of(turn1) == []
    (recorded_turn1,) = model_parts(plan["requests"][1]["native"])
    assert [p["text"] for p in turn1] == [p["text"] for p in recorded_turn1 if not p.get("thought")]


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_call_another_model_made_gets_the_recorded_dummy(
    callback: ReasoningCallback, how: str
) -> None:
    """OpenAI made the call; the client dropped everything but role/content/tool calls. The
    recorded client sent the dummy signature on it, and so does the callback."""
    name = "gemini_after_other_model"
    plan = script(name)
    body = plan["requests"][0]["body"]
    messages = [
        {k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id")}
        for m in body["messages"]
    ]
    for message in messages:
        for call in message.get("tool_calls") or ():
            call.pop("provider_specific_fields", None)
    with replay(name) as wire:
        await send(how, {**body, "messages": messages})
    (sent_step,) = model_parts(wire.bodies[0])
    (recorded_step,) = model_parts(plan["requests"][0]["native"])
    assert signature_of(sent_step) == signature_of(recorded_step)
    assert signature_of(sent_step) == [("call", b"context_engineering_is_the_way_to_go")]
    assert callback.stats["dummy_signatures"] == 1


def signed_part(reply: list[Json]) -> Json:
    """The one part of a recorded reply that carries a signature."""
    (part,) = [p for p in reply if "thoughtSignature" in p]
    return part


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_trailing_signature_only_part_goes_back_in_turn_not_after_it(
    callback: ReasoningCallback, how: str
) -> None:
    """Gemini 3 Pro streamed an answer with no thought text and its signature alone on a
    trailing empty-text part. A `turn: false` note keeps the turn open: the signature goes back
    with the answer text. A new question starts a new turn: Gemini 3 (current turn only)
    validates none of the earlier one, so no signature goes."""
    name = "gemini_signature_only_stream"
    plan = script(name)
    with replay(name) as wire:
        first = await send(how, plan["requests"][0]["body"])
        messages = [
            *plan["requests"][0]["body"]["messages"],
            dropped(first),
            plan["requests"][1]["body"]["messages"][-1],
        ]
        second = await send(how, {**plan["requests"][1]["body"], "messages": messages})
        messages += [dropped(second), plan["requests"][2]["body"]["messages"][-1]]
        await send(how, {**plan["requests"][2]["body"], "messages": messages})
    reply = recorded_replies(name)[0]
    signed = signed_part(reply)
    assert signed["text"] == "" and not any(p.get("thought") for p in reply)  # as recorded
    expected = as_bytes(signed["thoughtSignature"])
    await settled(callback)
    assert callback.stats["captured"] == 1  # only the recorded reply is signed

    note_request = wire.bodies[1]
    (turn1,) = model_parts(note_request)
    assert "".join(p.get("text", "") for p in turn1) == "".join(p["text"] for p in reply)
    assert signature_of(turn1) == [("text", expected)]
    assert not any(p.get("thought") for p in turn1)
    assert note_request["contents"][-1] == {"role": "user", "parts": [{"text": "Spell it out."}]}
    assert "turn" not in json.dumps(note_request)

    new_turn_request = wire.bodies[2]
    assert len(model_parts(new_turn_request)) == 2
    for parts in model_parts(new_turn_request):
        assert signature_of(parts) == []
        assert not any(p.get("thought") for p in parts)
    assert new_turn_request["contents"][-1]["parts"] == [{"text": "And in 'raspberry'?"}]


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_gemini_35_new_turn_still_sends_earlier_thought_and_signature(
    callback: ReasoningCallback, how: str
) -> None:
    """Gemini 3.5 Flash streamed thought parts, the answer, and its signature alone on a trailing
    empty-text part. Gemini 3.5+ keeps earlier turns' thinking "all or none" (provider rules
    §3 (c), model table `all_turns`): after a new user question the earlier turn still carries
    its thought text and the signature bytes."""
    name = "gemini_35_thoughts_stream"
    plan = script(name)
    with replay(name) as wire:
        first = await send(how, plan["requests"][0]["body"])
        messages = [
            *plan["requests"][0]["body"]["messages"],
            dropped(first),
            plan["requests"][1]["body"]["messages"][-1],
        ]
        await send(how, {**plan["requests"][1]["body"], "messages": messages})
    # asked for thoughts as recorded (LiteLLM drops the recorded budget on Gemini 3+ models)
    assert wire.bodies[0]["generationConfig"]["thinkingConfig"]["includeThoughts"] is True
    reply = recorded_replies(name)[0]
    signed = signed_part(reply)
    assert signed["text"] == "" and not signed.get("thought")  # as recorded
    thought = "".join(p["text"] for p in reply if p.get("thought"))
    answer = "".join(p["text"] for p in reply if not p.get("thought"))
    assert thought and answer
    await settled(callback)
    assert callback.stats["captured"] == 1

    new_turn_request = wire.bodies[1]
    (turn1,) = model_parts(new_turn_request)
    assert [p for p in turn1 if p.get("thought")] == [{"thought": True, "text": thought}]
    assert "".join(p.get("text", "") for p in turn1 if not p.get("thought")) == answer
    assert signature_of(turn1) == [("text", as_bytes(signed["thoughtSignature"]))]
    assert new_turn_request["contents"][-1]["parts"] == [{"text": "Now a shorter one, please."}]
