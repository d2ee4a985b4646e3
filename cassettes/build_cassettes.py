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
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        script.write_text(
            json.dumps(client_script(spec, interactions), ensure_ascii=False, indent=1) + "\n",
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
