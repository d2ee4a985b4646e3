"""The one registry of the provider families (`litellm_reasoning.wire`): what the LiteLLM layer
reaches an adapter through, by provider, without naming its family. Pure: dicts in, values out."""

from __future__ import annotations

import base64
import json

import pytest

from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.integration.calls import CallState
from litellm_reasoning.wire import (
    ReplyRead,
    adapter_for,
    complete_message,
    issued_by_endpoint,
    retried_by_litellm,
)
from litellm_reasoning.wire.openrouter.stream import StreamedDetails

pytestmark = pytest.mark.once

INTERLEAVED = {
    "content": [
        {"type": "text", "text": "Let"},
        {"type": "thinking", "thinking": "t", "signature": "c2ln"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    ],
    "input_transformations": [{"kind": "dropped", "index": 2, "thinking": "secret"}],
}


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "vertex_ai", "vertex_ai_beta"])
def test_claude_replies_are_read_by_their_adapter(provider: str) -> None:
    adapter = adapter_for(provider)
    assert adapter.reads_stream
    read = adapter.read_reply(None, {"original_response": json.dumps(INTERLEAVED)}, None)
    assert read.layout == ("t3", "r", "u")
    # Scalars only: a transformed block's own text never reaches logs.
    assert read.transformations == ({"kind": "dropped", "index": 2},)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "gemini", None, "unknown"])
def test_a_provider_no_adapter_names_reads_nothing(provider: str | None) -> None:
    adapter = adapter_for(provider)
    assert not adapter.reads_stream
    raw = {"original_response": json.dumps(INTERLEAVED)}
    assert adapter.read_reply(None, raw, None) == ReplyRead()


def test_streamed_details_the_call_kept_complete_its_message() -> None:
    state = CallState()
    details = [{"type": "reasoning.text", "index": 0, "text": "thought", "format": "unknown"}]
    state.part(StreamedDetails).feed(0, details, True)
    message: dict[str, object] = {"role": "assistant", "content": "hi"}
    complete_message(message, None, 0, state)
    assert message["reasoning_details"] == details
    again: dict[str, object] = {"role": "assistant", "content": "hi"}
    complete_message(again, None, 0, state)  # taken once
    assert "reasoning_details" not in again
    untouched: dict[str, object] = {"role": "assistant", "content": "hi"}
    complete_message(untouched, None, 0, CallState())  # a call with no stream fed
    assert untouched == {"role": "assistant", "content": "hi"}


def test_litellm_s_own_gemini_retry_is_recognised() -> None:
    ours = base64.b64encode(b"our signature").decode()
    placeholder = base64.b64encode(b"skip_thought_signature_validator").decode()
    restored = [Reasoning(parts=(ReasoningPart(text="", signature=ours),), provider="gemini")]

    def body(signature: str) -> dict[str, object]:
        part = {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": signature}
        return {"contents": [{"role": "model", "parts": [part]}]}

    assert retried_by_litellm(restored, body(placeholder))
    assert not retried_by_litellm(restored, body(ours))  # our signature went out: not a retry
    assert not retried_by_litellm([], body(placeholder))  # nothing of ours went in
    assert not retried_by_litellm(restored, {"messages": []})  # not a Gemini body


def test_endpoint_issued_blobs_are_named_by_their_adapter() -> None:
    assert issued_by_endpoint("hosted_vllm")
    assert not issued_by_endpoint("openai")
    assert not issued_by_endpoint(None)
