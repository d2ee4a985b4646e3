"""A local Gemini API server on 127.0.0.1 (`POST /v1beta/models/<model>:generateContent` and
`:streamGenerateContent?alt=sse`) that answers with scripted parts and keeps every request body.

Gemini names the model in the URL, not the body, so replies are scripted per model taken from
the path. A reply is a list of Gemini parts (`{"text", "thought"}`, `{"functionCall"}`, each
maybe with a `thoughtSignature`); streamed, each chunk is a whole `GenerateContentResponse`
(by default one part per chunk, the last one carrying `finishReason`), the way Gemini streams.
Point LiteLLM's `api_base` for `gemini/` models at `base_url`.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..core.extract import signature_bytes
from ._server import Received, ScriptedServer

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>\w+)")


@dataclass
class GeminiReply:
    """One scripted answer."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[list[dict[str, Any]]] | None = None
    """Streamed: the parts of each chunk (default: one chunk per part)."""
    status: int = 200


def response_json(
    model: str, parts: list[dict[str, Any]], *, finish: bool = True
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 10,
            "totalTokenCount": 20,
        },
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:22],
    }


def sse_from_reply(model: str, reply: GeminiReply) -> str:
    chunks = reply.chunks if reply.chunks is not None else [[part] for part in reply.parts]
    out = [
        "data: " + json.dumps(response_json(model, parts, finish=i == len(chunks) - 1)) + "\r\n\r\n"
        for i, parts in enumerate(chunks)
    ]
    return "".join(out)


def model_of(path: str) -> tuple[str, bool]:
    """The model a request path names, and whether it asks for a stream."""
    match = _PATH.search(path)
    if match is None:
        return "", False
    return match["model"], match["method"] == "streamGenerateContent"


class GeminiUpstream(ScriptedServer[GeminiReply]):
    """The Gemini API. LiteLLM calls `<api_base>/models/<model>:<method>`."""

    base_path = "/v1beta"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.revoked: set[bytes] = set()
        """Thought signatures (their bytes) refused as the API refuses another project's."""
        self.refusals: list[str] = []
        server = self
        base = self._server.RequestHandlerClass

        class Handler(base):  # type: ignore[valid-type,misc]
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.received.append(Received(self.path, body, headers))
                model, stream = model_of(self.path)
                refused = server.refusal(body)
                if refused is not None:
                    self._send(*refused)
                    return
                self._send(*server.reply_for(model, stream, server._next(model)))

        self._server.RequestHandlerClass = Handler

    def refusal(self, body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        """The Gemini API's answer to a thought signature it cannot verify."""
        contents = body.get("contents")
        for content in contents if isinstance(contents, list) and self.revoked else []:
            for part in content.get("parts") or [] if isinstance(content, dict) else []:
                signature = part.get("thoughtSignature") if isinstance(part, dict) else None
                if isinstance(signature, str) and signature_bytes(signature) in self.revoked:
                    message = "Corrupted thought signature."
                    self.refusals.append(message)
                    error = {
                        "error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
                    }
                    return 400, "application/json", json.dumps(error).encode()
        return None

    def reply_for(
        self, model: str, stream: bool, reply: GeminiReply | None
    ) -> tuple[int, str, bytes]:
        if reply is None:
            error = {
                "error": {"code": 400, "message": "no scripted reply", "status": "INVALID_ARGUMENT"}
            }
            return 400, "application/json", json.dumps(error).encode()
        if stream:
            return reply.status, "text/event-stream", sse_from_reply(model, reply).encode()
        body = json.dumps(response_json(model, reply.parts)).encode()
        return reply.status, "application/json", body

    def answer(self, body: dict[str, Any], reply: GeminiReply | None) -> tuple[int, str, bytes]:
        return self.reply_for("", False, reply)

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        """Request bodies received for `model`, oldest first."""
        with self._lock:
            return [r.body for r in self.received if model_of(r.path)[0] == model]
