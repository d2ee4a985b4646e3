"""Build the Ollama, OpenRouter, Mistral, Groq and Cerebras cassettes from real recordings.

Run once, like `build_cassettes.py` (whose helpers and conventions it shares); the output is
committed and the tests only read it:

    python cassettes/build_provider_cassettes.py [--source /path/to/realdata]

Each cassette is a vcrpy cassette (`interactions:`, request `body` as a JSON string, response
`body: {string: ...}`) with a header comment naming its source file, commit and licence and
saying which interactions are recorded and which were synthesized. `scripts/<name>.json` holds
the client side as LiteLLM calls (OpenAI-shaped messages, the provider prefix, `echoes`).

Recordings with one request get one synthesized follow-up: request 1's messages, the recorded
reply as a client that keeps reasoning sends it in the provider's own format (Ollama `thinking`,
OpenRouter `reasoning_details` merged per `(type, index)` when streamed, Mistral's closed
thinking chunk), and a next message (a tool result, or a user note with `turn: false`); its
reply is a minimal reply in the provider's format whose text says it is not a recording.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from build_cassettes import (
    _SYNTHESIZED_TEXT,
    DEFAULT_SOURCE,
    HERE,
    OPENINFERENCE,
    PYDANTIC_AI,
    Interaction,
    Json,
    Spec,
    _dumps,
    _header_comment,
    _json_response,
    _pydantic_interactions,
    _request,
    _sse_payloads,
    _synthesized_reply,
)

OLLAMA = {
    **OPENINFERENCE,
    "original_prefix": "python/instrumentation/openinference-instrumentation-ollama/tests/**/",
    "changes": (
        "the recorded NDJSON / JSON response body served unchanged as application/x-ndjson or "
        "application/json (the recording has no headers)"
    ),
}
_TURN_FALSE = {"role": "user", "content": "Go on.", "turn": False}
_NOTE_TURN_FALSE = (
    "synthesized client request: request 1's messages, the recorded reply with its reasoning "
    "(as a client that keeps reasoning sends it, in the provider's own format) and a user note "
    "with `turn: false` (this package's flag for a message that does not start a turn; it never "
    "reaches the wire); the reply is synthesized"
)


# ---------------------------------------------------------------- replies as clients keep them


def ollama_reply(body: str) -> Json:
    """Ollama's assistant message (native), NDJSON pieces joined."""
    lines = [json.loads(line) for line in body.split("\n") if line.strip()]
    message: Json = {"role": "assistant", "content": "", "thinking": ""}
    for line in lines:
        piece = line.get("message") or {}
        message["content"] += piece.get("content") or ""
        message["thinking"] += piece.get("thinking") or ""
        if piece.get("tool_calls"):
            message["tool_calls"] = piece["tool_calls"]
    return message


def merged_details(chunks: list[Json]) -> list[Json]:
    """OpenRouter's streamed `reasoning_details`, merged per `(type, index)` as OpenRouter's
    guide asks (fragments of text / summary / data joined, a later signature kept)."""
    items: dict[tuple[Any, Any], Json] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            for delta in (choice.get("delta") or {}).get("reasoning_details") or ():
                key = (delta.get("type"), delta.get("index"))
                if key not in items:
                    items[key] = dict(delta)
                    continue
                item = items[key]
                for name, value in delta.items():
                    if name in ("text", "summary", "data"):
                        item[name] = (item.get(name) or "") + value
                    elif value not in (None, ""):
                        item[name] = value
    return list(items.values())


def openrouter_reply(interaction: Interaction) -> Json:
    """The OpenRouter assistant message with `reasoning_details` (streams assembled)."""
    body = interaction.response["body"]["string"]
    if "text/event-stream" not in str(interaction.response["headers"].get("content-type")):
        message = json.loads(body)["choices"][0]["message"]
        return {
            "role": "assistant",
            "content": message["content"],
            "reasoning_details": message["reasoning_details"],
        }
    chunks = _sse_payloads(body)
    content = "".join(
        (choice.get("delta") or {}).get("content") or ""
        for chunk in chunks
        for choice in chunk.get("choices") or ()
    )
    return {"role": "assistant", "content": content, "reasoning_details": merged_details(chunks)}


