"""Gemini thought signatures (`gemini/`, `vertex_ai/` Gemini): capture, rendering, issuers, the
dummy signature, and end to end through real LiteLLM against a local Gemini API server, for
clients that keep only role, content and tool calls of each reply.

Expectations come from the provider rules (shared notes §3): a signature goes back on the part it
came on, byte for byte (either base64 alphabet: compared as bytes); the first function call of
every current-turn step is signed on Gemini 3+; earlier turns carry no thought part and no
signature Gemini issued; another provider's reasoning never reaches Gemini.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import dropping_client
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.extract import canonical_signature, reasoning_from_message
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.testing.gemini_upstream import GeminiReply, GeminiUpstream
from litellm_reasoning.testing.upstream import Reply, Upstream
from litellm_reasoning.wire import get_dialect
from litellm_reasoning.wire.gemini import DUMMY_SIGNATURE, requires_signed_calls, sign_current_steps

# A function-call signature as Gemini sent it (standard alphabet, `+` and `/`), from the
# pydantic-ai recording test_google_streaming_tool_call_thought_signature.yaml (its first 80 chars).
SIG_CALL = "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaKz7X+PIyTTqF+ZIQP"
SIG_TEXT = (
    "EqoeCqceAdHtim+cXhv3WM3Av2yBDu1t4su/bUCXEv2uoKmDxRFXBZaAr6vqPBbKwPmwyqPna9syVALkAlc5+NojqP1z"
)
SIG_LATE = "EpAICo0IAb4+9vuku3oDHR5EQSMfPm5IpmH06lgm"
LITELLM_PLACEHOLDER = base64.b64encode(b"skip_thought_signature_validator").decode()
"""What LiteLLM itself puts on an unsigned first call of every Gemini 3+ message."""
GEMINI3 = "gemini-3-pro-preview"
CALLS = ["acompletion", "completion"]


def as_bytes(signature: str) -> bytes:
    """Either base64 alphabet, as the bytes Gemini reads."""
    normal = signature.replace("-", "+").replace("_", "/")
    return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)


def fc(name: str, args: dict[str, Any] | None = None, sig: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args or {}}}
    if sig:
        part["thoughtSignature"] = sig
    return part


# ---------------------------------------------------------------- pure: capture and rendering


class TestCapture:
    def test_base64_alphabets_are_one_canonical_form(self) -> None:
        url_safe = SIG_CALL.replace("+", "-").replace("/", "_")
        assert canonical_signature(url_safe) == canonical_signature(SIG_CALL) == SIG_CALL
        assert as_bytes(url_safe) == as_bytes(SIG_CALL)
        assert canonical_signature("not base64!") == "not base64!"

    def test_reply_signatures_know_their_part(self) -> None:
        """A LiteLLM Gemini reply: psf thought_signatures lists every part's signature, calls'
        too; a call's signature is in its psf and in its id."""
        message = {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "think",
            "provider_specific_fields": {"thought_signatures": [SIG_TEXT, SIG_CALL]},
            "tool_calls": [
                {
                    "id": f"call_a__thought__{SIG_CALL}",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "provider_specific_fields": {"thought_signature": SIG_CALL},
                },
                {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        }
        reasoning = reasoning_from_message(message, provider="gemini")
        assert reasoning is not None and reasoning.text == "think"
        signed = [(p.data, p.details) for p in reasoning.parts if p.data]
        assert signed == [
            (SIG_TEXT, {"gemini": "text"}),
            (SIG_CALL, {"gemini": "tool_call", "index": 0, "id": "call_a"}),
        ]

    def test_an_id_alone_is_not_a_record(self) -> None:
        """A kept id must not stand for the whole record (the store's thought text would never
        be looked up); the dialect falls back to it on a store miss (tested below)."""
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c1__thought__{SIG_CALL}", "function": {"name": "f"}}],
        }
        assert reasoning_from_message(message) is None

    def test_claude_never_takes_a_gemini_signature(self) -> None:
        """Client-kept Gemini fields (no issuer known) sent to Claude: no thinking block."""
        message = {
            "role": "assistant",
            "content": "x",
            "provider_specific_fields": {"thought_signatures": [SIG_TEXT]},
        }
        own = reasoning_from_message(message)
        assert own is not None
        out = get_dialect("anthropic").render(message, own)
        assert "thinking_blocks" not in out and "provider_specific_fields" not in out


def gemini_record(provider: str = "gemini") -> Reasoning:
    return Reasoning(
        parts=(
            ReasoningPart(text="think"),
            ReasoningPart(data=SIG_TEXT, details={"gemini": "text"}),
            ReasoningPart(data=SIG_CALL, details={"gemini": "tool_call", "index": 0, "id": "c1"}),
        ),
        provider=provider,
    )


def history(call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "q1"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": "2"},
    ]


class TestDialect:
    def test_current_turn_gets_each_signature_on_its_part(self) -> None:
        out = render(
            history(), get_dialect("gemini"), TurnPolicy.CURRENT_TURN, {1: gemini_record()}
        )
        message = out.messages[1]
        assert message["reasoning_content"] == "think"
        assert message["provider_specific_fields"] == {"thought_signatures": [SIG_TEXT]}
        first, second = message["tool_calls"]
        assert first["provider_specific_fields"] == {"thought_signature": SIG_CALL}
        assert "provider_specific_fields" not in second  # parallel: only the first is signed
        assert out.restored == [1]

    def test_earlier_turn_carries_nothing_even_in_a_kept_id(self) -> None:
        messages = history(f"c1__thought__{SIG_CALL}")
        messages[1] = {
            **messages[1],
            "reasoning_content": "think",
            "provider_specific_fields": {"thought_signatures": [SIG_TEXT]},
        }
        messages.append({"role": "user", "content": "next question"})
        out = render(messages, get_dialect("gemini"), TurnPolicy.CURRENT_TURN)
        sent = json.dumps(out.messages[1])
        assert "reasoning_content" not in sent and "thought" not in sent
        assert [c["id"] for c in out.messages[1]["tool_calls"]] == ["c1", "c2"]
        assert out.stripped == [1]

    def test_issuers_gemini_api_and_vertex_do_not_cross(self) -> None:
        for dialect, foreign in (("gemini", "vertex_ai"), ("gemini_vertex", "gemini")):
            out = render(
                history(),
                get_dialect(dialect),
                TurnPolicy.CURRENT_TURN,
                {1: gemini_record(foreign)},
            )
            assert out.dropped == [1]
            assert "provider_specific_fields" not in json.dumps(out.messages[1])
            assert "reasoning_content" not in out.messages[1]

    def test_foreign_text_is_not_turned_into_thoughts(self) -> None:
        record = Reasoning.from_text("deepseek thinking", provider="deepseek")
        out = render(history(), get_dialect("gemini"), TurnPolicy.CURRENT_TURN, {1: record})
        assert "reasoning_content" not in out.messages[1] and out.dropped == [1]

    def test_gemini_text_crosses_to_text_dialects_signatures_never(self) -> None:
        messages = history(f"c1__thought__{SIG_CALL}")
        out = render(
            messages, get_dialect("openai_chat"), TurnPolicy.CURRENT_TURN, {1: gemini_record()}
        )
        assert out.messages[1].get("reasoning_content") == "think"
        assert SIG_TEXT not in json.dumps(out.messages[1])

    def test_first_call_of_each_current_step_signed(self) -> None:
        """Two steps (the second split over two assistant messages, as some clients send
        parallel calls); one foreign step has no signature: dummy on its first call only."""
        messages = [
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": None, "tool_calls": [_call("o1")]},
            {"role": "tool", "tool_call_id": "o1", "content": "1"},
            {"role": "user", "content": "new"},
            {"role": "assistant", "content": None, "tool_calls": [_call("a1"), _call("a2")]},
            {"role": "tool", "tool_call_id": "a1", "content": "1"},
            {"role": "tool", "tool_call_id": "a2", "content": "1"},
            {"role": "assistant", "content": "thinking aloud", "tool_calls": [_call("b1")]},
            {"role": "assistant", "content": None, "tool_calls": [_call("b2")]},
            {"role": "tool", "tool_call_id": "b1", "content": "1"},
        ]
        out, from_ids, dummies = sign_current_steps(messages, messages, 3, missing=[4, 7, 8])
        assert dummies == [4, 7] and from_ids == []
        assert out[4]["tool_calls"][0]["provider_specific_fields"] == {
            "thought_signature": DUMMY_SIGNATURE
        }
        assert "provider_specific_fields" not in out[4]["tool_calls"][1]
        assert "provider_specific_fields" not in out[8]["tool_calls"][0]
        assert "provider_specific_fields" not in out[1]["tool_calls"][0]  # earlier turn
        assert as_bytes(DUMMY_SIGNATURE) == b"context_engineering_is_the_way_to_go"

    def test_signature_kept_in_the_id_beats_the_dummy_on_a_store_miss(self) -> None:
        url_safe = SIG_CALL.replace("+", "-").replace("/", "_")
        messages = history(f"c1__thought__{url_safe}")
        rendered = render(messages, get_dialect("gemini"), TurnPolicy.CURRENT_TURN)
        out, from_ids, dummies = sign_current_steps(
            messages, rendered.messages, rendered.turn_start, rendered.missing
        )
        assert (from_ids, dummies) == ([1], [])
        assert out[1]["tool_calls"][0]["provider_specific_fields"]["thought_signature"] == SIG_CALL

    @pytest.mark.parametrize(
        ("provider", "model", "dialect", "policy", "signed_calls"),
        [
            ("gemini", "gemini-3-pro-preview", "gemini", "current_turn", True),
            ("gemini", "gemini-2.5-pro", "gemini", "current_turn", False),
            ("gemini", "gemini-3.5-flash", "gemini", "all_turns", True),
            ("vertex_ai", "gemini-2.5-flash", "gemini_vertex", "current_turn", False),
            ("vertex_ai", "gemini-3.5-flash", "gemini_vertex", "all_turns", True),
            ("vertex_ai", "claude-sonnet-4-5@20250929", "anthropic_vertex", "current_turn", False),
        ],
    )
    def test_model_table(
        self, provider: str, model: str, dialect: str, policy: str, signed_calls: bool
    ) -> None:
        target = resolve_target(provider, model, None, dialect_of=get_dialect)
        assert (target.dialect.name, target.policy.value) == (dialect, policy)
        assert requires_signed_calls(model) is signed_calls


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiUpstream]:
    with GeminiUpstream() as up:
        yield up


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def call(how: str, model: str, api_base: str, messages: list[Any], *, stream: bool) -> Any:
    """One request through real LiteLLM; the reply's message as LiteLLM returns it."""
    params: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": stream,
        "api_base": api_base,
        "api_key": "k",
    }

    def assemble(chunks: list[Any]) -> Any:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return built.choices[0].message

    if how == "acompletion":
        response = await litellm.acompletion(**params)
        return assemble([c async for c in response]) if stream else response.choices[0].message

    def run() -> Any:
        response = litellm.completion(**params)
        return assemble(list(response)) if stream else response.choices[0].message

    return await asyncio.to_thread(run)


