"""A local server standing in for Bedrock Converse with a non-Claude model (Nova 2, DeepSeek,
Qwen, GLM, MiniMax on Bedrock): it answers `POST /model/{id}/converse` and refuses, as Bedrock
does for those models, a `reasoningContent` that carries a signature. Point LiteLLM at it with
`aws_bedrock_runtime_endpoint`; scripted replies are the assistant's text, by model id."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from ._server import ScriptedServer

SIGNATURE_REFUSAL = (
    "This model doesn't support the reasoningContent.reasoningText.signature field. Remove "
    "reasoningContent.reasoningText.signature and try again."
)
"""Bedrock's ValidationException text for a signed reasoning block sent to a non-Claude model."""


def signed_reasoning(body: dict[str, Any]) -> bool:
    """Whether any message of a Converse body carries a signed `reasoningContent`."""
    for message in body.get("messages") or ():
        for block in message.get("content") or () if isinstance(message, dict) else ():
            reasoning = block.get("reasoningContent") if isinstance(block, dict) else None
            text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
            if isinstance(text, dict) and "signature" in text:
                return True
    return False


class BedrockConverseUpstream(ScriptedServer[str]):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.refusals: list[str] = []

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        parts = path.split("/")
        return unquote(parts[2]) if len(parts) > 3 and parts[1] == "model" else ""

    def answer(self, body: dict[str, Any], reply: str | None) -> tuple[int, str, bytes]:
        if signed_reasoning(body):
            self.refusals.append(SIGNATURE_REFUSAL)
            error = {"message": SIGNATURE_REFUSAL}
            return 400, "application/json", json.dumps(error).encode()
        payload = {
            "output": {"message": {"role": "assistant", "content": [{"text": reply or "ok"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
            "metrics": {"latencyMs": 1},
        }
        return 200, "application/json", json.dumps(payload).encode()