def mistral_reply(body: str) -> Json:
    """The Magistral assistant message: its thinking chunk (pieces joined, closed), then text."""
    thinking, text = "", ""
    for chunk in _sse_payloads(body):
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if isinstance(content, str):
                text += content
                continue
            for part in content or ():
                if part.get("type") == "thinking":
                    thinking += "".join(t.get("text", "") for t in part["thinking"])
                elif part.get("type") == "text":
                    text += part.get("text", "")
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": thinking}], "closed": True},
            {"type": "text", "text": text},
        ],
    }


# ---------------------------------------------------------------- builders


def _follow(
    first: Interaction, reply: Json, tail: list[Json], response: Json, note: str
) -> Interaction:
    body = json.loads(first.request["body"])
    follow = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    follow["messages"] = [*body["messages"], reply, *tail]
    follow["stream"] = False
    return Interaction(_request(first.request["uri"], follow), response, note)


def _ollama_response(model: str) -> Json:
    reply = {
        "model": model,
        "created_at": "1970-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": _SYNTHESIZED_TEXT},
        "done": True,
        "done_reason": "stop",
    }
    return _json_response(reply, {"content-type": ["application/json"]})


def build_ollama(source: Path, spec: Spec) -> list[Interaction]:
    raw = yaml.safe_load((source / spec.source).read_text(encoding="utf-8"))
    (item,) = raw["interactions"]
    body = item["response"]["body"]["string"]
    streamed = json.loads(item["request"]["body"]).get("stream")
    first = Interaction(
        request={
            "method": "POST",
            "uri": item["request"]["uri"],
            "headers": {"content-type": ["application/json"]},
            "body": item["request"]["body"],
        },
        response={
            "status": item["response"]["status"],
            "headers": {
                "content-type": ["application/x-ndjson" if streamed else "application/json"]
            },
            "body": {"string": body},
        },
        note="recorded (request and response; headers added, the recording has none)",
    )
    reply = ollama_reply(body)
    tail = spec.extra["follow_up"](reply)
    model = json.loads(item["request"]["body"])["model"]
    return [first, _follow(first, reply, tail, _ollama_response(model), spec.extra["note"])]


def build_openrouter(source: Path, spec: Spec) -> list[Interaction]:
    (first,) = _pydantic_interactions(source / spec.source)
    model = json.loads(first.request["body"])["model"]
    response = _json_response(_synthesized_reply(model, 2), {"content-type": ["application/json"]})
    return [
        first,
        _follow(first, openrouter_reply(first), [_TURN_FALSE], response, _NOTE_TURN_FALSE),
    ]


def build_mistral(source: Path, spec: Spec) -> list[Interaction]:
    (first,) = _pydantic_interactions(source / spec.source)
    first.request["uri"] = first.request["uri"].split("#", 1)[0]
    model = json.loads(first.request["body"])["model"]
    response = _json_response(_synthesized_reply(model, 2), {"content-type": ["application/json"]})
    reply = mistral_reply(first.response["body"]["string"])
    return [first, _follow(first, reply, [_TURN_FALSE], response, _NOTE_TURN_FALSE)]


def build_recorded(source: Path, spec: Spec) -> list[Interaction]:
    return _pydantic_interactions(source / spec.source)


def build_groq(source: Path, spec: Spec) -> list[Interaction]:
    """The recorded replies (April 2025) predate Groq's `service_tier` field, which LiteLLM's
    Groq parser reads unconditionally (1.106.12 raises without it): add the value Groq sends
    today, `on_demand`, to each reply body, and say so in the header."""
    interactions = _pydantic_interactions(source / spec.source)
    for item in interactions:
        reply = json.loads(item.response["body"]["string"])
        reply.setdefault("service_tier", "on_demand")
        item.response["body"]["string"] = _dumps(reply)
    return interactions


