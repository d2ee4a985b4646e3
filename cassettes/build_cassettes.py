"""Build the vcrpy cassettes in this folder from real provider recordings.

Run once; the output is committed and the tests only read the output:

    python cassettes/build_cassettes.py [--source /path/to/realdata]

`--source` (or `REALDATA_DIR`) is the folder holding the copied third-party recordings
(`pydantic-ai/...`, `vercel-ai/...`, see `cassettes/README.md`). Every cassette gets a header
comment naming its source file, repository, commit and licence, and saying which interactions
are recorded and which were synthesized here.

Two input formats are converted:

* pydantic-ai cassettes, whose JSON bodies sit under `parsed_body` instead of `body`: the
  request body becomes a JSON string again, the response body `{"string": <JSON>}`;
* vercel-ai `*.chunks.txt`, one SSE payload per line and no request: the body becomes
  `data: <line>\\n\\n` ... `data: [DONE]\\n\\n` and the request is synthesized.

Single-request recordings get one synthesized follow-up interaction (a client request built
from the recorded reply, and a minimal reply that is marked as not recorded), so the tests can
look at what the request after a recorded reply sends on the wire.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = Path(os.environ.get("REALDATA_DIR", "/work/shared/realdata"))

PYDANTIC_AI = {
    "repository": "https://github.com/pydantic/pydantic-ai",
    "commit": "4fda38988f2939fa6ea9cdefcf120693e10ef491",
    "licence": "MIT, Copyright (c) Pydantic Services Inc. 2024 to present",
    "licence_file": "licenses/pydantic-ai-LICENSE",
    "original_prefix": "tests/models/cassettes/",
    "changes": (
        "JSON bodies re-serialised from the recording's `parsed_body` (pydantic-ai normalised "
        "their text when recording; SSE bodies are kept as recorded); transfer headers "
        "(content-length, transfer-encoding) dropped: they describe the original transfer"
    ),
}
VERCEL_AI = {
    "repository": "https://github.com/vercel/ai",
    "commit": "ed857f50f112e23930b0c2dd8d532cc8bebbc911",
    "licence": "Apache-2.0, Copyright 2023 Vercel, Inc.",
    "licence_file": "licenses/vercel-ai-LICENSE",
    "original_prefix": "packages/",
    "changes": (
        "each recorded line framed as an SSE `data:` event, `data: [DONE]` appended; "
        "content-type text/event-stream added (the recording has no headers)"
    ),
}

OPENINFERENCE = {
    "repository": "https://github.com/Arize-ai/openinference",
    "commit": "1fe497f1d9f45a07eee55d97fe185e020560f9c7",
    "licence": "Apache-2.0",
    "licence_file": "licenses/openinference-LICENSE",
    "original_prefix": "js/packages/openinference-instrumentation-anthropic/test/cassettes/",
    "changes": (
        "the recorded SSE body served unchanged with the recorded content-type; the request is "
        "synthesized (the recording has none)"
    ),
}

DEEPSEEK_API_BASE = "https://api.deepseek.com"
"""The recordings call /chat/completions; LiteLLM's default DeepSeek base adds /beta."""

# Response headers that describe the original transfer, not the re-serialised body.
_TRANSFER_HEADERS = frozenset({"content-length", "transfer-encoding", "content-encoding"})

Json = dict[str, Any]


@dataclass
class Interaction:
    request: Json
    response: Json
    note: str


@dataclass
class Spec:
    """One cassette: where it comes from and how it is built."""

    name: str
    source: str
    origin: dict[str, str]
    original_path: str
    build: Callable[[Path, Spec], list[Interaction]]
    summary: str
    provider: str
    api_base: str | None = None
    """Passed to LiteLLM when its default base URL differs from the recording's."""
    extra: dict[str, Any] = field(default_factory=dict)
    script: Callable[[Spec, list[Interaction]], Json] | None = None
    """Builds `scripts/<name>.json`; default `client_script` (OpenAI-compatible recordings)."""


# ---------------------------------------------------------------- helpers


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _headers(raw: Json | None) -> Json:
    out: Json = {}
    for name, value in (raw or {}).items():
        if name.lower() in _TRANSFER_HEADERS:
            continue
        out[name] = value if isinstance(value, list) else [value]
    return out


def _sse(payloads: list[str]) -> str:
    return "".join(f"data: {payload}\n\n" for payload in payloads) + "data: [DONE]\n\n"


def _sse_payloads(body: str) -> list[Json]:
    out: list[Json] = []
    for line in body.split("\n"):
        if line.startswith("data:"):
            data = line[len("data:") :].strip()
            if data and data != "[DONE]":
                out.append(json.loads(data))
    return out


def _assembled_message(chunks: list[Json]) -> Json:
    """The assistant message a client assembles from streamed chunks (choice 0)."""
    content = ""
    reasoning = ""
    calls: dict[int, Json] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(
                    call["index"],
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
    message: Json = {"role": "assistant", "content": content or None}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message


def _json_response(body: Json, headers: Json) -> Json:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": headers,
        "body": {"string": _dumps(body)},
    }


def _request(uri: str, body: Json, headers: Json | None = None) -> Json:
    return {
        "method": "POST",
        "uri": uri,
        "headers": headers or {"content-type": ["application/json"]},
        "body": _dumps(body),
    }


def _synthesized_reply(model: str, index: int) -> Json:
    return {
        "id": f"synthesized-follow-up-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "Synthesized follow-up reply: not a provider recording.",
                },
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _follow_up(
    first: Interaction, reply: Json, tail: list[Json], model: str, note: str
) -> Interaction:
    """A client request continuing `first` with its (kept) reply and `tail`, plus a fake reply."""
    body = json.loads(first.request["body"])
    follow = {key: value for key, value in body.items() if key not in ("stream", "stream_options")}
    follow["messages"] = [*body["messages"], reply, *tail]
    follow["stream"] = False
    return Interaction(
        request=_request(first.request["uri"], follow),
        response=_json_response(
            _synthesized_reply(model, 2), {"content-type": ["application/json"]}
        ),
        note=note,
    )


# ---------------------------------------------------------------- converters


def _pydantic_interactions(path: Path) -> list[Interaction]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: list[Interaction] = []
    for item in raw["interactions"]:
        req, resp = item["request"], item["response"]
        request: Json = {
            "method": req["method"],
            "uri": req["uri"],
            "headers": _headers(req.get("headers")),
        }
        if "parsed_body" in req:
            request["body"] = _dumps(req["parsed_body"])
        else:
            request["body"] = req.get("body")
        response: Json = {
            "status": resp["status"],
            "headers": _headers(resp.get("headers")),
        }
        if "parsed_body" in resp:
            response["body"] = {"string": _dumps(resp["parsed_body"])}
        else:
            response["body"] = {"string": resp["body"]["string"]}
        out.append(Interaction(request, response, "recorded"))
    return out


