"""A local server standing in for Claude on Vertex AI (`…/publishers/anthropic/models/{model}:
rawPredict` and `:streamRawPredict`, Anthropic Messages bodies without `model`) and for Google's
OAuth token endpoint, so LiteLLM's real Vertex transport (google-auth included) runs against it.

`service_account(server)` is a service-account key, generated on the spot, whose `token_uri` is
this server: pass it as `vertex_credentials` with `api_base=server.base_url`. Replies and the
strict validation are the Anthropic server's (`AnthropicUpstream`)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from .anthropic_upstream import AnthropicReply, AnthropicUpstream

TOKEN_PATH = "/token"


def service_account(token_uri: str, project: str = "local-project") -> dict[str, str]:
    """A service-account key (a fresh RSA key) whose tokens come from `token_uri`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "local-key",
        "private_key": pem,
        "client_email": f"tests@{project}.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


class VertexClaudeUpstream(AnthropicUpstream):
    """Claude on Vertex: the model comes from the path, a stream from `:streamRawPredict`."""

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        if path.endswith(TOKEN_PATH):
            return ""
        tail = unquote(path.rsplit("/models/", 1)[-1])
        return tail.split(":", 1)[0]

    @property
    def token_uri(self) -> str:
        return self.base_url + TOKEN_PATH

    def answer(self, body: dict[str, Any], reply: AnthropicReply | None) -> tuple[int, str, bytes]:
        path = self.path
        if path.endswith(TOKEN_PATH):
            token = {"access_token": "local-token", "expires_in": 3600, "token_type": "Bearer"}
            return 200, "application/json", json.dumps(token).encode()
        body = {**body, "model": self.model_of(path, body)}
        if ":streamRawPredict" in path:
            body["stream"] = True
        return super().answer(body, reply)

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        """Message bodies received (token requests left out), oldest first."""
        with self._lock:
            return [
                r.body
                for r in self.received
                if not r.path.endswith(TOKEN_PATH)
                and (model is None or self.model_of(r.path, r.body) == model)
            ]
