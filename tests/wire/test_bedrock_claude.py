"""Claude on Bedrock Converse exactly as it answered: interleaved thinking keeps its place among
the reply's blocks, the interrupted tool loop keeps its blocks, and no assistant message goes
out empty or holding only reasoning, on every call path (the sync one included: LiteLLM signs
its Converse body before any hook), streamed (AWS event stream) or not, for a client that drops
reasoning and one that keeps LiteLLM's `thinking_blocks`.

The local server is strict (`BedrockClaudeUpstream`): it refuses as Bedrock does (an empty
message, a reasoning-only prefill) and as Claude behind it does (thinking not first, an
answered tool use without its block, a latest assistant message differing from its reply),
with Bedrock's texts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import (
    READ_FILE as TOOL,
)
from clients import (
    THINKING,
    complete,
    dropping_client,
    keeping_client,
)
from clients import (
    claude_thinking as _thinking,
)
from clients import (
    claude_tool_use as _use,
)
from clients import (
    tool_result as _result,
)
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply
from litellm_reasoning.testing.bedrock_upstream import (
    PREFILL_REFUSAL,
    BedrockClaudeUpstream,
    BedrockInvokeClaudeUpstream,
    converse_block,
    empty_content_refusal,
)

pytestmark = pytest.mark.usefixtures("fake_aws")

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+bedrock0=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1bedrock1==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2Xbedrock2==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kbedrock3==",
]
REDACTED = "EvgFCkYIBxgCKkBiZWRyb2NrLXJlZGFjdGVkLXRoaW5raW5nLTAwMDE="
ALL_TURNS = "us.anthropic.claude-sonnet-4-6"  # earlier turns' thinking kept in context
CURRENT_TURN = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


CLIENTS = {"drops": dropping_client, "keeps": keeping_client}


Server = BedrockClaudeUpstream | BedrockInvokeClaudeUpstream
ROUTES = ["converse", "invoke"]
"""LiteLLM's two Bedrock routes for Claude: Converse (the default) and `bedrock/invoke/`
(Anthropic Messages bodies inside Bedrock's framing)."""


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Server]]:
    with (
        BedrockClaudeUpstream(strict=True) as converse,
        BedrockInvokeClaudeUpstream(strict=True) as invoke,
    ):
        yield {"converse": converse, "invoke": invoke}


@pytest.fixture
def bedrock(servers: dict[str, Server]) -> Server:
    return servers["converse"]


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def call(how: str, model: str, bedrock: Server, messages: list[Any], *, stream: bool) -> Any:
    """One Claude-on-Bedrock request (the route `bedrock` serves) with tools and thinking on;
    LiteLLM's reply."""
    route = "invoke" if isinstance(bedrock, BedrockInvokeClaudeUpstream) else "converse"
    return await complete(
        how,
        f"bedrock/{route}/{model}",
        bedrock.base_url,
        messages,
        stream=stream,
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
    )