def _reply_of(interaction: Interaction) -> Json:
    """The assistant message of a recorded reply, as a client that keeps reasoning sends it."""
    body = interaction.response["body"]["string"]
    if "text/event-stream" in str(interaction.response["headers"].get("content-type")):
        message = _assembled_message(_sse_payloads(body))
    else:
        message = dict(json.loads(body)["choices"][0]["message"])
    for call in message.get("tool_calls") or ():
        call.pop("index", None)
    return message


def build_pydantic(source: Path, spec: Spec) -> list[Interaction]:
    interactions = _pydantic_interactions(source / spec.source)
    tail = spec.extra.get("follow_up")
    if tail is not None:
        interactions.append(
            _follow_up(
                interactions[0],
                _reply_of(interactions[0]),
                tail,
                spec.extra["model"],
                spec.extra["follow_up_note"],
            )
        )
    return interactions


def build_vercel_chunks(source: Path, spec: Spec) -> list[Interaction]:
    lines = [
        line.strip()
        for line in (source / spec.source).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for line in lines:
        json.loads(line)  # every line must be one JSON payload
    first = Interaction(
        request=_request(spec.extra["uri"], spec.extra["request"]),
        response={
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": _sse(lines)},
        },
        note=(
            "request synthesized (the recording has none; the prompt is the one the recorded "
            "reasoning answers); response = the recorded SSE payloads, framed as `data:` lines"
        ),
    )
    reply = _reply_of(first)
    tail = spec.extra["follow_up"]
    if callable(tail):
        tail = tail(reply)
    follow = _follow_up(first, reply, tail, spec.extra["model"], spec.extra["follow_up_note"])
    return [first, follow]


# ---------------------------------------------------------------- the cassettes

_TURN_FALSE_NOTE = (
    "synthesized client request: request 1's messages, the recorded reply with its reasoning "
    "(as a client that keeps reasoning sends it) and a user note with `turn: false` (this "
    "package's flag for a message that does not start a new turn; it never reaches the wire); "
    "the reply is synthesized"
)


def _weather_tool_result(reply: Json) -> list[Json]:
    call = reply["tool_calls"][0]
    return [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": '{"location":"San Francisco","weather":"sunny","temperature_f":68}',
        }
    ]


SPECS: tuple[Spec, ...] = (
    Spec(
        name="deepseek_thinking_part",
        source="pydantic-ai/test_deepseek/test_deepseek_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_model_thinking_part.yaml",
        build=build_pydantic,
        summary="DeepSeek deepseek-reasoner, non-streaming, message.reasoning_content",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "follow_up": [{"role": "user", "content": "Is it any different at night?"}],
            "follow_up_note": (
                "synthesized client request: request 1's messages, the recorded reply with its "
                "reasoning (as a client that keeps reasoning sends it) and a new user question; "
                "the reply is synthesized"
            ),
        },
    ),
    Spec(
        name="deepseek_thinking_stream",
        source="pydantic-ai/test_deepseek/test_deepseek_model_thinking_stream.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_model_thinking_stream.yaml",
        build=build_pydantic,
        summary="DeepSeek deepseek-reasoner, SSE stream: delta.reasoning_content, then content",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "follow_up": [{"role": "user", "content": "Reply in one sentence.", "turn": False}],
            "follow_up_note": _TURN_FALSE_NOTE,
        },
    ),
    Spec(
        name="deepseek_tool_loop",
        source="pydantic-ai/test_deepseek/test_deepseek_deferred_capability_with_thinking.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_deferred_capability_with_thinking.yaml",
        build=build_pydantic,
        summary=(
            "DeepSeek deepseek-reasoner (served as deepseek-v4-flash), 3-request tool loop; "
            "requests 2 and 3 send reasoning_content back (one assistant message with an empty one)"
        ),
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
    ),
    Spec(
        name="zai_preserved_thinking",
        source="pydantic-ai/test_zai/test_zai_preserved_thinking_round_trip.yaml",
        origin=PYDANTIC_AI,
        original_path="test_zai/test_zai_preserved_thinking_round_trip.yaml",
        build=build_pydantic,
        summary=(
            "Z.ai glm-4.7, thinking {type: enabled, clear_thinking: false}; request 2 sends "
            "turn 1's reasoning_content back"
        ),
        provider="zai",
    ),
    Spec(
        name="dashscope_qwen3_max_stream",
        source="vercel-ai/alibaba/alibaba-reasoning.chunks.txt",
        origin=VERCEL_AI,
        original_path="alibaba/src/__fixtures__/alibaba-reasoning.chunks.txt",
        build=build_vercel_chunks,
        summary="Alibaba DashScope qwen3-max, SSE stream, delta.reasoning_content then content",
        provider="dashscope",
        extra={
            "model": "qwen3-max",
            "uri": "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions",
            "request": {
                "model": "qwen3-max",
                "messages": [
                    {"role": "user", "content": "How many 'r's are in the word 'strawberry'?"}
                ],
                "stream": True,
                "stream_options": {"include_usage": True},
            },
            "follow_up": [{"role": "user", "content": "Now spell it backwards.", "turn": False}],
            "follow_up_note": _TURN_FALSE_NOTE,
        },
    ),
    Spec(
        name="deepseek_tool_call_stream",
        source="vercel-ai/deepseek/deepseek-tool-call.chunks.txt",
        origin=VERCEL_AI,
        original_path="deepseek/src/__fixtures__/deepseek-tool-call.chunks.txt",
        build=build_vercel_chunks,
        summary="DeepSeek deepseek-reasoner, SSE stream: delta.reasoning_content, then tool_calls",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "uri": "https://api.deepseek.com/chat/completions",
            "request": {
                "model": "deepseek-reasoner",
                "messages": [{"role": "user", "content": "What is the weather in San Francisco?"}],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "weather",
                            "description": "Get the weather in a location",
                            "parameters": {
                                "type": "object",
                                "properties": {"location": {"type": "string"}},
                                "required": ["location"],
                            },
                        },
                    }
                ],
                "stream": True,
            },
            "follow_up": _weather_tool_result,
            "follow_up_note": (
                "synthesized client request: request 1's messages and tools, the recorded "
                "tool-call reply with its reasoning (as a client that keeps reasoning sends it) "
                "and a tool result; the reply is synthesized"
            ),
        },
    ),
)