def keep_ids(message: Any) -> dict[str, Any]:
    """A client that keeps role, content and tool calls (ids verbatim) and drops the rest."""
    return dropping_client(message)


def clean_ids(message: Any) -> dict[str, Any]:
    """A client that also cuts LiteLLM's `__thought__…` suffix off its tool-call ids."""
    out = keep_ids(message)
    for c in out.get("tool_calls") or ():
        c["id"] = c["id"].split("__thought__")[0]
    return out


CLIENTS = {"keep_ids": keep_ids, "clean_ids": clean_ids}


def model_parts(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [c["parts"] for c in body["contents"] if c.get("role") == "model"]


def no_gemini_signature(parts: list[dict[str, Any]], *issued: str) -> None:
    """No thought part, and no signature Gemini issued (LiteLLM's own placeholder allowed)."""
    for part in parts:
        assert part.get("thought") is not True
        signature = part.get("thoughtSignature")
        if signature is not None:
            assert signature == LITELLM_PLACEHOLDER
            assert all(as_bytes(signature) != as_bytes(s) for s in issued)


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_tool_loop_then_new_turn(
    gemini: GeminiUpstream, callback: ReasoningCallback, how: str, stream: bool, client: str
) -> None:
    keep = CLIENTS[client]
    url_safe_call = SIG_CALL.replace("+", "-").replace("/", "_")
    gemini.script(
        GEMINI3,
        GeminiReply(
            parts=[
                {"text": "I need the country first.", "thought": True},
                fc("get_country", sig=url_safe_call),
                fc("get_city", {"n": 1}),
            ]
        ),
        GeminiReply(parts=[{"text": "Mexico City"}, {"text": "", "thoughtSignature": SIG_TEXT}]),
        GeminiReply(parts=[{"text": "You are welcome."}]),
    )
    model = f"gemini/{GEMINI3}"
    start = len(gemini.requests_for(GEMINI3))
    messages: list[Any] = [{"role": "user", "content": "What is the capital? Call the tools."}]
    first = await call(how, model, gemini.base_url, messages, stream=stream)
    assistant = keep(first)
    messages += [
        assistant,
        *(
            {"role": "tool", "tool_call_id": c["id"], "content": "Mexico"}
            for c in assistant["tool_calls"]
        ),
    ]
    second = await call(how, model, gemini.base_url, messages, stream=stream)
    bodies = gemini.requests_for(GEMINI3)[start:]
    step = model_parts(bodies[1])[0]
    assert step[0] == {"thought": True, "text": "I need the country first."}
    calls = [p for p in step if "function_call" in p or "functionCall" in p]
    assert len(calls) == 2
    assert as_bytes(calls[0]["thoughtSignature"]) == as_bytes(SIG_CALL)
    assert "thoughtSignature" not in calls[1]  # parallel: Gemini signed only the first

    messages += [keep(second), {"role": "user", "content": "Thanks!"}]
    await call(how, model, gemini.base_url, messages, stream=stream)
    bodies = gemini.requests_for(GEMINI3)[start:]
    assert len(bodies) == 3
    for parts in model_parts(bodies[2]):
        no_gemini_signature(parts, SIG_CALL, SIG_TEXT)
    # A sync call's capture runs on LiteLLM's logging thread after the call returned, and the
    # new turn waits for none: give the second one time to land.
    deadline = time.monotonic() + 30
    while callback.stats["captured"] < 2:
        assert time.monotonic() < deadline, callback.stats
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_signature_only_trailing_chunk_goes_back_on_the_text(
    gemini: GeminiUpstream, callback: ReasoningCallback, how: str, stream: bool
) -> None:
    """Text answer whose signature arrives alone on an empty trailing part; a `turn: false`
    note keeps the turn open, so the next request sends it back on the text part."""
    gemini.script(
        GEMINI3,
        GeminiReply(
            parts=[{"text": "There are 3 r's."}, {"text": "", "thoughtSignature": SIG_LATE}]
        ),
        GeminiReply(parts=[{"text": "Noted."}]),
    )
    model = f"gemini/{GEMINI3}"
    start = len(gemini.requests_for(GEMINI3))
    messages: list[Any] = [{"role": "user", "content": "How many r's in strawberry?"}]
    first = await call(how, model, gemini.base_url, messages, stream=stream)
    messages += [keep_ids(first), {"role": "user", "content": "(note)", "turn": False}]
    await call(how, model, gemini.base_url, messages, stream=stream)
    body = gemini.requests_for(GEMINI3)[start:][1]
    (parts,) = model_parts(body)
    assert [p["text"] for p in parts] == ["There are 3 r's."]
    assert as_bytes(parts[0]["thoughtSignature"]) == as_bytes(SIG_LATE)
    assert "turn" not in json.dumps(body)


@pytest.fixture(scope="module")
def openai_server() -> Iterator[Upstream]:
    with Upstream() as up:
        yield up


@pytest.mark.parametrize("how", CALLS)
async def test_switch_other_provider_to_gemini_gets_the_dummy(
    gemini: GeminiUpstream,
    openai_server: Upstream,
    callback: ReasoningCallback,
    how: str,
) -> None:
    """An OpenAI-compatible reasoning model made the call; the conversation moves to Gemini 3:
    its reasoning text is not sent, the unsigned call gets the dummy signature (no 400)."""
    openai_server.script(
        "reasoner-x",
        Reply(
            message={
                "content": None,
                "reasoning_content": "other provider thinking",
                "tool_calls": [
                    {
                        "id": "call_other_1",
                        "type": "function",
                        "function": {"name": "get_country", "arguments": "{}"},
                    }
                ],
            }
        ),
    )
    gemini.script(GEMINI3, GeminiReply(parts=[{"text": "Mexico City."}]))
    messages: list[Any] = [{"role": "user", "content": "Capital? Call the tool."}]
    first = await call(
        "acompletion", "openai/reasoner-x", openai_server.base_url, messages, stream=False
    )
    messages += [
        keep_ids(first),
        {"role": "tool", "tool_call_id": "call_other_1", "content": "Mexico"},
    ]
    start = len(gemini.requests_for(GEMINI3))
    await call(how, f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False)
    body = gemini.requests_for(GEMINI3)[start:][0]
    (parts,) = model_parts(body)
    assert not any(p.get("thought") for p in parts)
    assert "other provider thinking" not in json.dumps(body)
    (call_part,) = parts
    assert as_bytes(call_part["thoughtSignature"]) == b"context_engineering_is_the_way_to_go"
    assert callback.stats["dummy_signatures"] == 1


@pytest.mark.parametrize("how", CALLS)
async def test_switch_gemini_to_text_provider_sends_text_not_signatures(
    gemini: GeminiUpstream, openai_server: Upstream, callback: ReasoningCallback, how: str
) -> None:
    gemini.script(
        GEMINI3,
        GeminiReply(parts=[{"text": "Gemini thinking", "thought": True}, fc("f", sig=SIG_CALL)]),
    )
    openai_server.script("reasoner-y", Reply(message={"content": "done"}))
    messages: list[Any] = [{"role": "user", "content": "go"}]
    first = await call("acompletion", f"gemini/{GEMINI3}", gemini.base_url, messages, stream=False)
    assistant = keep_ids(first)
    messages += [
        assistant,
        {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "1"},
    ]
    await call(how, "openai/reasoner-y", openai_server.base_url, messages, stream=False)
    body = openai_server.bodies("reasoner-y")[-1]
    sent = body["messages"][1]
    assert sent["reasoning_content"] == "Gemini thinking"
    wire = json.dumps(body)
    assert "__thought__" not in wire and "provider_specific_fields" not in wire
    assert SIG_CALL not in wire


async def test_gemini_35_keeps_every_turn(
    gemini: GeminiUpstream, callback: ReasoningCallback
) -> None:
    """Gemini 3.5+: all or none; the earlier turn's thought and signature go back."""
    model_name = "gemini-3.5-flash"
    gemini.script(
        model_name,
        GeminiReply(
            parts=[
                {"text": "story plan", "thought": True},
                {"text": "Once upon a time."},
                {"text": "", "thoughtSignature": SIG_LATE},
            ]
        ),
        GeminiReply(parts=[{"text": "The end."}]),
    )
    messages: list[Any] = [{"role": "user", "content": "Tell a story."}]
    first = await call(
        "acompletion", f"gemini/{model_name}", gemini.base_url, messages, stream=True
    )
    messages += [keep_ids(first), {"role": "user", "content": "Another one."}]
    await call("acompletion", f"gemini/{model_name}", gemini.base_url, messages, stream=True)
    (parts,) = model_parts(gemini.requests_for(model_name)[-1])
    assert parts[0] == {"thought": True, "text": "story plan"}
    assert as_bytes(parts[1]["thoughtSignature"]) == as_bytes(SIG_LATE)