def _assistant(body: dict[str, Any], n: int) -> list[Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"][n]["content"]


def _as_sent(blocks: list[dict[str, Any]], route: str = "converse") -> list[dict[str, Any]]:
    """A reply's blocks as a request on `route` carries them back."""
    return [converse_block(b) for b in blocks] if route == "converse" else blocks


# ------------------------------------------------------------------ interleaved thinking


INTERLEAVED = {
    "plain": [
        _thinking("I need a.py.", SIG[0]),
        _use("tooluse_a1", "a.py"),
        _thinking("And b.py, separately.", SIG[1]),
        _use("tooluse_a2", "b.py"),
    ],
    "with-text": [
        _thinking("I need a.py.", SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        _use("tooluse_b1", "a.py"),
        _thinking("Now b.py.", SIG[3]),
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "Then b.py."},
        _use("tooluse_b2", "b.py"),
    ],
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("shape", sorted(INTERLEAVED))
@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_interleaved_blocks_go_back_in_their_original_order(
    how: str,
    stream: bool,
    client: str,
    shape: str,
    route: str,
    servers: dict[str, Server],
    callback: ReasoningCallback,
) -> None:
    bedrock = servers[route]
    reply = INTERLEAVED[shape]
    bedrock.script(
        ALL_TURNS, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}])
    )
    before, refused = len(bedrock.bodies()), len(bedrock.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    message = await call(how, ALL_TURNS, bedrock, list(history), stream=stream)
    history.append(CLIENTS[client](message))
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    done = await call(how, ALL_TURNS, bedrock, list(history), stream=stream)
    assert bedrock.refusals[refused:] == []
    assert done.content == "Done."
    wire = bedrock.bodies()[before:]
    assert _assistant(wire[1], 0) == _as_sent(reply, route)
    assert callback.stats["errors"] == 0


async def test_all_turns_keeps_every_earlier_message_in_its_order(
    bedrock: Server, callback: ReasoningCallback
) -> None:
    """After a new turn the earlier interleaved reply still goes back exactly as it came (the
    request extends the previous one), on the sync path too."""
    reply = INTERLEAVED["plain"]
    closing = [_thinking("Both read.", SIG[2]), {"type": "text", "text": "Done."}]
    bedrock.script(
        ALL_TURNS,
        AnthropicReply(reply),
        AnthropicReply(closing),
        AnthropicReply([{"type": "text", "text": "Bye."}]),
    )
    before = len(bedrock.bodies())
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    history.append(
        dropping_client(await call("completion", ALL_TURNS, bedrock, history, stream=False))
    )
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    history.append(
        dropping_client(await call("completion", ALL_TURNS, bedrock, history, stream=True))
    )
    history.append({"role": "user", "content": "Thanks."})
    await call("acompletion", ALL_TURNS, bedrock, list(history), stream=False)
    wire = bedrock.bodies()[before:]
    assert _assistant(wire[2], 0) == _as_sent(reply)
    assert _assistant(wire[2], 1) == _as_sent(closing)


# ------------------------------------------------------------------ the interrupted tool loop


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
    how: str, stream: bool, route: str, servers: dict[str, Server], callback: ReasoningCallback
) -> None:
    """Sonnet 4.5 keeps only the current turn; the user typed after the tool results. LiteLLM
    merges results and question into one user message: the loop is open, its block goes back."""
    bedrock = servers[route]
    first = [_thinking("Read a.py first.", SIG[0]), _use("tooluse_c1", "a.py")]
    bedrock.script(
        CURRENT_TURN, AnthropicReply(first), AnthropicReply([{"type": "text", "text": "Sure."}])
    )
    before, refused = len(bedrock.bodies()), len(bedrock.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py."}]
    history.append(dropping_client(await call(how, CURRENT_TURN, bedrock, history, stream=stream)))
    history += [_result("tooluse_c1"), {"role": "user", "content": "Actually, what is b.py?"}]
    answer = await call(how, CURRENT_TURN, bedrock, list(history), stream=stream)
    assert bedrock.refusals[refused:] == []
    assert answer.content == "Sure."
    wire = bedrock.bodies()[before:]
    assert _assistant(wire[1], 0) == _as_sent(first, route)
    assert "thinking" in (wire[1] if route == "invoke" else wire[1]["additionalModelRequestFields"])
    assert callback.stats["thinking_disabled"] == 0


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("how", CALLS)
async def test_a_tool_loop_with_no_block_to_send_goes_with_thinking_off(
    how: str, route: str, servers: dict[str, Server], callback: ReasoningCallback
) -> None:
    """The tool calls came from another provider (nothing Bedrock signed): thinking goes off
    for this call, the sync path included, instead of Claude's 400."""
    bedrock = servers[route]
    bedrock.script(ALL_TURNS, AnthropicReply([{"type": "text", "text": "Read."}]))
    before, refused = len(bedrock.bodies()), len(bedrock.refusals)
    history: list[Any] = [
        {"role": "user", "content": "Read a.py."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_other1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        _result("call_other1"),
    ]
    answer = await call(how, ALL_TURNS, bedrock, history, stream=False)
    assert bedrock.refusals[refused:] == []
    assert answer.content == "Read."
    (sent,) = bedrock.bodies()[before:]
    assert "thinking" not in sent
    assert "thinking" not in (sent.get("additionalModelRequestFields") or {})
    assert callback.stats["thinking_disabled"] == 1


# ------------------------------------------------------------------ guards


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_no_reasoning_only_assistant_message_reaches_bedrock(
    how: str, bedrock: Server, callback: ReasoningCallback
) -> None:
    """A reply that was only thinking (cut at max_tokens) comes back from the client as an
    empty-text assistant message before the user's next line: its block is not put on it (a
    reasoning-only message is refused), so the request is what it would be without the
    callback."""
    bedrock.script(
        ALL_TURNS,
        AnthropicReply([_thinking("Hmm, long.", SIG[1])], stop_reason="max_tokens"),
        AnthropicReply([{"type": "text", "text": "Go on."}]),
    )
    before = len(bedrock.bodies())
    history: list[Any] = [{"role": "user", "content": "Think."}]
    await call(how, ALL_TURNS, bedrock, list(history), stream=False)
    history += [{"role": "assistant", "content": ""}, {"role": "user", "content": "And?"}]
    litellm.logging_callback_manager._reset_all_callbacks()  # the same request without it
    with contextlib.suppress(litellm.BadRequestError):
        await call(how, ALL_TURNS, bedrock, list(history), stream=False)
    sent_without = bedrock.bodies()[-1]["messages"]
    register(callback)
    bedrock.script(ALL_TURNS, AnthropicReply([{"type": "text", "text": "Go on."}]))
    with contextlib.suppress(litellm.BadRequestError):
        await call(how, ALL_TURNS, bedrock, list(history), stream=False)
    sent_with = bedrock.bodies()[-1]["messages"]
    assert len(bedrock.bodies()) - before == 3
    assert sent_with == sent_without
    for message in sent_with:
        content = [b for b in message["content"] if "cachePoint" not in b]
        assert content, "an empty message reached Bedrock"
        assert not all("reasoningContent" in b for b in content)


def test_the_strict_server_refuses_like_bedrock() -> None:
    """The server's own refusals, with Bedrock's texts (what the suites above run against)."""
    from litellm_reasoning.testing.bedrock_upstream import bedrock_refusal

    reasoning = {"reasoningContent": {"reasoningText": {"text": "t", "signature": SIG[0]}}}
    assert (
        bedrock_refusal(
            {
                "messages": [
                    {"role": "user", "content": [{"text": "q"}]},
                    {"role": "assistant", "content": [reasoning]},
                ]
            }
        )
        == PREFILL_REFUSAL
    )
    assert bedrock_refusal(
        {"messages": [{"role": "user", "content": []}]}
    ) == empty_content_refusal(0)