# ---------------------------------------------------------------- Claude: Anthropic and Bedrock
#
# The recordings hold provider-native bodies (Anthropic Messages, Bedrock Converse). The tests
# drive LiteLLM with OpenAI-shaped messages, so the scripts hold each recorded request as the
# OpenAI-shaped LiteLLM call a client that keeps reasoning makes for it (`thinking_blocks` on
# assistant messages, tool results as `tool` messages), and `echoes` as for the other scripts.


def _claude_message(blocks: list[Json]) -> Json:
    """An Anthropic assistant content list as an OpenAI-shaped message with `thinking_blocks`."""
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    message: Json = {"role": "assistant", "content": text or None}
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": _dumps(b.get("input") or {})},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    thinking = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
    if thinking:
        message["thinking_blocks"] = thinking
    return message


def _anthropic_sse_content(body: str) -> list[Json]:
    """The content blocks an Anthropic SSE stream assembles to."""
    blocks: dict[int, Json] = {}
    partial: dict[int, str] = {}
    for event in _sse_payloads(body):
        kind, index = event.get("type"), int(event.get("index") or 0)
        if kind == "content_block_start":
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[index]
            if delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
    for index, raw in partial.items():
        blocks[index]["input"] = json.loads(raw) if raw else {}
    return [{k: v for k, v in blocks[i].items() if k != "caller"} for i in sorted(blocks)]


def _anthropic_reply(interaction: Interaction) -> Json:
    body = interaction.response["body"]["string"]
    if "text/event-stream" in str(interaction.response["headers"].get("content-type")):
        return _claude_message(_anthropic_sse_content(body))
    return _claude_message(json.loads(body)["content"])


def _anthropic_client_body(body: Json) -> Json:
    out: Json = {"model": body["model"], "max_tokens": body["max_tokens"]}
    if body.get("thinking"):
        out["thinking"] = body["thinking"]
    if body.get("tools"):
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool["input_schema"],
                },
            }
            for tool in body["tools"]
        ]
    if (body.get("tool_choice") or {}).get("type") == "auto":
        out["tool_choice"] = "auto"
    if body.get("stream"):
        out["stream"] = True
    messages: list[Json] = []
    for message in body["messages"]:
        content = message["content"]
        if message["role"] == "assistant":
            messages.append(_claude_message(content))
            continue
        if isinstance(content, str):
            messages.append({"role": "user", "content": content})
            continue
        for block in content:
            if block.get("type") == "tool_result":
                result = block["content"]
                if isinstance(result, list):
                    result = "".join(part.get("text", "") for part in result)
                messages.append(
                    {"role": "tool", "tool_call_id": block["tool_use_id"], "content": result}
                )
        rest = [block for block in content if block.get("type") != "tool_result"]
        if rest:
            messages.append({"role": "user", "content": rest})
        if "turn" in message:
            messages[-1]["turn"] = message["turn"]
    out["messages"] = messages
    return out


def _converse_blocks(content: list[Json]) -> list[Json]:
    """Bedrock Converse assistant content as Anthropic content blocks."""
    out: list[Json] = []
    for block in content:
        reasoning = block.get("reasoningContent")
        if reasoning is not None:
            text = reasoning.get("reasoningText")
            if text is not None:
                out.append(
                    {"type": "thinking", "thinking": text["text"], "signature": text["signature"]}
                )
            else:
                out.append({"type": "redacted_thinking", "data": reasoning["redactedContent"]})
        elif "text" in block:
            out.append({"type": "text", "text": block["text"]})
        elif "toolUse" in block:
            use = block["toolUse"]
            out.append(
                {
                    "type": "tool_use",
                    "id": use["toolUseId"],
                    "name": use["name"],
                    "input": use["input"],
                }
            )
    return out


def eventstream_payloads(raw: bytes) -> list[Json]:
    """The JSON payloads of an AWS event stream (`application/vnd.amazon.eventstream`)."""
    out: list[Json] = []
    offset = 0
    while offset < len(raw):
        total, headers = struct.unpack(">II", raw[offset : offset + 8])
        start = offset + 12 + headers
        event_type = b""
        cursor = offset + 12
        while cursor < start:
            name_len = raw[cursor]
            name = raw[cursor + 1 : cursor + 1 + name_len]
            cursor += 1 + name_len + 1
            value_len = struct.unpack(">H", raw[cursor : cursor + 2])[0]
            value = raw[cursor + 2 : cursor + 2 + value_len]
            cursor += 2 + value_len
            if name == b":event-type":
                event_type = value
        payload = json.loads(raw[start : offset + total - 4])
        out.append({event_type.decode(): payload})
        offset += total
    return out


def _converse_stream_content(raw: bytes) -> list[Json]:
    blocks: dict[int, Json] = {}
    for event in eventstream_payloads(raw):
        delta_event = event.get("contentBlockDelta")
        if delta_event is None:
            continue
        index, delta = delta_event["contentBlockIndex"], delta_event["delta"]
        block = blocks.setdefault(index, {})
        if "reasoningContent" in delta:
            piece = delta["reasoningContent"]
            text = block.setdefault("reasoningContent", {}).setdefault(
                "reasoningText", {"text": ""}
            )
            text["text"] += piece.get("text", "")
            if "signature" in piece:
                text["signature"] = piece["signature"]
        elif "text" in delta:
            block["text"] = block.get("text", "") + delta["text"]
    return [blocks[i] for i in sorted(blocks)]


def _bedrock_reply(interaction: Interaction) -> Json:
    body = interaction.response["body"]["string"]
    if "eventstream" in str(interaction.response["headers"].get("content-type")):
        return _claude_message(_converse_blocks(_converse_stream_content(body)))
    return _claude_message(_converse_blocks(json.loads(body)["output"]["message"]["content"]))


def _bedrock_model(uri: str) -> str:
    return "converse/" + unquote(urlparse(uri).path.split("/")[2])


def _bedrock_client_body(uri: str, body: Json) -> Json:
    out: Json = {"model": _bedrock_model(uri)}
    thinking = (body.get("additionalModelRequestFields") or {}).get("thinking")
    if thinking:
        out["thinking"] = thinking
    tools = (body.get("toolConfig") or {}).get("tools") or []
    if tools:
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["toolSpec"]["name"],
                    "description": tool["toolSpec"].get("description", ""),
                    "parameters": tool["toolSpec"]["inputSchema"]["json"],
                },
            }
            for tool in tools
        ]
    if uri.endswith("/converse-stream"):
        out["stream"] = True
    messages: list[Json] = []
    for message in body["messages"]:
        content = message["content"]
        if message["role"] == "assistant":
            messages.append(_claude_message(_converse_blocks(content)))
            continue
        for block in content:
            if "toolResult" in block:
                result = block["toolResult"]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": result["toolUseId"],
                        "content": "".join(part.get("text", "") for part in result["content"]),
                    }
                )
        texts = [block["text"] for block in content if "text" in block]
        if texts:
            messages.append({"role": "user", "content": "".join(texts)})
        if "turn" in message:
            messages[-1]["turn"] = message["turn"]
    out["messages"] = messages
    return out


