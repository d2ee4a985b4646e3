"""Replaying the cassettes in `cassettes/` through LiteLLM and seeing what reached the wire.

* `Script` (`cassettes/scripts/<name>.json`): what the recorded client sent, request by request,
  and which assistant messages repeat an earlier reply.
* `replay` plays `cassettes/<name>.yaml` through vcrpy and yields a `Wire`: every request body
  LiteLLM's HTTP client sent and the raw response vcrpy answered it with, in order.
* `Provided` reads reasoning, content and tool calls straight from such a raw response (JSON, or
  SSE whose `delta` pieces are joined), independent of LiteLLM's parsing.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vcr
from vcr.cassette import Cassette
from vcr.request import Request

CASSETTE_DIR = Path(__file__).resolve().parent.parent / "cassettes"

RECORD_MODE = os.environ.get("CASSETTE_RECORD_MODE", "none")
"""`none`: replay only. Set to `all` with provider keys to re-record (cassettes/README.md)."""

API_KEY_ENV = {
    "deepseek": "DEEPSEEK_API_KEY",
    "dashscope": "DASHSCOPE_API_KEY",
    "zai": "ZAI_API_KEY",
}

Json = dict[str, Any]


def _text(body: Any) -> str:
    if isinstance(body, bytes):
        return body.decode("utf-8")
    return "" if body is None else str(body)


def sse_payloads(body: str) -> list[Json]:
    """The JSON payloads of an SSE body's `data:` events (without `[DONE]`)."""
    out: list[Json] = []
    for line in body.splitlines():
        if line.startswith("data:"):
            data = line[len("data:") :].strip()
            if data and data != "[DONE]":
                out.append(json.loads(data))
    return out


@dataclass(frozen=True)
class Provided:
    """What the provider sent for one request (choice 0), read from the raw response body."""

    reasoning: str
    content: str
    tool_calls: list[Json]
    """`[{"id", "name", "arguments"}]`, streamed pieces joined."""

    @classmethod
    def parse(cls, content_type: str, body: str) -> Provided:
        if "text/event-stream" in content_type:
            return cls._from_stream(sse_payloads(body))
        message = json.loads(body)["choices"][0]["message"]
        return cls(
            reasoning=message.get("reasoning_content") or "",
            content=message.get("content") or "",
            tool_calls=[
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                for c in message.get("tool_calls") or ()
            ],
        )

    @classmethod
    def _from_stream(cls, chunks: list[Json]) -> Provided:
        reasoning, content = "", ""
        calls: dict[int, Json] = {}
        for chunk in chunks:
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                reasoning += delta.get("reasoning_content") or ""
                content += delta.get("content") or ""
                for piece in delta.get("tool_calls") or ():
                    call = calls.setdefault(piece["index"], {"id": "", "name": "", "arguments": ""})
                    call["id"] = piece.get("id") or call["id"]
                    function = piece.get("function") or {}
                    call["name"] += function.get("name") or ""
                    call["arguments"] += function.get("arguments") or ""
        return cls(reasoning, content, [calls[i] for i in sorted(calls)])


@dataclass(frozen=True)
class Exchange:
    """One request LiteLLM sent and the response vcrpy gave it."""

    uri: str
    body: Json
    content_type: str
    response: str
    """The raw response body vcrpy answered with."""

    @property
    def provided(self) -> Provided:
        """The response read as an OpenAI-shaped reply (only for OpenAI-shaped cassettes)."""
        return Provided.parse(self.content_type, self.response)


@dataclass
class Wire:
    """Every request LiteLLM's HTTP client sent while the cassette was in use, in order."""

    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def bodies(self) -> list[Json]:
        return [exchange.body for exchange in self.exchanges]

    def _see(self, request: Request, response: Json) -> None:
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        content_type = ";".join(headers.get("content-type") or [])
        raw = _text(request.body)
        self.exchanges.append(
            Exchange(
                uri=request.uri,
                body=json.loads(raw) if raw else {},
                content_type=content_type,
                response=_text(response["body"]["string"]),
            )
        )

    def attach(self, cassette: Cassette) -> None:
        """Note every request vcrpy answers from the cassette, or records."""
        play, append = cassette.play_response, cassette.append

        def play_response(request: Request) -> Any:
            response = play(request)  # raises when the cassette has no answer left
            self._see(request, response)
            return response

        def record(request: Request, response: Json) -> None:
            self._see(request, response)
            append(request, response)

        cassette.play_response = play_response  # type: ignore[method-assign]
        cassette.append = record  # type: ignore[method-assign]


