"""The Claude dialect (Anthropic API, Bedrock, Vertex): rendering, issuers, and end to end
through real LiteLLM against a local Anthropic Messages server, for a client that keeps only
role, content and tool calls of each reply."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import complete, dropping_client
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.upstream import Reply, Upstream
from litellm_reasoning.wire import get_dialect
from litellm_reasoning.wire.anthropic.dialect import (
    bedrock_redacted_content,
    thinking_blocks,
    thinking_requested,
    tool_loop_needs_thinking,
)

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
SIG_A = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="
SIG_B = "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1tp+nO7q/w=="
REDACTED = "EvgFCkYIBxgCKkBmxKtCnM3xlr1zpw0Ik4FY0bnznKLdj7THnWO4shd9HwIVkqwnbh16"
TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
THINKING = {"type": "enabled", "budget_tokens": 1024}
CLAUDE = "claude-sonnet-4-5"
"""A model LiteLLM knows takes `thinking`; tests run one after another, so one reply queue."""


def signed(text: str, signature: str) -> Reasoning:
    return Reasoning(parts=(ReasoningPart(text=text, signature=signature),), provider="anthropic")


# ---------------------------------------------------------------- the dialect, pure


class TestDialect:
    def test_blocks_in_order_byte_exact_empty_text_kept(self) -> None:
        reasoning = Reasoning(
            parts=(
                ReasoningPart(text="", signature=SIG_A),
                ReasoningPart(kind="redacted", data=REDACTED),
                ReasoningPart(text="more", signature=SIG_B),
            ),
            provider="anthropic",
        )
        assert thinking_blocks(reasoning) == [
            {"type": "thinking", "thinking": "", "signature": SIG_A},
            {"type": "redacted_thinking", "data": REDACTED},
            {"type": "thinking", "thinking": "more", "signature": SIG_B},
        ]

    def test_unsigned_parts_are_never_sent(self) -> None:
        cut = Reasoning(
            parts=(ReasoningPart(text="a", signature=SIG_A), ReasoningPart(text="cut off")),
            provider="anthropic",
        )
        assert thinking_blocks(cut) == [{"type": "thinking", "thinking": "a", "signature": SIG_A}]
        dialect = get_dialect("anthropic")
        message = {"role": "assistant", "content": "x", "reasoning_content": "plain"}
        assert dialect.render(message, Reasoning.from_text("plain")) == {
            "role": "assistant",
            "content": "x",
        }

    @pytest.mark.parametrize(
        ("dialect", "issuer", "sent"),
        [
            ("anthropic", "anthropic", True),
            ("anthropic", "bedrock", False),
            ("anthropic", "vertex_ai", False),
            ("anthropic_bedrock", "bedrock", True),
            ("anthropic_bedrock", "anthropic", False),
            ("anthropic_vertex", "vertex_ai", True),
            ("anthropic_vertex", "anthropic", False),
            ("anthropic", "deepseek", False),
            ("anthropic", None, True),
        ],
    )
    def test_signatures_go_back_only_to_their_issuer(
        self, dialect: str, issuer: str | None, sent: bool
    ) -> None:
        reasoning = Reasoning(parts=(ReasoningPart(text="t", signature=SIG_A),), provider=issuer)
        messages = [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ]
        result = render(messages, get_dialect(dialect), TurnPolicy.CURRENT_TURN, {1: reasoning})
        assert ("thinking_blocks" in result.messages[1]) is sent
        assert result.dropped == ([] if sent else [1])

    def test_earlier_turns_carry_none_current_turn_every_block_in_place(self) -> None:
        messages = [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "done", "thinking_blocks": [_block("old", SIG_A)]},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c2")]},
            {"role": "tool", "tool_call_id": "c2", "content": "r"},
        ]
        stored = {3: signed("step one", SIG_A), 5: signed("", SIG_B)}
        result = render(messages, get_dialect("anthropic"), TurnPolicy.CURRENT_TURN, stored)
        assert "thinking_blocks" not in result.messages[1]
        assert result.messages[3]["thinking_blocks"] == [_block("step one", SIG_A)]
        assert result.messages[5]["thinking_blocks"] == [_block("", SIG_B)]
        assert result.stripped == [1] and result.restored == [3, 5]

    def test_bedrock_redacted_content_wraps_once(self) -> None:
        wrapped = base64.b64encode(REDACTED.encode()).decode()
        assert bedrock_redacted_content(REDACTED) == wrapped
        assert bedrock_redacted_content(wrapped) == wrapped

    def test_tool_loop_needs_thinking(self) -> None:
        call = {"role": "assistant", "content": "", "tool_calls": [_call("c1")]}
        result = {"role": "tool", "tool_call_id": "c1", "content": "r"}
        assert tool_loop_needs_thinking([{"role": "user", "content": "q"}, call, result])
        with_blocks = {**call, "thinking_blocks": [_block("t", SIG_A)]}
        assert not tool_loop_needs_thinking([with_blocks, result])
        # A user message after the tool results: LiteLLM merges both into one Anthropic user
        # message, so the loop is still open and Claude still wants the block (a 400 without).
        assert tool_loop_needs_thinking([call, result, {"role": "user", "content": "new"}])
        assert not tool_loop_needs_thinking([call, {"role": "user", "content": "new"}])
        assert thinking_requested([{"thinking": THINKING}])
        assert thinking_requested([{"reasoning_effort": "low"}])
        assert not thinking_requested([{"thinking": {"type": "disabled"}}, {}])


def _call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


def _block(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def _tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "a.py"}}


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def call(
    how: str, model: str, api_base: str, messages: list[Any], *, stream: bool, **extra: Any
) -> dict[str, Any]:
    """One request; returns what a reasoning-dropping client keeps of the reply."""
    return dropping_client(await complete(how, model, api_base, messages, stream=stream, **extra))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_interleaved_tool_loop_sends_every_block_in_place(
    how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    """Two tool steps after an earlier turn: each step's reply goes back with exactly its own
    blocks (signed text, empty text with a signature, redacted data) first, in order; the
    earlier turn's reply with none."""
    model = CLAUDE
    before = len(claude.bodies(model))
    step_1 = [_block("Read a.py first.", SIG_A), _tool_use("toolu_01")]
    step_2 = [
        _block("", SIG_B),
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "Now b.py."},
        _tool_use("toolu_02"),
    ]
    claude.script(
        model,
        AnthropicReply([_block("Easy.", SIG_B), {"type": "text", "text": "Hi."}]),
        AnthropicReply(step_1),
        AnthropicReply(step_2),
        AnthropicReply([{"type": "text", "text": "Done."}]),
    )
    kw: dict[str, Any] = {"tools": [TOOL], "thinking": THINKING, "max_tokens": 2048}
    base = claude.base_url
    history: list[Any] = [{"role": "user", "content": "Hello"}]
    history.append(await call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw))
    history.append({"role": "user", "content": "Fix the parser."})
    history.append(await call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw))
    history.append({"role": "tool", "tool_call_id": "toolu_01", "content": "def parse(): ..."})
    history.append(await call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw))
    history.append({"role": "tool", "tool_call_id": "toolu_02", "content": "def lex(): ..."})
    await call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw)

    wire = claude.bodies(model)[before:]
    assert len(wire) == 4
    last = wire[-1]["messages"]
    assistants = [m["content"] for m in last if m["role"] == "assistant"]
    assert assistants[0] == [{"type": "text", "text": "Hi."}]
    assert assistants[1] == step_1
    assert assistants[2] == step_2
    assert wire[-1]["thinking"] == THINKING
    assert wire[2]["messages"][3]["content"] == step_1
    assert callback.stats["thinking_disabled"] == 0
    assert callback.stats["errors"] == 0