def _claude_script(
    spec: Spec,
    interactions: list[Interaction],
    reply_of: Callable[[Interaction], Json],
    client_body: Callable[[Interaction], Json],
) -> Json:
    replies = [reply_of(item) for item in interactions]
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        body = client_body(item)
        echoes: dict[str, int] = {}
        for i, message in enumerate(body["messages"]):
            if message.get("role") != "assistant":
                continue
            for j in range(k):
                if _same_reply(message, replies[j]):
                    echoes[str(i)] = j
        requests.append({"body": body, "echoes": echoes})
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


def anthropic_script(spec: Spec, interactions: list[Interaction]) -> Json:
    return _claude_script(
        spec,
        interactions,
        _anthropic_reply,
        lambda item: _anthropic_client_body(json.loads(item.request["body"])),
    )


def bedrock_script(spec: Spec, interactions: list[Interaction]) -> Json:
    return _claude_script(
        spec,
        interactions,
        _bedrock_reply,
        lambda item: _bedrock_client_body(item.request["uri"], json.loads(item.request["body"])),
    )


_SYNTHESIZED_TEXT = "Synthesized follow-up reply: not a provider recording."


def _claude_follow_up(
    first: Interaction, reply_blocks: list[Json], tail: list[Json], note: str
) -> Interaction:
    """Anthropic Messages: request 1, the recorded reply's content blocks, `tail`; fake reply."""
    body = json.loads(first.request["body"])
    follow = {key: value for key, value in body.items() if key != "stream"}
    follow["messages"] = [*body["messages"], {"role": "assistant", "content": reply_blocks}, *tail]
    follow["stream"] = False
    reply = {
        "id": "msg_synthesized_follow_up",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": _SYNTHESIZED_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    uri = first.request["uri"]
    return Interaction(
        request=_request(uri, follow),
        response=_json_response(reply, {"content-type": ["application/json"]}),
        note=note,
    )


def build_anthropic(source: Path, spec: Spec) -> list[Interaction]:
    interactions = _pydantic_interactions(source / spec.source)
    tail = spec.extra.get("follow_up")
    if tail is not None:
        first = interactions[0]
        blocks = _anthropic_sse_content(first.response["body"]["string"])
        interactions.append(_claude_follow_up(first, blocks, tail, spec.extra["follow_up_note"]))
    return interactions


def build_anthropic_js(source: Path, spec: Spec) -> list[Interaction]:
    """openinference-js recording: `{status, headers, body}`, the response only."""
    raw = json.loads((source / spec.source).read_text(encoding="utf-8"))
    first = Interaction(
        request=_request("https://api.anthropic.com/v1/messages", spec.extra["request"]),
        response={
            "status": {"code": raw["status"], "message": "OK"},
            "headers": _headers(raw["headers"]),
            "body": {"string": raw["body"]},
        },
        note=(
            "request synthesized (the recording has none; the prompt and tool are the ones the "
            "recorded reply answers); response = the recorded SSE body"
        ),
    )
    blocks = _anthropic_sse_content(raw["body"])
    tail = spec.extra["follow_up"](blocks)
    return [first, _claude_follow_up(first, blocks, tail, spec.extra["follow_up_note"])]


def build_bedrock(source: Path, spec: Spec) -> list[Interaction]:
    interactions = _pydantic_interactions(source / spec.source)
    tail = spec.extra.get("follow_up")
    if tail is not None:
        first = interactions[0]
        body = json.loads(first.request["body"])
        content = _converse_stream_content(first.response["body"]["string"])
        follow = {
            **body,
            "messages": [*body["messages"], {"role": "assistant", "content": content}, *tail],
        }
        reply = {
            "output": {"message": {"role": "assistant", "content": [{"text": _SYNTHESIZED_TEXT}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
            "metrics": {"latencyMs": 0},
        }
        uri = first.request["uri"].removesuffix("/converse-stream") + "/converse"
        interactions.append(
            Interaction(
                request=_request(uri, follow),
                response=_json_response(reply, {"content-type": ["application/json"]}),
                note=spec.extra["follow_up_note"],
            )
        )
    return interactions


_CLAUDE_TURN_FALSE_NOTE = (
    "synthesized client request: request 1, the recorded reply with its thinking blocks (as a "
    "client that keeps reasoning sends it) and a user note with `turn: false` (this package's "
    "flag for a message that does not start a new turn; it never reaches the wire); the reply "
    "is synthesized"
)

_WEATHER_TOOL_ANTHROPIC = {
    "name": "get_weather",
    "description": "Get the current weather in a given location",
    "input_schema": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "City and state"}},
        "required": ["location"],
    },
}


def _anthropic_weather_result(blocks: list[Json]) -> list[Json]:
    (use,) = [b for b in blocks if b.get("type") == "tool_use"]
    return [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": '{"location":"San Francisco","weather":"sunny","temperature_f":68}',
                }
            ],
        }
    ]