@contextmanager
def replay(name: str) -> Iterator[Wire]:
    """Play `cassettes/<name>.yaml` in order, each interaction at most once; on a clean exit,
    check that every interaction was used."""
    recorder = vcr.VCR(
        record_mode=RECORD_MODE,
        match_on=["method", "path"],
        filter_headers=["authorization", "api-key", "x-api-key", "cookie"],
        decode_compressed_response=True,
    )
    wire = Wire()
    with recorder.use_cassette(
        str(CASSETTE_DIR / f"{name}.yaml"),
        allow_playback_repeats=False,
        drop_unused_requests=RECORD_MODE == "all",
    ) as cassette:
        wire.attach(cassette)
        yield wire
        if RECORD_MODE == "none":
            assert cassette.all_played, f"{name}: not every recorded interaction was replayed"


@dataclass(frozen=True)
class Script:
    """`cassettes/scripts/<name>.json`: the client side of a cassette."""

    name: str
    provider: str
    api_base: str | None
    requests: list[Json]

    @classmethod
    def load(cls, name: str) -> Script:
        raw = json.loads((CASSETTE_DIR / "scripts" / f"{name}.json").read_text(encoding="utf-8"))
        return cls(name, raw["provider"], raw["api_base"], raw["requests"])

    def recorded(self, k: int) -> Json:
        """A copy of the body the recorded client sent as request `k`."""
        body: Json = copy.deepcopy(self.requests[k]["body"])
        return body

    def echoes(self, k: int) -> dict[int, int]:
        """`{message index: j}`: assistant messages of request `k` that send reply `j` back."""
        return {int(i): j for i, j in self.requests[k]["echoes"].items()}

    def request(self, k: int, replies: list[Provided], *, keep_reasoning: bool) -> Json:
        """Request `k` as a client sends it after receiving `replies`.

        The recorded request, with each assistant message that repeats a reply rebuilt from
        `replies` (replaying, these are the recorded replies, so nothing changes; re-recording,
        tool-call ids follow the new replies). A client that drops reasoning removes
        `reasoning_content` from every assistant message and keeps everything else.
        """
        body = self.recorded(k)
        messages: list[Json] = body["messages"]
        renamed: dict[str, str] = {}
        for index, j in self.echoes(k).items():
            old, reply = messages[index], replies[j]
            message: Json = {"role": "assistant", "content": reply.content or None}
            if "reasoning_content" in old:
                message["reasoning_content"] = reply.reasoning
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                    for call in reply.tool_calls
                ]
            for before, after in zip(old.get("tool_calls") or (), reply.tool_calls, strict=True):
                renamed[before["id"]] = after["id"]
            messages[index] = message
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") in renamed:
                message["tool_call_id"] = renamed[message["tool_call_id"]]
        if not keep_reasoning:
            body["messages"] = without_reasoning(messages)
        return body


def without_reasoning(messages: list[Json]) -> list[Json]:
    """`messages` as a client that drops reasoning sends them back."""
    return [
        {k: v for k, v in m.items() if k != "reasoning_content"}
        if m.get("role") == "assistant"
        else m
        for m in copy.deepcopy(messages)
    ]


def litellm_kwargs(script: Script, body: Json) -> Json:
    """`litellm.completion` arguments that make LiteLLM send `body` to the recording's URL."""
    passed = {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "n",
        "stream",
        "stream_options",
        "thinking",
    }
    unknown = set(body) - passed
    assert not unknown, f"{script.name}: no mapping for request fields {sorted(unknown)}"
    kwargs: Json = {key: value for key, value in body.items() if key in passed}
    kwargs["model"] = f"{script.provider}/{body['model']}"
    if "thinking" in kwargs:
        # LiteLLM 1.106.12 hands `thinking=` for zai to the openai SDK as a keyword it rejects
        # ("Completions.create() got an unexpected keyword argument 'thinking'"); 1.110.2 takes
        # it. `extra_body` puts the same JSON on the wire with both.
        kwargs["extra_body"] = {"thinking": kwargs.pop("thinking")}
    kwargs["api_key"] = os.environ.get(API_KEY_ENV[script.provider], "replay-without-a-key")
    if script.api_base:
        kwargs["api_base"] = script.api_base
    return kwargs
