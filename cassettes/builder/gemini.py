"""Gemini API recordings."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .common import (
    _SYNTHESIZED_TEXT,
    OPENINFERENCE,
    PYDANTIC_AI,
    VERCEL_AI,
    Interaction,
    Json,
    Spec,
    _json_response,
    _pydantic_interactions,
    _request,
    _sse_payloads,
    build_pydantic,
)

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
                "content": {"role": "model", "parts": [{"text": _SYNTHESIZED_TEXT}]},
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
        contents = [*contents, {"role": "model", "parts": [{"text": _SYNTHESIZED_TEXT}]}]
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