CLAUDE_SPECS: tuple[Spec, ...] = (
    Spec(
        name="anthropic_tool_loop",
        source="pydantic-ai/test_anthropic/test_anthropic_tool_with_thinking.yaml",
        origin=PYDANTIC_AI,
        original_path="test_anthropic/test_anthropic_tool_with_thinking.yaml",
        build=build_pydantic,
        summary=(
            "Anthropic claude-sonnet-4-0, non-streaming tool loop: thinking (signed) + text + "
            "tool_use, then request 2 sends the signed thinking back with the tool result"
        ),
        provider="anthropic",
        script=anthropic_script,
    ),
    Spec(
        name="anthropic_thinking_part",
        source="pydantic-ai/test_anthropic/test_anthropic_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_anthropic/test_anthropic_model_thinking_part.yaml",
        build=build_pydantic,
        summary=(
            "Anthropic claude-sonnet-4-5, non-streaming: signed thinking + text; request 2 (a new "
            "question) sends turn 1's thinking back"
        ),
        provider="anthropic",
        script=anthropic_script,
    ),
    Spec(
        name="anthropic_redacted",
        source="pydantic-ai/test_anthropic/test_anthropic_model_thinking_part_redacted.yaml",
        origin=PYDANTIC_AI,
        original_path="test_anthropic/test_anthropic_model_thinking_part_redacted.yaml",
        build=build_pydantic,
        summary=(
            "Anthropic claude-sonnet-4-5, non-streaming: redacted_thinking + text; request 2 "
            "(a new question) sends the redacted data back"
        ),
        provider="anthropic",
        script=anthropic_script,
    ),
    Spec(
        name="anthropic_redacted_stream",
        source="pydantic-ai/test_anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml",
        origin=PYDANTIC_AI,
        original_path="test_anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml",
        build=build_anthropic,
        summary=(
            "Anthropic claude-sonnet-4-5, SSE: two redacted_thinking blocks arriving whole, then "
            "text; 1 synthesized follow-up (user note with `turn: false`)"
        ),
        provider="anthropic",
        script=anthropic_script,
        extra={
            "follow_up": [
                {"role": "user", "content": [{"type": "text", "text": "Go on."}], "turn": False}
            ],
            "follow_up_note": _CLAUDE_TURN_FALSE_NOTE,
        },
    ),
    Spec(
        name="anthropic_stream_tool_use",
        source="openinference/anthropic-js/reasoning-tool-use-streaming.json",
        origin=OPENINFERENCE,
        original_path="reasoning-tool-use-streaming.json",
        build=build_anthropic_js,
        summary=(
            "Anthropic claude-sonnet-4-6, SSE: thinking_delta + signature_delta, text, tool_use "
            "with input_json_delta; 1 synthesized follow-up (the tool result)"
        ),
        provider="anthropic",
        script=anthropic_script,
        extra={
            "request": {
                "model": "claude-sonnet-4-6",
                "max_tokens": 2048,
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is the weather in San Francisco?"}
                        ],
                    }
                ],
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "tools": [_WEATHER_TOOL_ANTHROPIC],
                "stream": True,
            },
            "follow_up": _anthropic_weather_result,
            "follow_up_note": (
                "synthesized client request: request 1, the recorded reply with its signed "
                "thinking (as a client that keeps reasoning sends it) and the tool result; the "
                "reply is synthesized"
            ),
        },
    ),
    Spec(
        name="bedrock_tool_loop",
        source="pydantic-ai/test_bedrock/test_bedrock_anthropic_tool_with_thinking.yaml",
        origin=PYDANTIC_AI,
        original_path="test_bedrock/test_bedrock_anthropic_tool_with_thinking.yaml",
        build=build_pydantic,
        summary=(
            "Bedrock Converse, Claude 3.7 Sonnet, tool loop: reasoningContent (text + signature) + "
            "text + toolUse, then request 2 sends the reasoning back with the tool result"
        ),
        provider="bedrock",
        script=bedrock_script,
    ),
    Spec(
        name="bedrock_redacted",
        source="pydantic-ai/test_bedrock/test_bedrock_model_thinking_part_redacted.yaml",
        origin=PYDANTIC_AI,
        original_path="test_bedrock/test_bedrock_model_thinking_part_redacted.yaml",
        build=build_pydantic,
        summary=(
            "Bedrock Converse, Claude 3.7 Sonnet: reasoningContent.redactedContent + text; "
            "request 2 (a new question) sends the redacted content back"
        ),
        provider="bedrock",
        script=bedrock_script,
    ),
    Spec(
        name="bedrock_stream",
        source="pydantic-ai/test_bedrock/test_bedrock_model_thinking_part_stream.yaml",
        origin=PYDANTIC_AI,
        original_path="test_bedrock/test_bedrock_model_thinking_part_stream.yaml",
        build=build_bedrock,
        summary=(
            "Bedrock converse-stream (binary AWS event stream), Claude Sonnet 4: reasoningContent "
            "text deltas, a signature delta, then text; 1 synthesized follow-up (user note with "
            "`turn: false`, sent to /converse)"
        ),
        provider="bedrock",
        script=bedrock_script,
        extra={
            "follow_up": [{"role": "user", "content": [{"text": "Go on."}], "turn": False}],
            "follow_up_note": _CLAUDE_TURN_FALSE_NOTE,
        },
    ),
)
SPECS = SPECS + CLAUDE_SPECS


# ---------------------------------------------------------------- OpenAI Responses API
#
# The recordings hold native Responses bodies (`input` items, `output` items, SSE events).
# `scripts/openai_responses_*.json` holds each recorded request body (the native client side),
# `echoes` (`{input index: [reply j, output index]}`: which input items repeat which reply's
# output item) and `chat`: the same request as the OpenAI-shaped call a client that keeps
# reasoning makes through LiteLLM's chat bridge (`openai/responses/<model>`), with its own
# `echoes` (`{message index: reply j}`).


def _responses_output(interaction: Interaction) -> list[Json]:
    """A Responses reply's output items; for SSE, each item as `response.output_item.done`
    delivered it (the complete copy clients send back)."""
    body = interaction.response["body"]["string"]
    if "text/event-stream" not in str(interaction.response["headers"].get("content-type")):
        output: list[Json] = json.loads(body).get("output") or []  # none in an error reply
        return output
    done: dict[int, Json] = {}
    for event in _sse_payloads(body):
        if event.get("type") == "response.output_item.done":
            done[int(event["output_index"])] = event["item"]
    return [done[i] for i in sorted(done)]


def _item_text(item: Json) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _same_item(sent: Json, produced: Json) -> bool:
    kind = sent.get("type", "message")
    if kind != produced.get("type") or kind == "reasoning":
        return False
    if kind == "function_call":
        return bool(sent.get("call_id")) and sent.get("call_id") == produced.get("call_id")
    return (
        sent.get("role") == "assistant"
        and bool(sent.get("id"))
        and sent.get("id") == produced.get("id")
    )


def _responses_chat(body: Json) -> Json:
    """A recorded Responses request as the chat call a client that keeps reasoning makes."""
    messages: list[Json] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    reasoning: list[Json] = []
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "reasoning":
            reasoning.append(item)
            continue
        last = messages[-1] if messages else None
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if last is not None and last["role"] == "assistant" and not reasoning:
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]}
            )
        else:
            messages.append({"role": item["role"], "content": _item_text(item)})
        if reasoning and messages[-1]["role"] == "assistant":
            messages[-1]["reasoning_items"] = reasoning
            reasoning = []
    out: Json = {"model": f"responses/{body['model']}", "messages": messages}
    if body.get("tools"):
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description") or "",
                    "parameters": tool["parameters"],
                },
            }
            for tool in body["tools"]
        ]
    if body.get("stream"):
        out["stream"] = True
    return out


