"""Replaying the Ollama / OpenRouter / Mistral / Groq / Cerebras cassettes through real LiteLLM.

The cassettes (`cassettes/build_provider_cassettes.py`) hold provider-native bodies (Ollama
NDJSON, Mistral content chunks, OpenRouter `reasoning_details`), which vcrpy's OpenAI-shaped
helpers in `cassette_utils` do not read, and Ollama's LiteLLM path makes an extra `/api/show`
lookup the recordings do not have. So a local server on 127.0.0.1 answers each chat request
with the next recorded response of the cassette and keeps every request body it received.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm
import yaml
from clients import dropping_client

from litellm_reasoning.testing._server import ScriptedServer

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
Json = dict[str, Any]


class RecordingServer(ScriptedServer[str]):
    """Answers chat requests, in order, with a cassette's recorded responses."""

    def __init__(self) -> None:
        super().__init__()
        self._responses: deque[tuple[int, str, bytes]] = deque()

    def load(self, interactions: list[Json]) -> None:
        with self._lock:
            self._responses.clear()
            for item in interactions:
                response = item["response"]
                headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
                content_type = ";".join(headers.get("content-type") or ["application/json"])
                body = response["body"]["string"]
                data = body if isinstance(body, bytes) else str(body).encode()
                self._responses.append((response["status"]["code"], content_type, data))

    def _next(self, model: str) -> str | None:
        return model  # the response is taken in `answer`, only for chat requests

    def answer(self, body: Json, reply: str | None) -> tuple[int, str, bytes]:
        if "messages" not in body:
            # Ollama's model lookup (`/api/show`); not part of the recordings.
            return 404, "application/json", b'{"error": "not recorded"}'
        with self._lock:
            if not self._responses:
                return 500, "application/json", b'{"error": "no recorded response left"}'
            return self._responses.popleft()

    def chat_bodies(self) -> list[Json]:
        with self._lock:
            return [r.body for r in self.received if "messages" in r.body]

    def chat_paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.received if "messages" in r.body]


@dataclass
class Cassette:
    name: str
    provider: str
    requests: list[Json]
    interactions: list[Json]

    @classmethod
    def load(cls, name: str) -> Cassette:
        script = json.loads((CASSETTES / "scripts" / f"{name}.json").read_text("utf-8"))
        raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text("utf-8"))
        return cls(name, script["provider"], script["requests"], raw["interactions"])

    def recorded_request(self, k: int) -> Json:
        """The provider-native body of request `k` as the cassette holds it."""
        body: Json = json.loads(self.interactions[k]["request"]["body"])
        return body

    def recorded_response(self, k: int) -> str:
        return str(self.interactions[k]["response"]["body"]["string"])


def client_view(message: Any, *, keep: bool) -> Json:
    """What a client sends back of LiteLLM's reply: everything (keep) or only role, content and
    tool calls (drop)."""
    if keep:
        dumped: Json = message.model_dump(exclude_none=True)
        dumped["role"] = "assistant"
        return dumped
    return dropping_client(message)


@dataclass
class Played:
    cassette: Cassette
    wire: list[Json]
    paths: list[str]
    replies: list[Any] = field(default_factory=list)

    def assistant(self, k: int, index: int) -> Json:
        message: Json = self.wire[k]["messages"][index]
        assert message["role"] == "assistant"
        return message


async def send(mode: str, kwargs: Json) -> Any:
    """One LiteLLM call (a stream read to the end); returns the reply message."""

    def assemble(chunks: list[Any]) -> Any:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return built.choices[0].message

    if mode == "async":
        response = await litellm.acompletion(**kwargs)
        if kwargs.get("stream"):
            return assemble([chunk async for chunk in response])
        return response.choices[0].message

    def call() -> Any:
        response = litellm.completion(**kwargs)
        return assemble(list(response)) if kwargs.get("stream") else response.choices[0].message

    return await asyncio.to_thread(call)


async def play(name: str, mode: str, *, keep: bool, server: RecordingServer) -> Played:
    """Every request of the cassette's script, each echoing LiteLLM's earlier replies as the
    client keeps them."""
    cassette = Cassette.load(name)
    server.load(cassette.interactions)
    before = len(server.chat_bodies())
    replies: list[Any] = []
    for request in cassette.requests:
        body = copy.deepcopy(request["body"])
        for index, j in request["echoes"].items():
            body["messages"][int(index)] = client_view(replies[j], keep=keep)
        kwargs: Json = {
            **body,
            "model": f"{cassette.provider}/{body['model']}",
            "api_key": "replay-without-a-key",
        }
        base = server.base_url
        kwargs["api_base"] = base if cassette.provider.startswith("ollama") else base + "/v1"
        replies.append(await send(mode, kwargs))
    wire = server.chat_bodies()[before:]
    paths = server.chat_paths()[before:]
    assert len(wire) == len(cassette.requests)
    return Played(cassette, wire, paths, replies)


REASONING_FIELDS = frozenset(
    {
        "reasoning_content",
        "reasoning",
        "thinking",
        "thinking_blocks",
        "reasoning_items",
        "reasoning_details",
        "provider_specific_fields",
    }
)
