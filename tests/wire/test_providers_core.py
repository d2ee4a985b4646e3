"""The Ollama, Mistral and OpenRouter dialects and the OpenRouter stream assembly, pure.

Inputs are the recorded shapes (cassettes built from the provider recordings); what goes on
the wire end to end is in test_providers_recordings and test_provider_switch.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from paths import REPO

from litellm_reasoning.core.extract import reasoning_from_message
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.wire import get_dialect
from litellm_reasoning.wire.openrouter.stream import DetailsAssembly, StreamedDetails

CASSETTES = REPO / "cassettes"


def _cassette(name: str) -> list[dict[str, Any]]:
    interactions: list[dict[str, Any]] = yaml.safe_load(
        (CASSETTES / f"{name}.yaml").read_text("utf-8")
    )["interactions"]
    return interactions


def _sse_details(name: str) -> list[tuple[list[Any], bool]]:
    """Per recorded SSE chunk of choice 0: its raw reasoning_details and whether it finished."""
    body = _cassette(name)[0]["response"]["body"]["string"]
    out: list[tuple[list[Any], bool]] = []
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            for choice in json.loads(line[5:])["choices"]:
                delta = choice.get("delta") or {}
                out.append((delta.get("reasoning_details") or [], bool(choice["finish_reason"])))
    return out


def _follow_up_details(name: str) -> list[dict[str, Any]]:
    body = json.loads(_cassette(name)[1]["request"]["body"])
    details: list[dict[str, Any]] = body["messages"][1]["reasoning_details"]
    return details


# ---------------------------------------------------------------- stream assembly


def test_streamed_claude_details_merge_into_one_signed_item() -> None:
    assembly = DetailsAssembly()
    signature = ""
    for deltas, finished in _sse_details("openrouter_claude_stream"):
        assembly.add(deltas)
        assembly.finished = assembly.finished or finished
        signature = next((d["signature"] for d in deltas if d.get("signature")), signature)
    (item,) = assembly.complete() or []
    assert item["signature"] == signature and len(signature) > 100
    assert item == _follow_up_details("openrouter_claude_stream")[0]
    assert list(item) == ["type", "text", "signature", "format", "index"]


def test_an_unfinished_stream_or_a_missing_signature_is_never_complete() -> None:
    chunks = _sse_details("openrouter_claude_stream")
    unfinished = DetailsAssembly()
    for deltas, _ in chunks:
        unfinished.add(deltas)
    assert unfinished.complete() is None
    unsigned = DetailsAssembly(finished=True)
    for deltas, _ in chunks:
        unsigned.add([d for d in deltas if not d.get("signature")])
    assert unsigned.complete() is None


def test_streamed_details_are_taken_once_per_stream() -> None:
    streams = StreamedDetails(max_streams=2)
    for deltas, finished in _sse_details("openrouter_o3_encrypted_stream"):
        streams.feed(("gen-1", 0), deltas, finished)
    streams.feed(("gen-2", 0), [{"type": "reasoning.text", "text": "a", "index": 0}], False)
    assert streams.take(("gen-1", 0)) == _follow_up_details("openrouter_o3_encrypted_stream")
    assert streams.take(("gen-1", 0)) is None
    assert streams.take(("gen-2", 0)) is None  # never finished


# ---------------------------------------------------------------- OpenRouter issuers


def _openrouter_record(name: str) -> Reasoning:
    details = _follow_up_details(name)
    reasoning = reasoning_from_message(
        {"role": "assistant", "provider_specific_fields": {"reasoning_details": details}},
        provider="openrouter",
    )
    assert reasoning is not None
    return reasoning


@pytest.mark.parametrize(
    ("name", "accepted_by"),
    [
        ("openrouter_claude_signed", {"openrouter_anthropic"}),
        ("openrouter_claude_stream", {"openrouter_anthropic"}),
        ("openrouter_o3_encrypted_stream", {"openrouter_openai"}),
        (
            "openrouter_glm_text",
            {"openrouter", "openrouter_anthropic", "openrouter_openai", "openrouter_google"},
        ),
    ],
)
def test_openrouter_details_go_only_to_their_family(name: str, accepted_by: set[str]) -> None:
    record = _openrouter_record(name)
    for dialect_name in (
        "openrouter",
        "openrouter_anthropic",
        "openrouter_openai",
        "openrouter_google",
    ):
        dialect: Any = get_dialect(dialect_name)
        assert dialect.accepts(record) is (dialect_name in accepted_by), dialect_name
        rendered = dialect.render({"role": "assistant", "content": "x"}, record)
        if dialect_name in accepted_by:
            assert rendered["reasoning_details"] == _follow_up_details(name)
        else:
            assert "reasoning_details" not in rendered


def test_openrouter_takes_no_reasoning_from_other_providers() -> None:
    dialect: Any = get_dialect("openrouter")
    foreign = Reasoning(parts=(ReasoningPart(text="plain"),), provider="deepseek")
    claude = Reasoning(parts=(ReasoningPart(text="t", signature="S"),), provider="anthropic")
    assert not dialect.accepts(foreign)
    assert not get_dialect("openrouter_anthropic").accepts(claude)  # type: ignore[attr-defined]


def test_openrouter_rows_follow_the_upstream_model() -> None:
    def target(model: str, tools: bool = False) -> tuple[str, TurnPolicy]:
        t = resolve_target("openrouter", model, None, has_tools=tools, dialect_of=get_dialect)
        return t.dialect.name, t.policy

    assert target("anthropic/claude-sonnet-4.5") == (
        "openrouter_anthropic",
        TurnPolicy.CURRENT_TURN,
    )
    assert target("openai/o3")[0] == "openrouter_openai"
    assert target("google/gemini-3-pro-preview")[0] == "openrouter_google"
    assert target("z-ai/glm-4.6") == ("openrouter", TurnPolicy.CURRENT_TURN)
    assert target("moonshotai/kimi-k2-thinking")[1] is TurnPolicy.TOOL_CALLS_ALL_TURNS
    assert target("deepseek/deepseek-v4", tools=True)[1] is TurnPolicy.ALL_TURNS


# ---------------------------------------------------------------- Mistral, Ollama


def test_mistral_renders_a_closed_chunk_before_the_text_and_nothing_else() -> None:
    dialect = get_dialect("mistral")
    reasoning = Reasoning.from_text("Think.", provider="mistral")
    message = {
        "role": "assistant",
        "content": "Answer.",
        "reasoning_content": "Think.",
        "thinking_blocks": [{"type": "thinking", "thinking": "Think.", "signature": "mistral"}],
        "provider_specific_fields": {},
    }
    chunk = {"type": "thinking", "thinking": [{"type": "text", "text": "Think."}], "closed": True}
    assert dialect.render(message, reasoning) == {
        "role": "assistant",
        "content": [chunk, {"type": "text", "text": "Answer."}],
    }
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with_call = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert dialect.render(with_call, reasoning)["content"] == [chunk]
    # An earlier turn: its chunk is removed from the content the client kept.
    kept = {"role": "assistant", "content": [chunk, {"type": "text", "text": "Answer."}]}
    assert dialect.render(kept, None) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Answer."}],
    }


def test_mistral_wire_patch_matches_what_litellm_1_110_renders() -> None:
    dialect: Any = get_dialect("mistral")
    chunk = {"type": "thinking", "thinking": [{"type": "text", "text": "R"}], "closed": True}
    want = {"role": "assistant", "content": [chunk, {"type": "text", "text": "C"}]}
    flattened_by_1_106 = {"role": "assistant", "content": "C"}
    rendered_by_1_110 = {"role": "assistant", "content": [chunk, {"type": "text", "text": "C"}]}
    assert dialect.patch_wire(flattened_by_1_106, want) == rendered_by_1_110
    assert dialect.patch_wire(rendered_by_1_110, want) == rendered_by_1_110


def test_ollama_wire_patch_writes_thinking() -> None:
    dialect: Any = get_dialect("ollama_chat")
    native = {"role": "assistant", "content": "", "thinking": "old", "images": []}
    assert dialect.patch_wire(native, {"reasoning_content": "new"})["thinking"] == "new"
    assert "thinking" not in dialect.patch_wire(native, {})


def test_ollama_generate_and_chat_rows() -> None:
    assert (
        resolve_target("ollama", "qwen3", None, dialect_of=get_dialect).dialect.name
        == "no_reasoning"
    )
    chat = resolve_target("ollama_chat", "qwen3", None, dialect_of=get_dialect)
    assert (chat.dialect.name, chat.policy) == ("ollama_chat", TurnPolicy.CURRENT_TURN)
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "old"},
        {"role": "user", "content": "c"},
    ]
    rendered = render(history, get_dialect("ollama_chat"), TurnPolicy.CURRENT_TURN)
    assert "reasoning_content" not in rendered.messages[1]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_ollama_generate_prompt_carries_no_reasoning(mode: str, upstream: Any) -> None:
    """`ollama/` (the generate endpoint) builds one prompt from the messages: a client's kept
    reasoning must not end up in it."""
    import asyncio

    import litellm
    from conftest import register

    from litellm_reasoning import ReasoningCallback
    from litellm_reasoning.testing.upstream import Reply

    callback = register(ReasoningCallback())
    model = f"gen-{mode}"
    done = {"model": model, "created_at": "1970-01-01T00:00:00Z", "response": "ok", "done": True}
    upstream.script(model, Reply(raw_body=json.dumps(done)))
    history = [
        {"role": "user", "content": "Count to 3."},
        {"role": "assistant", "content": "1 2 3", "reasoning_content": "SECRET-THOUGHT"},
        {"role": "user", "content": "Go on.", "turn": False},
    ]
    kwargs: dict[str, Any] = {
        "model": f"ollama/{model}",
        "api_base": upstream.base_url.removesuffix("/v1"),
        "messages": history,
    }
    try:
        if mode == "async":
            await litellm.acompletion(**kwargs)
        else:
            await asyncio.to_thread(litellm.completion, **kwargs)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    (body,) = [b for b in upstream.bodies(model) if "prompt" in b]
    assert "1 2 3" in body["prompt"]
    assert "SECRET-THOUGHT" not in json.dumps(body)
    assert callback.stats["errors"] == 0