def responses_script(spec: Spec, interactions: list[Interaction]) -> Json:
    outputs = [_responses_output(item) for item in interactions]
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        body = json.loads(item.request["body"])
        echoes: dict[str, list[int]] = {}
        for i, sent in enumerate(body["input"]):
            for j in range(k):
                for o, produced in enumerate(outputs[j]):
                    if _same_item(sent, produced):
                        echoes[str(i)] = [j, o]
        chat = _responses_chat(body)
        chat_echoes: dict[str, int] = {}
        for i, message in enumerate(chat["messages"]):
            if message["role"] != "assistant":
                continue
            ids = {call["id"] for call in message.get("tool_calls") or ()}
            for j in range(k):
                produced_ids = {o.get("call_id") for o in outputs[j] if o.get("call_id")}
                texts = "".join(_item_text(o) for o in outputs[j] if o.get("type") == "message")
                if (ids and ids <= produced_ids) or (not ids and message["content"] == texts):
                    chat_echoes[str(i)] = j
        requests.append(
            {"body": body, "echoes": echoes, "chat": {"body": chat, "echoes": chat_echoes}}
        )
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


RESPONSES_SPECS: tuple[Spec, ...] = (
    Spec(
        name="openai_responses_tool_loop",
        source="pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml",
        origin=PYDANTIC_AI,
        original_path="test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml",
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, non-streaming tool loop: reasoning item (encrypted_content, "
            "summary) + function_call, then request 2 sends both back with the call's output"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_stream_tool_call",
        source=(
            "pydantic-ai/test_openai_responses/"
            "test_openai_responses_phase_streamed_on_part_start.yaml"
        ),
        origin=PYDANTIC_AI,
        original_path=(
            "test_openai_responses/test_openai_responses_phase_streamed_on_part_start.yaml"
        ),
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5.5, SSE: reasoning item (encrypted_content), a commentary "
            "message and a function_call; request 2 sends them back with the call's output"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_multi_turn",
        source="pydantic-ai/test_openai_responses/test_openai_responses_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_openai_responses/test_openai_responses_model_thinking_part.yaml",
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, non-streaming: reasoning item + message; request 2 (a new "
            "user question) sends turn 1's reasoning item back"
        ),
        provider="openai",
        script=responses_script,
    ),
    Spec(
        name="openai_responses_modified_history",
        source=(
            "pydantic-ai/test_openai_responses/"
            "test_openai_responses_thinking_with_modified_history.yaml"
        ),
        origin=PYDANTIC_AI,
        original_path=(
            "test_openai_responses/test_openai_responses_thinking_with_modified_history.yaml"
        ),
        build=build_pydantic,
        summary=(
            "OpenAI Responses gpt-5, 3 recorded requests: reasoning item + message; request 2 "
            "sends the reasoning item (with its rs_ id) before an edited, id-less assistant "
            "message and gets 400 'provided without its required following item'; request 3 "
            "sends the edited history without reasoning items and gets 200"
        ),
        provider="openai",
        script=responses_script,
    ),
)
SPECS = SPECS + RESPONSES_SPECS


# ---------------------------------------------------------------- Gemini API
#
# The recordings hold native Gemini bodies (`contents` of `parts`). `scripts/gemini_*.json` holds
# each recorded request as the OpenAI-shaped LiteLLM call a client that keeps reasoning makes
# for it (thought parts as `reasoning_content`, the text part's signature in
# `provider_specific_fields.thought_signatures`, a call's on the tool call), `echoes` as for the
# other scripts, and `native`: the recorded body itself (what the tests compare the wire with).


def _gemini_messages(contents: list[Json]) -> list[Json]:
    messages: list[Json] = []
    for content in contents:
        parts = content.get("parts") or []
        if content.get("role") == "model":
            message: Json = {"role": "assistant", "content": None}
            text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
            thought = "".join(p["text"] for p in parts if p.get("thought"))
            message["content"] = text or None
            if thought:
                message["reasoning_content"] = thought
            signatures = [
                p["thoughtSignature"]
                for p in parts
                if "thoughtSignature" in p and "functionCall" not in p
            ]
            if signatures:
                message["provider_specific_fields"] = {"thought_signatures": signatures}
            calls = []
            for p in parts:
                if "functionCall" in p:
                    call: Json = {
                        "id": p["functionCall"].get("id") or f"call_{len(messages)}_{len(calls)}",
                        "type": "function",
                        "function": {
                            "name": p["functionCall"]["name"],
                            "arguments": json.dumps(p["functionCall"].get("args") or {}),
                        },
                    }
                    if "thoughtSignature" in p:
                        call["provider_specific_fields"] = {
                            "thought_signature": p["thoughtSignature"]
                        }
                    calls.append(call)
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            continue
        for p in parts:
            if "functionResponse" in p:
                response = p["functionResponse"]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": response.get("id") or "",
                        "content": json.dumps(response.get("response")),
                    }
                )
        texts = [p["text"] for p in parts if "text" in p]
        if texts:
            messages.append({"role": "user", "content": "".join(texts)})
        if "turn" in content:  # a synthesized note's flag (never on the wire)
            messages[-1]["turn"] = content["turn"]
    return messages


def _gemini_tools(body: Json) -> list[Json]:
    return [
        {
            "type": "function",
            "function": {
                "name": d["name"],
                "description": d.get("description", ""),
                "parameters": d.get("parameters_json_schema") or d.get("parameters") or {},
            },
        }
        for tool in body.get("tools") or ()
        for d in tool.get("functionDeclarations") or ()
    ]


def gemini_script(spec: Spec, interactions: list[Interaction]) -> Json:
    requests: list[Json] = []
    for item in interactions:
        native = json.loads(item.request["body"])
        model = item.request["uri"].split("/models/")[1].split(":")[0]
        body: Json = {"model": model, "messages": []}
        system = native.get("systemInstruction")
        if system:
            body["messages"].append(
                {"role": "system", "content": "".join(p["text"] for p in system["parts"])}
            )
        body["messages"] += _gemini_messages(native["contents"])
        tools = _gemini_tools(native)
        if tools:
            body["tools"] = tools
        thinking = (native.get("generationConfig") or {}).get("thinkingConfig") or {}
        # LiteLLM's call for it (on Gemini 3+ LiteLLM sends includeThoughts and drops the budget)
        if "thinking_budget" in thinking:
            body["thinking"] = {"type": "enabled", "budget_tokens": thinking["thinking_budget"]}
        if "streamGenerateContent" in item.request["uri"]:
            body["stream"] = True
        model_indices = [i for i, m in enumerate(body["messages"]) if m["role"] == "assistant"]
        # model contents k of request n repeat the reply of the k-th earlier Gemini request
        echoes = {
            str(i): j
            for j, i in enumerate(model_indices)
            if spec.extra.get("echoes", True) and j < len(requests)
        }
        requests.append({"body": body, "echoes": echoes, "native": native})
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


