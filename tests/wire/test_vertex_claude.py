"""Claude on Vertex AI exactly as it answered, through LiteLLM's real Vertex transport (its
google-auth service-account flow against a local token endpoint): interleaved thinking keeps
its place, the interrupted tool loop keeps its blocks, a loop with no Vertex-signed block goes
with thinking off, on every call path, streamed or not, for a client that drops reasoning and
one that keeps LiteLLM's `thinking_blocks`. The server validates as Claude does
(`VertexClaudeUpstream(strict=True)`, the Anthropic server's checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import (
    READ_FILE,
    THINKING,
    claude_thinking,
    claude_tool_use,
    complete,
    dropping_client,
    keeping_client,
    tool_result,
)
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.vertex_upstream import (
    TOKEN_PATH,
    VertexClaudeUpstream,
    service_account,
)

pytest.importorskip("google.auth", reason="LiteLLM's Vertex transport needs google-auth")

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
CLIENTS = {"drops": dropping_client, "keeps": keeping_client}
SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+vertex0=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1vertex1==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2Xvertex2==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kvertex3==",
]
REDACTED = "EvgFCkYIBxgCKkB2ZXJ0ZXgtcmVkYWN0ZWQtdGhpbmtpbmctMDAwMQ=="
ALL_TURNS = "claude-sonnet-4-6"
CURRENT_TURN = "claude-sonnet-4-5@20250929"


@pytest.fixture(scope="module")
def vertex() -> Iterator[VertexClaudeUpstream]:
    with VertexClaudeUpstream(strict=True) as up:
        yield up


@pytest.fixture(scope="module")
def credentials(vertex: VertexClaudeUpstream) -> str:
    return json.dumps(service_account(vertex.token_uri))


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def call(
    how: str,
    model: str,
    vertex: VertexClaudeUpstream,
    credentials: str,
    messages: list[Any],
    *,
    stream: bool,
) -> Any:
    """One Claude-on-Vertex request with tools and thinking on; LiteLLM's reply message."""
    return await complete(
        how,
        f"vertex_ai/{model}",
        vertex.base_url,
        messages,
        stream=stream,
        tools=[READ_FILE],
        thinking=THINKING,
        max_tokens=2048,
        vertex_credentials=credentials,
        vertex_project="local-project",
        vertex_location="us-east5",
    )


def _assistant(body: dict[str, Any], n: int) -> list[Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"][n]["content"]


INTERLEAVED = {
    "plain": [
        claude_thinking("I need a.py.", SIG[0]),
        claude_tool_use("toolu_v1", "a.py"),
        claude_thinking("And b.py, separately.", SIG[1]),
        claude_tool_use("toolu_v2", "b.py"),
    ],
    "with-text": [
        claude_thinking("I need a.py.", SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        claude_tool_use("toolu_w1", "a.py"),
        claude_thinking("", SIG[3]),
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "Then b.py."},
        claude_tool_use("toolu_w2", "b.py"),
    ],
}


@pytest.mark.parametrize("shape", sorted(INTERLEAVED))
@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_interleaved_blocks_go_back_in_their_original_order(
    how: str,
    stream: bool,
    client: str,
    shape: str,
    vertex: VertexClaudeUpstream,
    credentials: str,
    callback: ReasoningCallback,
) -> None:
    reply = INTERLEAVED[shape]
    vertex.script(
        ALL_TURNS, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}])
    )
    before, refused = len(vertex.bodies(ALL_TURNS)), len(vertex.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    message = await call(how, ALL_TURNS, vertex, credentials, list(history), stream=stream)
    history.append(CLIENTS[client](message))
    history += [tool_result(c["id"]) for c in history[-1]["tool_calls"]]
    done = await call(how, ALL_TURNS, vertex, credentials, list(history), stream=stream)
    assert vertex.refusals[refused:] == []
    assert done.content == "Done."
    wire = vertex.bodies(ALL_TURNS)[before:]
    assert _assistant(wire[1], 0) == reply
    assert callback.stats["errors"] == 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
    how: str,
    stream: bool,
    vertex: VertexClaudeUpstream,
    credentials: str,
    callback: ReasoningCallback,
) -> None:
    """Sonnet 4.5 keeps only the current turn; the user typed after the tool results: the
    loop is still open for Claude, its block goes back."""
    first = [claude_thinking("Read a.py first.", SIG[0]), claude_tool_use("toolu_x1", "a.py")]
    vertex.script(
        CURRENT_TURN, AnthropicReply(first), AnthropicReply([{"type": "text", "text": "Sure."}])
    )
    before, refused = len(vertex.bodies(CURRENT_TURN)), len(vertex.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py."}]
    message = await call(how, CURRENT_TURN, vertex, credentials, history, stream=stream)
    history.append(dropping_client(message))
    history += [tool_result("toolu_x1"), {"role": "user", "content": "Actually, what is b.py?"}]
    answer = await call(how, CURRENT_TURN, vertex, credentials, list(history), stream=stream)
    assert vertex.refusals[refused:] == []
    assert answer.content == "Sure."
    wire = vertex.bodies(CURRENT_TURN)[before:]
    assert _assistant(wire[1], 0) == first
    assert "thinking" in wire[1]
    assert callback.stats["thinking_disabled"] == 0


@pytest.mark.parametrize("how", CALLS)
async def test_blocks_the_anthropic_api_signed_never_reach_vertex(
    how: str, vertex: VertexClaudeUpstream, credentials: str, callback: ReasoningCallback
) -> None:
    """The tool loop started on the Anthropic API (its reply's block is stored) and goes on
    on Vertex, another issuer: the block is left out and thinking goes off for the call,
    instead of Vertex's refusal of a signature it did not issue."""
    model = "claude-sonnet-4-6"
    first = [claude_thinking("Anthropic's own.", SIG[3]), claude_tool_use("toolu_y1", "a.py")]
    vertex.revoked.add(SIG[3])  # Vertex refuses it as an invalid signature
    vertex.script(ALL_TURNS, AnthropicReply([{"type": "text", "text": "Read."}]))
    before, refused = len(vertex.bodies(ALL_TURNS)), len(vertex.refusals)
    with AnthropicUpstream(strict=True) as anthropic:
        anthropic.script(model, AnthropicReply(first))
        history: list[Any] = [{"role": "user", "content": "Read a.py."}]
        message = await complete(
            how,
            f"anthropic/{model}",
            anthropic.base_url,
            history,
            stream=False,
            tools=[READ_FILE],
            thinking=THINKING,
            max_tokens=2048,
        )
    history = [*history, dropping_client(message), tool_result("toolu_y1")]
    answer = await call(how, ALL_TURNS, vertex, credentials, history, stream=False)
    assert answer.content == "Read."
    assert vertex.refusals[refused:] == []
    (sent,) = vertex.bodies(ALL_TURNS)[before:]
    assert "thinking" not in sent
    assert [b["type"] for b in _assistant(sent, 0)] == ["tool_use"]
    assert callback.stats["thinking_disabled"] == 1


def test_the_transport_really_authenticated(vertex: VertexClaudeUpstream) -> None:
    """LiteLLM fetched its access token from the local token endpoint (google-auth ran)."""
    assert any(r.path.endswith(TOKEN_PATH) for r in vertex.received)
    sent = [r for r in vertex.received if ":rawPredict" in r.path or "streamRawPredict" in r.path]
    assert sent and all(r.headers.get("authorization") == "Bearer local-token" for r in sent)
