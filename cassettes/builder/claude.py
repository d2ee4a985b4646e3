"""Claude recordings: the Anthropic API and Bedrock (Converse and invoke)."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from .common import (
    _SYNTHESIZED_TEXT,
    OPENINFERENCE,
    PYDANTIC_AI,
    Interaction,
    Json,
    Spec,
    _dumps,
    _headers,
    _json_response,
    _pydantic_interactions,
    _request,
    _same_reply,
    _sse_payloads,
    build_pydantic,
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