def build_gemini_only(source: Path, spec: Spec) -> list[Interaction]:
    """The recording's Gemini interactions only (another provider answered the others)."""
    interactions = _pydantic_interactions(source / spec.source)
    return [i for i in interactions if "generativelanguage" in i.request["uri"]]


GEMINI_API_BASE = "https://generativelanguage.googleapis.com/v1beta"
"""The recordings call v1beta; LiteLLM picks v1alpha for some models by default."""

GEMINI_OPENINFERENCE = {
    **OPENINFERENCE,
    "original_prefix": "python/instrumentation/openinference-instrumentation-google-genai/tests/",
    "changes": (
        "the recorded request and SSE body (CRLF-separated events) served unchanged; "
        "content-type headers added (the recording has none)"
    ),
}
GEMINI_VERCEL_AI = {
    **VERCEL_AI,
    "changes": (
        "each recorded line framed as an SSE `data:` event ending in CRLF CRLF, the way the "
        "Gemini API streams (no `[DONE]`: Gemini sends none); content-type text/event-stream added "
        "(the recording has no headers)"
    ),
}
_GEMINI_SYNTHESIZED_TEXT = "Synthesized follow-up reply: not a provider recording."


def _gemini_sse_parts(body: str) -> list[Json]:
    """Every part of a Gemini SSE stream, in order (each event is a whole response)."""
    return [
        part
        for payload in _sse_payloads(body.replace("\r\n", "\n"))
        for part in payload["candidates"][0]["content"]["parts"]
    ]


def _gemini_model_content(parts: list[Json]) -> Json:
    """A streamed reply as the `model` content a client that keeps reasoning sends back:
    adjacent unsigned parts of the same kind (thought or answer text) joined, every signed part
    kept as it came (never merged with another part: provider rules §3 (b))."""
    merged: list[Json] = []
    for part in parts:
        last = merged[-1] if merged else None
        if (
            last is not None
            and set(part) <= {"text", "thought"}
            and set(last) <= {"text", "thought"}
            and bool(part.get("thought")) == bool(last.get("thought"))
        ):
            merged[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            merged.append(dict(part))
    return {"role": "model", "parts": merged}


def _gemini_follow_up(previous: Interaction, contents: list[Json], note: str) -> Interaction:
    """A non-streamed request with `contents` to `previous`'s model; a synthesized JSON reply."""
    body = {**json.loads(previous.request["body"]), "contents": contents}
    base, model = previous.request["uri"].split("/models/")
    uri = f"{base}/models/{model.split(':')[0]}:generateContent"
    reply = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": _GEMINI_SYNTHESIZED_TEXT}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
        "modelVersion": model.split(":")[0],
        "responseId": "synthesized-follow-up",
    }
    return Interaction(
        request=_request(uri, body),
        response=_json_response(reply, {"content-type": ["application/json"]}),
        note=note,
    )


def _gemini_follow_ups(first: Interaction, spec: Spec) -> list[Interaction]:
    """`spec.extra["follow_ups"]`: the contents each synthesized request adds, in order."""
    contents = [
        *json.loads(first.request["body"])["contents"],
        _gemini_model_content(_gemini_sse_parts(first.response["body"]["string"])),
    ]
    out: list[Interaction] = []
    for tail, note in spec.extra["follow_ups"]:
        contents = [*contents, *tail]
        out.append(_gemini_follow_up(first, contents, note))
        contents = [*contents, {"role": "model", "parts": [{"text": _GEMINI_SYNTHESIZED_TEXT}]}]
    return out