@pytest.mark.parametrize("how", CALLS)
async def test_thinking_is_turned_off_when_the_tool_calls_have_no_claude_blocks(
    how: str,
    claude: AnthropicUpstream,
    upstream: Upstream,
    callback: ReasoningCallback,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A fallback mid-turn: the tool call came from DeepSeek (unsigned reasoning_content). Its
    reasoning is not converted into fake thinking (dropped, counted) and, since Claude would
    reject a tool loop with thinking on and no thinking block, thinking is off for this call:
    a warning and `stats["thinking_disabled"]`."""
    other = f"ds-{how}"
    model = CLAUDE
    before = len(claude.bodies(model))
    upstream.script(
        other,
        Reply(message={"content": "", "reasoning_content": "Look.", "tool_calls": [_call("c1")]}),
    )
    claude.script(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    history.append(
        await call(how, f"deepseek/{other}", upstream.base_url, list(history), stream=False)
    )
    history.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        await call(
            how,
            f"anthropic/{model}",
            claude.base_url,
            list(history),
            stream=False,
            tools=[TOOL],
            thinking=THINKING,
            max_tokens=2048,
        )
    (body,) = claude.bodies(model)[before:]
    assert "thinking" not in body
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}
    ]
    assert callback.stats["thinking_disabled"] == 1
    assert callback.stats["dropped"] == 1
    assert "thinking turned off" in caplog.text


# ---------------------------------------------------------------- through the proxy


@pytest.mark.proxy
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_proxy_tool_loop_restores_signed_blocks(
    stream: bool, claude: AnthropicUpstream, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The official `openai` client (which drops everything but role, content and tool calls)
    through the LiteLLM proxy to Claude: each tool step's request carries the blocks the
    previous reply produced, in place, restored the instant the previous reply ended."""
    import openai
    from proxy_utils import proxy_config, run_proxy

    group = "claude-group"
    config = proxy_config(
        [
            {
                "model_name": group,
                "litellm_params": {
                    "model": f"anthropic/{CLAUDE}",
                    "api_base": claude.base_url,
                    "api_key": "k",
                    "thinking": THINKING,
                    "max_tokens": 2048,
                },
            }
        ]
    )
    step_1 = [_block("Read a.py first.", SIG_A), _tool_use("toolu_01")]
    step_2 = [_block("", SIG_B), {"type": "redacted_thinking", "data": REDACTED}]
    step_2 += [_tool_use("toolu_02")]
    claude.script(
        CLAUDE,
        AnthropicReply(step_1),
        AnthropicReply(step_2),
        AnthropicReply([{"type": "text", "text": "Done."}]),
    )
    before = len(claude.bodies(CLAUDE))
    settings = {"LITELLM_REASONING_STORE": "memory://"}
    with run_proxy(config, tmp_path_factory.mktemp("proxy"), env=settings) as proxy:
        client: Any = openai.OpenAI(
            base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0
        )
        history: list[Any] = [{"role": "user", "content": "Fix the parser."}]
        for result in ("def parse(): ...", "def lex(): ...", None):
            if stream:
                calls: dict[int, dict[str, Any]] = {}
                for chunk in client.chat.completions.create(
                    model=group, messages=history, tools=[TOOL], stream=True
                ):
                    for piece in (
                        chunk.choices[0].delta.tool_calls if chunk.choices else None
                    ) or ():
                        slot = calls.setdefault(piece.index, {"id": "", "args": "", "name": ""})
                        slot["id"] = piece.id or slot["id"]
                        if piece.function:
                            slot["name"] += piece.function.name or ""
                            slot["args"] += piece.function.arguments or ""
                tool_calls = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in calls.values()
                ]
            else:
                reply = client.chat.completions.create(model=group, messages=history, tools=[TOOL])
                tool_calls = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in reply.choices[0].message.tool_calls or ()
                ]
            if result is None:
                break
            history.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            history.append({"role": "tool", "tool_call_id": tool_calls[0]["id"], "content": result})
    wire = claude.bodies(CLAUDE)[before:]
    assert len(wire) == 3
    assistants = [m["content"] for m in wire[2]["messages"] if m["role"] == "assistant"]
    assert assistants == [step_1, step_2]
    assert wire[1]["messages"][1]["content"] == step_1
    assert all(body["thinking"] == THINKING for body in wire)


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_thinking_whose_signature_never_arrived_is_never_sent(
    how: str, claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    """A streamed thinking block with no `signature_delta`: LiteLLM's assembled reply keeps its
    text only in `reasoning_content` (no thinking block); it is stored unsigned, so it is never
    sent as thinking; the tool loop then runs with thinking off for that call."""
    before = len(claude.bodies(CLAUDE))
    unsigned = {"type": "thinking", "thinking": "Half a thought"}
    claude.script(
        CLAUDE,
        AnthropicReply([unsigned, _tool_use("toolu_09")]),
        AnthropicReply([{"type": "text", "text": "Done."}]),
    )
    kw: dict[str, Any] = {"tools": [TOOL], "thinking": THINKING, "max_tokens": 2048}
    history: list[Any] = [{"role": "user", "content": "Go."}]
    base = claude.base_url
    history.append(await call(how, f"anthropic/{CLAUDE}", base, list(history), stream=True, **kw))
    history.append({"role": "tool", "tool_call_id": "toolu_09", "content": "ok"})
    await call(how, f"anthropic/{CLAUDE}", base, list(history), stream=True, **kw)

    wire = claude.bodies(CLAUDE)[before:]
    assert wire[1]["messages"][1]["content"] == [_tool_use("toolu_09")]
    assert "thinking" not in wire[1]
    assert callback.stats["captured"] >= 1
    assert callback.stats["dropped"] == 1
    assert callback.stats["thinking_disabled"] == 1