# ---------------------------------------------------------------- scripts (LiteLLM calls)


def _openai_tool(tool: Json) -> Json:
    return {"type": "function", "function": tool["function"]}


def _as_litellm_message(message: Json) -> Json:
    """A provider-native message as the OpenAI-shaped message a LiteLLM client sends."""
    out: Json = {"role": message["role"]}
    content = message.get("content")
    if isinstance(content, list):  # Mistral chunks
        thinking = [p for p in content if p.get("type") == "thinking"]
        content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        if thinking:
            out["reasoning_content"] = "".join(t["text"] for t in thinking[0]["thinking"])
    out["content"] = content
    if message.get("thinking"):
        out["reasoning_content"] = message["thinking"]
    if message.get("reasoning_details"):
        out["reasoning_details"] = message["reasoning_details"]
    if message.get("reasoning"):
        out["reasoning"] = message["reasoning"]
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call.get("id") or call["function"].get("id"),
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": _dumps(call["function"]["arguments"])
                    if isinstance(call["function"]["arguments"], dict)
                    else call["function"]["arguments"],
                },
            }
            for call in message["tool_calls"]
        ]
    for key in ("tool_call_id", "turn"):
        if key in message:
            out[key] = message[key]
    return out


def provider_script(spec: Spec, interactions: list[Interaction]) -> Json:
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        native = json.loads(item.request["body"])
        body: Json = {"model": native["model"]}
        messages = [_as_litellm_message(m) for m in native["messages"]]
        body["messages"] = messages
        if native.get("tools"):
            body["tools"] = [_openai_tool(t) for t in native["tools"]]
        if native.get("stream"):
            body["stream"] = True
        for key in ("reasoning", "reasoning_format"):
            if key in native:
                body.setdefault("extra_body", {})[key] = native[key]
        echoes = {
            str(i): j
            for i, message in enumerate(messages)
            if message["role"] == "assistant"
            for j in range(k)
            if i == len(json.loads(interactions[j].request["body"])["messages"])
        }
        requests.append({"body": body, "echoes": echoes})
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


def _tool_result(reply: Json) -> list[Json]:
    (call,) = reply["tool_calls"]
    return [
        {
            "role": "tool",
            "tool_call_id": call.get("id") or call["function"].get("id"),
            "content": '{"city": "Paris", "temperature_c": 18}',
        }
    ]


def _pyd(
    name: str, path: str, summary: str, provider: str, build: Any, origin: Json = PYDANTIC_AI
) -> Spec:
    return Spec(
        name=name,
        source=f"pydantic-ai/{path}",
        origin=origin,
        original_path=path,
        build=build,
        summary=summary,
        provider=provider,
        script=provider_script,
    )


GROQ_ORIGIN = {
    **PYDANTIC_AI,
    "changes": PYDANTIC_AI["changes"]
    + "; `service_tier: on_demand` added to each reply (LiteLLM's Groq parser requires it, "
    "the April 2025 recording predates it)",
}

