"""Sources, the `Interaction` / `Spec` model, shared helpers and the converters of pydantic-ai
and vercel-ai recordings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent.parent
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

_SYNTHESIZED_TEXT = "Synthesized follow-up reply: not a provider recording."


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


def _same_reply(message: Json, reply: Json) -> bool:
    def ids(m: Json) -> list[str]:
        return [call["id"] for call in m.get("tool_calls") or ()]

    return (message.get("content") or "") == (reply.get("content") or "") and ids(message) == ids(
        reply
    )