def build_gemini_chunks(source: Path, spec: Spec) -> list[Interaction]:
    """vercel-ai `*.chunks.txt` of a Gemini stream: payload lines, no request."""
    lines = [
        line.strip()
        for line in (source / spec.source).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for line in lines:
        json.loads(line)  # every line must be one JSON payload
    first = Interaction(
        request=_request(spec.extra["uri"], spec.extra["request"]),
        response={
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": "".join(f"data: {line}\r\n\r\n" for line in lines)},
        },
        note=(
            "request synthesized (the recording has none; the prompt is the one the recorded "
            "answer answers); response = the recorded SSE payloads, framed as `data:` events"
        ),
    )
    return [first, *_gemini_follow_ups(first, spec)]


def build_gemini_vcr(source: Path, spec: Spec) -> list[Interaction]:
    """A plain vcrpy recording of one Gemini stream (openinference: no headers)."""
    raw = yaml.safe_load((source / spec.source).read_text(encoding="utf-8"))
    (item,) = raw["interactions"]
    first = Interaction(
        request={
            "method": item["request"]["method"],
            "uri": item["request"]["uri"],
            "headers": {"content-type": ["application/json"]},
            "body": item["request"]["body"],
        },
        response={
            "status": item["response"]["status"],
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": item["response"]["body"]["string"]},
        },
        note="recorded (request and SSE response; content-type headers added)",
    )
    return [first, *_gemini_follow_ups(first, spec)]


_GEMINI_KEEPING = (
    "request 1's contents, the recorded reply as a client that keeps reasoning sends it back "
    "(the streamed parts in order, adjacent unsigned parts of one kind joined, the signed part "
    "as it came)"
)

GEMINI_SPECS = (
    Spec(
        name="gemini_stream_tool_call",
        source="pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml",
        origin=PYDANTIC_AI,
        original_path="test_google/test_google_streaming_tool_call_thought_signature.yaml",
        build=build_pydantic,
        summary=(
            "Gemini 3 Pro streamed tool loop: a functionCall part with its thoughtSignature, "
            "then request 2 sends it back with the tool result (the recorded client re-sent "
            "the same bytes in URL-safe base64)"
        ),
        provider="gemini",
        api_base=GEMINI_API_BASE,
        script=gemini_script,
    ),
    Spec(
        name="gemini_thinking_part",
        source="pydantic-ai/test_google/test_google_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_google/test_google_model_thinking_part.yaml",
        build=build_pydantic,
        summary=(
            "Gemini 3 Pro: thought part + text part carrying the thoughtSignature; request 2 "
            "(a new user question) sent both back"
        ),
        provider="gemini",
        api_base=GEMINI_API_BASE,
        script=gemini_script,
    ),
    Spec(
        name="gemini_after_other_model",
        source="pydantic-ai/test_google/test_thinking_with_tool_calls_from_other_model.yaml",
        origin=PYDANTIC_AI,
        original_path="test_google/test_thinking_with_tool_calls_from_other_model.yaml",
        build=build_gemini_only,
        summary=(
            "the Gemini 3 Pro request of a conversation whose tool call OpenAI gpt-5 made (the "
            "recorded client put the dummy thoughtSignature on it); the two OpenAI Responses "
            "interactions before it are left out"
        ),
        provider="gemini",
        api_base=GEMINI_API_BASE,
        script=gemini_script,
        extra={"echoes": False},
    ),
    Spec(
        name="gemini_signature_only_stream",
        source="vercel-ai/google/google-reasoning-gemini3.chunks.txt",
        origin=GEMINI_VERCEL_AI,
        original_path="google/src/__fixtures__/google-reasoning-gemini3.chunks.txt",
        build=build_gemini_chunks,
        summary=(
            "Gemini 3 Pro SSE stream with no thought text: answer text, then the thoughtSignature "
            "alone on a trailing part with empty text; 2 synthesized follow-ups (a user note with "
            "`turn: false`, then a new user question)"
        ),
        provider="gemini",
        api_base=GEMINI_API_BASE,
        script=gemini_script,
        extra={
            "uri": f"{GEMINI_API_BASE}/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
            "request": {
                "contents": [
                    {
                        "role": "user",
                        "parts": [{"text": "How many 'r's are in the word 'strawberry'?"}],
                    }
                ]
            },
            "follow_ups": [
                (
                    [{"role": "user", "parts": [{"text": "Spell it out."}], "turn": False}],
                    f"synthesized client request: {_GEMINI_KEEPING}, and a user note with "
                    "`turn: false` (this package's flag for a message that does not start a "
                    "turn; it never reaches the wire); the reply is synthesized",
                ),
                (
                    [{"role": "user", "parts": [{"text": "And in 'raspberry'?"}]}],
                    "synthesized client request: request 2's contents, its synthesized reply "
                    "and a new user question (a new turn); the reply is synthesized",
                ),
            ],
        },
    ),
    Spec(
        name="gemini_35_thoughts_stream",
        source="openinference/google-genai/test_streaming_reasoning.yaml",
        origin=GEMINI_OPENINFERENCE,
        original_path="cassettes/test_instrumentation/test_streaming_reasoning.yaml",
        build=build_gemini_vcr,
        summary=(
            "Gemini 3.5 Flash SSE stream (CRLF-separated events), thinkingConfig.include_thoughts: "
            "thought parts, answer text, then the thoughtSignature alone on a trailing part with "
            "empty text; 1 synthesized follow-up (a new user question)"
        ),
        provider="gemini",
        api_base=GEMINI_API_BASE,
        script=gemini_script,
        extra={
            "follow_ups": [
                (
                    [{"role": "user", "parts": [{"text": "Now a shorter one, please."}]}],
                    f"synthesized client request: {_GEMINI_KEEPING}, and a new user question "
                    "(a new turn: Gemini 3.5+ keeps earlier turns' thinking, all or none); the "
                    "reply is synthesized",
                ),
            ],
        },
    ),
)
SPECS = SPECS + GEMINI_SPECS


def _header_comment(spec: Spec, interactions: list[Interaction]) -> str:
    origin = spec.origin
    lines = [
        "Built by cassettes/build_cassettes.py; regenerate instead of editing by hand.",
        f"Content: {spec.summary}.",
        f"Source: {origin['repository']} at commit {origin['commit']},",
        f"  {origin['original_prefix']}{spec.original_path}",
        f"  (copied unmodified as realdata/{spec.source}).",
        f"Licence: {origin['licence']}; full text in cassettes/{origin['licence_file']}.",
        f"Changes: {origin['changes']}.",
        "Interactions:",
    ]
    for number, interaction in enumerate(interactions, start=1):
        lines.append(f"  {number}. {interaction.note}")
    wrapped = [
        part
        for line in lines
        for part in textwrap.wrap(
            line,
            width=98,
            subsequent_indent=" " * (len(line) - len(line.lstrip()) + 3),
            break_on_hyphens=False,
        )
    ]
    return "".join(f"# {line}\n" for line in wrapped)


def _same_reply(message: Json, reply: Json) -> bool:
    def ids(m: Json) -> list[str]:
        return [call["id"] for call in m.get("tool_calls") or ()]

    return (message.get("content") or "") == (reply.get("content") or "") and ids(message) == ids(
        reply
    )


def client_script(spec: Spec, interactions: list[Interaction]) -> Json:
    """What the client sent, request by request, and which assistant messages repeat a reply.

    `echoes` maps a message index of request k to the index j < k of the request whose reply
    that assistant message sends back, so a test can put its own (live) reply there.
    """
    replies = [_reply_of(item) for item in interactions]
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        body = json.loads(item.request["body"])
        echoes: dict[str, int] = {}
        for i, message in enumerate(body.get("messages") or ()):
            if message.get("role") != "assistant":
                continue
            for j in range(k):
                if _same_reply(message, replies[j]):
                    echoes[str(i)] = j
        requests.append({"body": body, "echoes": echoes})
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


def build(source: Path, out: Path) -> list[Path]:
    written: list[Path] = []
    (out / "licenses").mkdir(parents=True, exist_ok=True)
    (out / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "pydantic-ai" / "LICENSE", out / PYDANTIC_AI["licence_file"])
    shutil.copyfile(source / "vercel-ai" / "LICENSE", out / VERCEL_AI["licence_file"])
    shutil.copyfile(source / "openinference" / "LICENSE", out / OPENINFERENCE["licence_file"])
    for spec in SPECS:
        interactions = spec.build(source, spec)
        cassette = {
            "interactions": [
                {"request": item.request, "response": item.response} for item in interactions
            ],
            "version": 1,
        }
        text = _header_comment(spec, interactions) + yaml.safe_dump(
            cassette, allow_unicode=True, sort_keys=False, width=120
        )
        assert yaml.safe_load(text) == cassette
        target = out / f"{spec.name}.yaml"
        target.write_text(text, encoding="utf-8")
        script = out / "scripts" / f"{spec.name}.json"
        make_script = spec.script or client_script
        script.write_text(
            json.dumps(make_script(spec, interactions), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
        written += [target, script]
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    for path in build(args.source, args.out):
        print(path)


if __name__ == "__main__":
    main()