PROVIDER_SPECS: tuple[Spec, ...] = (
    Spec(
        name="ollama_tool_call",
        source="openinference/ollama/test_chat_with_tool_call.yaml",
        origin=OLLAMA,
        original_path="cassettes/test_chat_with_tool_call.yaml",
        build=build_ollama,
        summary=(
            "Ollama qwen3.6 /api/chat, non-streaming: message.thinking + tool_calls; 1 "
            "synthesized follow-up (the tool result)"
        ),
        provider="ollama_chat",
        script=provider_script,
        extra={
            "follow_up": _tool_result,
            "note": (
                "synthesized client request: request 1, the recorded reply with its `thinking` "
                "and tool call (as a client that keeps reasoning sends it) and the tool result; "
                "the reply is synthesized"
            ),
        },
    ),
    Spec(
        name="ollama_stream",
        source="openinference/ollama/test_chat_stream.yaml",
        origin=OLLAMA,
        original_path="cassettes/test_chat_stream.yaml",
        build=build_ollama,
        summary=(
            "Ollama qwen3.6 /api/chat, NDJSON stream: message.thinking pieces, then content; 1 "
            "synthesized follow-up (user note with `turn: false`)"
        ),
        provider="ollama_chat",
        script=provider_script,
        extra={"follow_up": lambda reply: [_TURN_FALSE], "note": _NOTE_TURN_FALSE},
    ),
    _pyd(
        "openrouter_claude_signed",
        "test_openrouter/test_openrouter_map_messages_reasoning.yaml",
        "OpenRouter anthropic/claude-3.7-sonnet:thinking, non-streaming: reasoning_details "
        "[reasoning.text with an Anthropic signature]; 1 synthesized follow-up",
        "openrouter",
        build_openrouter,
    ),
    _pyd(
        "openrouter_glm_text",
        "test_openrouter/test_openrouter_with_reasoning.yaml",
        "OpenRouter z-ai/glm-4.6, non-streaming: reasoning_details [reasoning.text, format "
        "unknown, no signature]; 1 synthesized follow-up",
        "openrouter",
        build_openrouter,
    ),
    _pyd(
        "openrouter_claude_stream",
        "test_openrouter/test_openrouter_streaming_reasoning.yaml",
        "OpenRouter anthropic/claude-sonnet-4.5, SSE: reasoning_details text pieces, the "
        "signature in a later delta; 1 synthesized follow-up",
        "openrouter",
        build_openrouter,
    ),
    _pyd(
        "openrouter_o3_encrypted_stream",
        "test_openrouter/test_openrouter_stream_with_reasoning.yaml",
        "OpenRouter openai/o3, SSE: one reasoning.encrypted detail (openai-responses-v1, with "
        "an rs_ id); 1 synthesized follow-up",
        "openrouter",
        build_openrouter,
    ),
    _pyd(
        "mistral_magistral_stream",
        "test_mistral/test_mistral_model_thinking_part_iter.yaml",
        "Mistral magistral-medium-latest, SSE: content thinking chunks, then text; 1 "
        "synthesized follow-up",
        "mistral",
        build_mistral,
    ),
    _pyd(
        "groq_thinking_part",
        "test_groq/test_groq_model_thinking_part.yaml",
        "Groq deepseek-r1-distill-llama-70b: request 1 reasoning_format raw (<think> in "
        "content), request 2 (a new question) reasoning_format parsed; history re-sent without "
        "any reasoning",
        "groq",
        build_groq,
        GROQ_ORIGIN,
    ),
    _pyd(
        "cerebras_reasoning_multiturn",
        "test_cerebras/test_cerebras_thinking_part_survives_multiturn.yaml",
        "Cerebras gpt-oss-120b: message.reasoning; request 2 (a new question) sends it back as "
        "`reasoning` on the assistant message and is accepted",
        "cerebras",
        build_recorded,
    ),
)


def build(source: Path, out: Path) -> list[Path]:
    written: list[Path] = []
    for spec in PROVIDER_SPECS:
        interactions = spec.build(source, spec)
        cassette = {
            "interactions": [
                {"request": item.request, "response": item.response} for item in interactions
            ],
            "version": 1,
        }
        header = _header_comment(spec, interactions).replace(
            "cassettes/build_cassettes.py", "cassettes/build_provider_cassettes.py"
        )
        text = header + yaml.safe_dump(cassette, allow_unicode=True, sort_keys=False, width=120)
        assert yaml.safe_load(text) == cassette
        target = out / f"{spec.name}.yaml"
        target.write_text(text, encoding="utf-8")
        assert spec.script is not None
        script = out / "scripts" / f"{spec.name}.json"
        script.write_text(
            json.dumps(spec.script(spec, interactions), ensure_ascii=False, indent=1) + "\n",
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
