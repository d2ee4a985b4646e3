"""Claude, every route in one module: a class per route, each through real LiteLLM against a
local server that answers with the real recordings and refuses as Claude does.

* `TestAnthropicApi`: the Claude dialect (rendering, issuers) and the Anthropic API on the chat
  route (`acompletion`, `completion`, the Router);
* `TestBlockOrderOnEveryPath`: interleaved thinking keeps its place, and the interrupted tool
  loop keeps its blocks, on every call path (SDK, Router, proxy), streamed or not;
* `TestRecordings`: real Anthropic Messages and Bedrock Converse recordings replayed;
* `TestBedrock`, `TestVertex`: Claude on Bedrock (Converse and Invoke) and on Vertex AI;
* `TestThirdPartyAnthropicApis`: `anthropic/` deployments at third-party Anthropic-compatible
  APIs on the chat route;
* `TestMessagesSdk`, `TestMessagesLimits`, `TestMessagesToolChanges`,
  `TestMessagesNativeNotClaude`: the Anthropic-format `/v1/messages` route through LiteLLM's SDK
  (`litellm.anthropic.messages`): blocks back in place, the policy and budget, mid-conversation
  tool changes, and the models LiteLLM forwards natively;
* `TestClaudeCode`: Claude Code's own reordering of interleaved blocks;
* `TestMessagesProxy`: the proxy's `/v1/messages` with the official `anthropic` client.

Each class's docstring says what its route's tests hold; the helpers of a route stand just above
its class."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import logging
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import litellm
import pytest
import vcr
from clients import (
    READ_FILE,
    THINKING,
    claude_thinking,
    claude_tool_use,
    complete,
    dropping_client,
    joining_client,
    keeping_client,
    send_messages,
    tool_result,
)
from clients import READ_FILE as TOOL
from clients import claude_thinking as _thinking
from clients import claude_tool_use as _use
from clients import tool_result as _result
from conftest import register
from litellm.integrations.custom_logger import CustomLogger
from paths import REPO
from reliability_utils import stored
from vcr.cassette import Cassette
from vcr.request import Request

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.decisions import METADATA_KEY
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.testing.anthropic_upstream import (
    AnthropicReply,
    AnthropicUpstream,
    DeepSeekAnthropicUpstream,
)
from litellm_reasoning.testing.bedrock_upstream import (
    PREFILL_REFUSAL,
    BedrockClaudeUpstream,
    BedrockInvokeClaudeUpstream,
    converse_block,
    empty_content_refusal,
)
from litellm_reasoning.testing.stores import SpyStore
from litellm_reasoning.testing.upstream import Reply, Upstream
from litellm_reasoning.testing.vertex_upstream import (
    TOKEN_PATH,
    VertexClaudeUpstream,
    service_account,
)
from litellm_reasoning.wire import get_dialect
from litellm_reasoning.wire.anthropic.dialect import (
    apply_layout,
    bedrock_redacted_content,
    layout_of_blocks,
    thinking_blocks,
    thinking_requested,
    tool_loop_needs_thinking,
)

# ------------------------------ TestAnthropicApi

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]

SIG_A = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="

SIG_B = "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1tp+nO7q/w=="

API_REDACTED = "EvgFCkYIBxgCKkBmxKtCnM3xlr1zpw0Ik4FY0bnznKLdj7THnWO4shd9HwIVkqwnbh16"

CLAUDE = "claude-sonnet-4-5"
"""A model LiteLLM knows takes `thinking`; tests run one after another, so one reply queue."""


def signed(text: str, signature: str) -> Reasoning:
    return Reasoning(parts=(ReasoningPart(text=text, signature=signature),), provider="anthropic")


def _api_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


def _block(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def _tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "a.py"}}


async def api_call(
    how: str, model: str, api_base: str, messages: list[Any], *, stream: bool, **extra: Any
) -> dict[str, Any]:
    """One request; returns what a reasoning-dropping client keeps of the reply."""
    return dropping_client(await complete(how, model, api_base, messages, stream=stream, **extra))


class TestAnthropicApi:
    """The Claude dialect (Anthropic API, Bedrock, Vertex): rendering, issuers, and end to end
    through real LiteLLM against a local Anthropic Messages server, for a client that keeps only
    role, content and tool calls of each reply."""

    class TestDialect:
        def test_blocks_in_order_byte_exact_empty_text_kept(self) -> None:
            reasoning = Reasoning(
                parts=(
                    ReasoningPart(text="", signature=SIG_A),
                    ReasoningPart(kind="redacted", data=API_REDACTED),
                    ReasoningPart(text="more", signature=SIG_B),
                ),
                provider="anthropic",
            )
            assert thinking_blocks(reasoning) == [
                {"type": "thinking", "thinking": "", "signature": SIG_A},
                {"type": "redacted_thinking", "data": API_REDACTED},
                {"type": "thinking", "thinking": "more", "signature": SIG_B},
            ]

        def test_unsigned_parts_are_never_sent(self) -> None:
            cut = Reasoning(
                parts=(ReasoningPart(text="a", signature=SIG_A), ReasoningPart(text="cut off")),
                provider="anthropic",
            )
            assert thinking_blocks(cut) == [
                {"type": "thinking", "thinking": "a", "signature": SIG_A}
            ]
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
            reasoning = Reasoning(
                parts=(ReasoningPart(text="t", signature=SIG_A),), provider=issuer
            )
            messages = [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "tool_calls": [_api_call("c1")]},
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
                {"role": "assistant", "content": "", "tool_calls": [_api_call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "assistant", "content": "", "tool_calls": [_api_call("c2")]},
                {"role": "tool", "tool_call_id": "c2", "content": "r"},
            ]
            stored = {3: signed("step one", SIG_A), 5: signed("", SIG_B)}
            result = render(messages, get_dialect("anthropic"), TurnPolicy.CURRENT_TURN, stored)
            assert "thinking_blocks" not in result.messages[1]
            assert result.messages[3]["thinking_blocks"] == [_block("step one", SIG_A)]
            assert result.messages[5]["thinking_blocks"] == [_block("", SIG_B)]
            assert result.stripped == [1] and result.restored == [3, 5]

        def test_bedrock_redacted_content_wraps_once(self) -> None:
            wrapped = base64.b64encode(API_REDACTED.encode()).decode()
            assert bedrock_redacted_content(API_REDACTED) == wrapped
            assert bedrock_redacted_content(wrapped) == wrapped

        def test_tool_loop_needs_thinking(self) -> None:
            api_call = {"role": "assistant", "content": "", "tool_calls": [_api_call("c1")]}
            result = {"role": "tool", "tool_call_id": "c1", "content": "r"}
            assert tool_loop_needs_thinking([{"role": "user", "content": "q"}, api_call, result])
            with_blocks = {**api_call, "thinking_blocks": [_block("t", SIG_A)]}
            assert not tool_loop_needs_thinking([with_blocks, result])
            # A user message after the tool results: LiteLLM merges both into one Anthropic user
            # message, so the loop is still open and Claude still wants the block (a 400 without).
            assert tool_loop_needs_thinking([api_call, result, {"role": "user", "content": "new"}])
            assert not tool_loop_needs_thinking([api_call, {"role": "user", "content": "new"}])
            assert thinking_requested([{"thinking": THINKING}])
            assert thinking_requested([{"reasoning_effort": "low"}])
            assert not thinking_requested([{"thinking": {"type": "disabled"}}, {}])

    @pytest.fixture(scope="class")
    def claude(self) -> Iterator[AnthropicUpstream]:
        with AnthropicUpstream(strict=True) as up:
            yield up

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_interleaved_tool_loop_sends_every_block_in_place(
        self, how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Two tool steps after an earlier turn: each step's reply goes back with exactly its own
        blocks (signed text, empty text with a signature, redacted data) first, in order; the
        earlier turn's reply with none."""
        model = CLAUDE
        before = len(claude.bodies(model))
        step_1 = [_block("Read a.py first.", SIG_A), _tool_use("toolu_01")]
        step_2 = [
            _block("", SIG_B),
            {"type": "redacted_thinking", "data": API_REDACTED},
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
        kw: dict[str, Any] = {"tools": [READ_FILE], "thinking": THINKING, "max_tokens": 2048}
        base = claude.base_url
        history: list[Any] = [{"role": "user", "content": "Hello"}]
        history.append(
            await api_call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw)
        )
        history.append({"role": "user", "content": "Fix the parser."})
        history.append(
            await api_call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw)
        )
        history.append({"role": "tool", "tool_call_id": "toolu_01", "content": "def parse(): ..."})
        history.append(
            await api_call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw)
        )
        history.append({"role": "tool", "tool_call_id": "toolu_02", "content": "def lex(): ..."})
        await api_call(how, f"anthropic/{model}", base, list(history), stream=stream, **kw)

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
        self,
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
            Reply(
                message={
                    "content": "",
                    "reasoning_content": "Look.",
                    "tool_calls": [_api_call("c1")],
                }
            ),
        )
        claude.script(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
        history: list[Any] = [{"role": "user", "content": "Fix it."}]
        history.append(
            await api_call(how, f"deepseek/{other}", upstream.base_url, list(history), stream=False)
        )
        history.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
            await api_call(
                how,
                f"anthropic/{model}",
                claude.base_url,
                list(history),
                stream=False,
                tools=[READ_FILE],
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

    @pytest.mark.proxy
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    def test_proxy_tool_loop_restores_signed_blocks(
        self, stream: bool, claude: AnthropicUpstream, tmp_path_factory: pytest.TempPathFactory
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
        step_2 = [_block("", SIG_B), {"type": "redacted_thinking", "data": API_REDACTED}]
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
                        model=group, messages=history, tools=[READ_FILE], stream=True
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
                    reply = client.chat.completions.create(
                        model=group, messages=history, tools=[READ_FILE]
                    )
                    tool_calls = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.function.name,
                                "arguments": c.function.arguments,
                            },
                        }
                        for c in reply.choices[0].message.tool_calls or ()
                    ]
                if result is None:
                    break
                history.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
                history.append(
                    {"role": "tool", "tool_call_id": tool_calls[0]["id"], "content": result}
                )
        wire = claude.bodies(CLAUDE)[before:]
        assert len(wire) == 3
        assistants = [m["content"] for m in wire[2]["messages"] if m["role"] == "assistant"]
        assert assistants == [step_1, step_2]
        assert wire[1]["messages"][1]["content"] == step_1
        assert all(body["thinking"] == THINKING for body in wire)

    @pytest.mark.parametrize("how", ["acompletion", "completion"])
    async def test_thinking_whose_signature_never_arrived_is_never_sent(
        self, how: str, claude: AnthropicUpstream, callback: ReasoningCallback
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
        kw: dict[str, Any] = {"tools": [READ_FILE], "thinking": THINKING, "max_tokens": 2048}
        history: list[Any] = [{"role": "user", "content": "Go."}]
        base = claude.base_url
        history.append(
            await api_call(how, f"anthropic/{CLAUDE}", base, list(history), stream=True, **kw)
        )
        history.append({"role": "tool", "tool_call_id": "toolu_09", "content": "ok"})
        await api_call(how, f"anthropic/{CLAUDE}", base, list(history), stream=True, **kw)

        wire = claude.bodies(CLAUDE)[before:]
        assert wire[1]["messages"][1]["content"] == [_tool_use("toolu_09")]
        assert "thinking" not in wire[1]
        assert callback.stats["captured"] >= 1
        assert callback.stats["dropped"] == 1
        assert callback.stats["thinking_disabled"] == 1


# ------------------------------ TestBlockOrderOnEveryPath

ORDER_SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1tp+nO7q/w==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2XQf3c7aQ==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kUs5Ad2A==",
]

CLIENTS = {"drops": dropping_client, "keeps": keeping_client}


async def order_call(
    how: str, model: str, claude: AnthropicUpstream, messages: list[Any], *, stream: bool
) -> Any:
    """One Claude request with tools and thinking on; LiteLLM's reply message."""
    return await complete(
        how,
        f"anthropic/{model}",
        claude.base_url,
        messages,
        stream=stream,
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
    )


def _assistant_content(body: dict[str, Any], n: int) -> list[Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"][n]["content"]


ORDER_INTERLEAVED = {
    "plain": [
        _thinking("I need a.py.", ORDER_SIG[0]),
        _use("toolu_a1", "a.py"),
        _thinking("And b.py, separately.", ORDER_SIG[1]),
        _use("toolu_a2", "b.py"),
    ],
    "with-text": [
        _thinking("I need a.py.", ORDER_SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        _use("toolu_b1", "a.py"),
        _thinking("", ORDER_SIG[3]),
        {"type": "redacted_thinking", "data": "EvgFCkYIBxgCKkBmxKtCnM3xlr1zpw0Ik4FY0bnznK"},
        {"type": "text", "text": "Then b.py."},
        _use("toolu_b2", "b.py"),
    ],
}

FOREIGN_LOOP: list[Any] = [
    {"role": "user", "content": "Read c.py."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_other",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "c.py"}'},
            }
        ],
    },
    _result("call_other"),
]
"""A tool loop whose blocks nobody has (another provider's tool calls)."""


async def _interleaved_loop_restored(
    how: str, model: str, claude: AnthropicUpstream, params: dict[str, Any]
) -> None:
    """An interleaved tool-call reply, then its tool results from a dropping client: the reply's
    blocks go back where they stood, and Claude refuses nothing."""
    reply = ORDER_INTERLEAVED["plain"]
    claude.script(model, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "ok"}]))
    refused = len(claude.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    first = await complete(
        how, f"anthropic/{model}", claude.base_url, history, stream=False, **params
    )
    history.append(dropping_client(first))
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    await complete(
        how, f"anthropic/{model}", claude.base_url, list(history), stream=False, **params
    )
    assert claude.refusals[refused:] == []
    assert _assistant_content(claude.bodies(model)[-1], 0) == reply


def _openai_step(client: Any, group: str, history: list[Any], stream: bool) -> dict[str, Any]:
    """One request with the official openai client; what it keeps of the reply (no reasoning)."""
    if not stream:
        message = (
            client.chat.completions.create(model=group, messages=history, tools=[TOOL])
            .choices[0]
            .message
        )
        calls = [
            {"id": c.id, "type": "function", "function": c.function.model_dump()}
            for c in message.tool_calls or ()
        ]
        content = message.content
    else:
        pieces: list[str] = []
        by_index: dict[int, dict[str, Any]] = {}
        for chunk in client.chat.completions.create(
            model=group, messages=history, tools=[TOOL], stream=True
        ):
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                for c in choice.delta.tool_calls or ():
                    entry = by_index.setdefault(
                        c.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    entry["id"] = c.id or entry["id"]
                    if c.function is not None:
                        entry["function"]["name"] += c.function.name or ""
                        entry["function"]["arguments"] += c.function.arguments or ""
        calls = [by_index[i] for i in sorted(by_index)]
        content = "".join(pieces) or None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out


class TestBlockOrderOnEveryPath:
    """Claude exactly as it answered: interleaved thinking keeps its place among the reply's blocks,
    and the tool loop a new user message interrupts keeps its blocks, on every call path, streamed
    or not, for a client that drops reasoning and one that keeps LiteLLM's `thinking_blocks`.

    The local Claude server is strict (`AnthropicUpstream(strict=True)`): it refuses, with the API's
    own texts, an assistant message whose thinking is not first, a tool loop whose message has no
    block, and a latest assistant message whose blocks differ from the reply it came from."""

    @pytest.fixture(scope="class")
    def claude(self) -> Iterator[AnthropicUpstream]:
        with AnthropicUpstream(strict=True) as up:
            yield up

    @pytest.fixture(scope="class")
    def claude_api(self) -> Iterator[AnthropicUpstream]:
        """Streams as the API streams a short reply (one delta per block, a ping, compact JSON)."""
        with AnthropicUpstream(strict=True, api_style=True) as up:
            yield up

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    def test_a_layout_puts_blocks_back_where_they_stood(self) -> None:
        original = [
            _thinking("A", ORDER_SIG[0]),
            {"type": "text", "text": "Let me look."},
            _use("toolu_1", "a.py"),
            _thinking("B", ORDER_SIG[1]),
            {"type": "text", "text": "And this."},
            _use("toolu_2", "b.py"),
        ]
        layout = layout_of_blocks(original)
        assert layout == ("r", "t12", "u", "r", "t9", "u")
        regrouped = [  # as LiteLLM builds it from thinking_blocks, content and tool_calls
            original[0],
            original[3],
            {"type": "text", "text": "Let me look.And this."},
            original[2],
            original[5],
        ]
        assert apply_layout(regrouped, layout, [original[0], original[3]]) == original
        # What does not line up is left alone.
        assert apply_layout(regrouped[:-1], layout, [original[0], original[3]]) is None
        assert (
            layout_of_blocks([original[0], original[1], original[2]]) == ()
        )  # LiteLLM's own order

    @pytest.mark.parametrize("shape", sorted(ORDER_INTERLEAVED))
    @pytest.mark.parametrize("client", sorted(CLIENTS))
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_interleaved_blocks_go_back_in_their_original_order(
        self,
        how: str,
        stream: bool,
        client: str,
        shape: str,
        claude: AnthropicUpstream,
        callback: ReasoningCallback,
    ) -> None:
        model = "claude-sonnet-4-6"
        reply = ORDER_INTERLEAVED[shape]
        claude.script(
            model, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}])
        )
        before = len(claude.bodies(model))
        refused = len(claude.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        message = await order_call(how, model, claude, list(history), stream=stream)
        history.append(CLIENTS[client](message))
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        done = await order_call(how, model, claude, list(history), stream=stream)
        assert claude.refusals[refused:] == []
        assert done.content == "Done."
        wire = claude.bodies(model)[before:]
        assert _assistant_content(wire[1], 0) == reply
        assert callback.stats["errors"] == 0

    @pytest.mark.parametrize("shape", sorted(ORDER_INTERLEAVED))
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_client_holding_empty_text_gets_the_blocks_in_place(
        self,
        how: str,
        stream: bool,
        shape: str,
        claude_api: AnthropicUpstream,
        callback: ReasoningCallback,
    ) -> None:
        """Opus 4.6, streamed as the API streams it, read by a client that joins the deltas itself:
        its message holds `content: ""` beside the tool calls. LiteLLM 1.106/1.108 put a placeholder
        text there (1.110 drops it), a block Claude's reply never had: the blocks could not be laid
        out and went back regrouped ("cannot be modified"). The empty text goes instead."""
        model = "claude-opus-4-6"
        reply = ORDER_INTERLEAVED[shape]
        claude_api.script(
            model, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}])
        )
        before, refused = len(claude_api.bodies(model)), len(claude_api.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        message = await order_call(how, model, claude_api, list(history), stream=stream)
        history.append(joining_client(message))
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        done = await order_call(how, model, claude_api, list(history), stream=stream)
        assert claude_api.refusals[refused:] == []
        assert done.content == "Done."
        assert _assistant_content(claude_api.bodies(model)[before:][1], 0) == reply

    @pytest.mark.parametrize("how", CALLS)
    async def test_between_tools_thinking_gets_its_blocks_back_in_place(
        self, how: str, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Sonnet 5.5's `thinking: {"type": "between_tools"}` (thinking only between tool calls,
        Claude's signed-block rules): recognised as thinking on, a dropping client's interleaved
        blocks go back where they stood. A tool loop with no block to send cannot have thinking
        turned off on this model: sent as the client sent it, counted and said."""
        model = f"claude-sonnet-5-5-{how}"
        between = {"type": "between_tools"}
        params = {"tools": [TOOL], "thinking": between, "max_tokens": 2048}
        await _interleaved_loop_restored(how, model, claude, params)
        # Sonnet 5.5 thinks whatever the request says (`between_tools` only moves it between tool
        # calls): thinking cannot go off, so the request goes as the client sent it and Claude
        # refuses it as it would without the callback; said once, counted.
        with pytest.raises(
            litellm.BadRequestError, match="Expected `thinking` or `redacted_thinking`"
        ):
            await complete(
                how, f"anthropic/{model}", claude.base_url, FOREIGN_LOOP, stream=False, **params
            )
        assert claude.bodies(model)[-1]["thinking"] == between
        assert callback.stats["thinking_disabled"] == 0
        assert callback.stats["thinking_stays_on"] == 1

    @pytest.mark.parametrize("how", CALLS)
    async def test_a_model_that_thinks_by_default_gets_thinking_disabled_not_dropped(
        self, how: str, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Opus 5 thinks when the request says nothing of thinking (Anthropic: "thinking on by
        default"; LiteLLM's map: `thinking_on_by_default`). A dropping client's blocks go back in
        place without any `thinking` parameter; a tool loop with no block to send gets
        `thinking: {"type": "disabled"}` for that call (leaving `thinking` out would leave it on,
        and Claude would refuse the loop)."""
        model = f"claude-opus-5-{how}"
        params: dict[str, Any] = {"tools": [TOOL], "max_tokens": 2048}
        refused = len(claude.refusals)
        await _interleaved_loop_restored(how, model, claude, params)
        claude.script(model, AnthropicReply([{"type": "text", "text": "ok"}]))
        done = await complete(
            how, f"anthropic/{model}", claude.base_url, FOREIGN_LOOP, stream=False, **params
        )
        assert done.content == "ok"
        assert claude.refusals[refused:] == []
        assert claude.bodies(model)[-1]["thinking"] == {"type": "disabled"}
        assert callback.stats["thinking_disabled"] == 1

    async def test_all_turns_keeps_every_earlier_message_in_its_order(
        self, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Opus 4.6 keeps earlier turns' thinking: after a new turn the earlier interleaved reply
        still goes back exactly as it came, so each request extends the previous one."""
        model = "claude-opus-4-6"
        reply = ORDER_INTERLEAVED["plain"]
        claude.script(
            model,
            AnthropicReply(reply),
            AnthropicReply(
                [_thinking("Both read.", ORDER_SIG[2]), {"type": "text", "text": "Done."}]
            ),
            AnthropicReply([{"type": "text", "text": "Bye."}]),
        )
        before = len(claude.bodies(model))
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        history.append(
            dropping_client(await order_call("acompletion", model, claude, history, stream=False))
        )
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        history.append(
            dropping_client(await order_call("acompletion", model, claude, history, stream=True))
        )
        history.append({"role": "user", "content": "Thanks."})
        await order_call("acompletion", model, claude, list(history), stream=False)
        wire = claude.bodies(model)[before:]
        assert _assistant_content(wire[2], 0) == reply
        assert _assistant_content(wire[2], 1) == [
            _thinking("Both read.", ORDER_SIG[2]),
            {"type": "text", "text": "Done."},
        ]

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
        self, how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Sonnet 4.5 keeps only the current turn; the client stopped the loop and the user typed:
        `[…, assistant tool_use, tool result, user "new question"]`. LiteLLM merges the result and
        the question into one user message, so the loop is still open: its blocks go back."""
        model = "claude-sonnet-4-5"
        first = [_thinking("Read a.py first.", ORDER_SIG[0]), _use("toolu_c1", "a.py")]
        claude.script(
            model, AnthropicReply(first), AnthropicReply([{"type": "text", "text": "Sure."}])
        )
        before = len(claude.bodies(model))
        refused = len(claude.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py."}]
        history.append(
            dropping_client(await order_call(how, model, claude, list(history), stream=stream))
        )
        history += [_result("toolu_c1"), {"role": "user", "content": "Actually, what is b.py?"}]
        answer = await order_call(how, model, claude, list(history), stream=stream)
        assert claude.refusals[refused:] == []
        assert answer.content == "Sure."
        wire = claude.bodies(model)[before:]
        assert _assistant_content(wire[1], 0) == first
        assert "thinking" in wire[1]  # kept on: nothing had to be switched off
        assert callback.stats["thinking_disabled"] == 0

    @pytest.fixture(scope="class")
    def proxy(
        self, claude: AnthropicUpstream, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[Any]:
        from proxy_utils import proxy_config, run_proxy

        config = proxy_config(
            [
                {
                    "model_name": group,
                    "litellm_params": {
                        "model": f"anthropic/{model}",
                        "api_base": claude.base_url,
                        "api_key": "k",
                        "thinking": THINKING,
                        "max_tokens": 2048,
                    },
                }
                for group, model in (("order", "claude-sonnet-4-6"), ("loop", "claude-sonnet-4-5"))
            ]
        )
        settings = {"LITELLM_REASONING_STORE": "memory://"}
        with run_proxy(config, tmp_path_factory.mktemp("claude-order"), env=settings) as running:
            yield running

    @pytest.mark.proxy
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    def test_proxy_interleaved_order_and_interrupted_loop_with_the_openai_client(
        self, stream: bool, claude: AnthropicUpstream, proxy: Any
    ) -> None:
        import openai

        refused = len(claude.refusals)
        client: Any = openai.OpenAI(
            base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0
        )
        # Interleaved thinking on Sonnet 4.6.
        reply = ORDER_INTERLEAVED["with-text"]
        claude.script(
            "claude-sonnet-4-6",
            AnthropicReply(reply),
            AnthropicReply([{"type": "text", "text": "Ok."}]),
        )
        before = len(claude.bodies("claude-sonnet-4-6"))
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        history.append(_openai_step(client, "order", history, stream))
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        assert _openai_step(client, "order", history, stream)["content"] == "Ok."
        wire = claude.bodies("claude-sonnet-4-6")[before:]
        assert _assistant_content(wire[1], 0) == reply
        # The interrupted loop on Sonnet 4.5 (current turn only).
        first = [_thinking("Read a.py first.", ORDER_SIG[0]), _use("toolu_p1", "a.py")]
        claude.script(
            "claude-sonnet-4-5",
            AnthropicReply(first),
            AnthropicReply([{"type": "text", "text": "B."}]),
        )
        before = len(claude.bodies("claude-sonnet-4-5"))
        history = [{"role": "user", "content": "Read a.py."}]
        history.append(_openai_step(client, "loop", history, stream))
        history += [_result("toolu_p1"), {"role": "user", "content": "What is b.py?"}]
        assert _openai_step(client, "loop", history, stream)["content"] == "B."
        wire = claude.bodies("claude-sonnet-4-5")[before:]
        assert _assistant_content(wire[1], 0) == first
        assert claude.refusals[refused:] == [], proxy.log_tail()

    async def test_input_transformations_reach_the_decisions_summary(
        self,
        claude: AnthropicUpstream,
    ) -> None:
        """A Claude reply listing blocks the API dropped (`input_transformations`): they are in
        that request's decisions summary (spend-log metadata, StandardLoggingPayload), counted,
        and no block content travels with them."""
        from litellm.integrations.custom_logger import CustomLogger

        class Collector(CustomLogger):
            def __init__(self) -> None:
                super().__init__()
                self.instance_id = "collector-transformations"
                self.metadata: list[dict[str, Any]] = []

            async def async_log_success_event(
                self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
            ) -> None:
                payload = kwargs.get("standard_logging_object") or {}
                self.metadata.append(dict(payload.get("metadata") or {}))

        transformations = [
            {
                "type": "drop_block",
                "reason": "prefix_binding_mismatch",
                "message_index": 1,
                "content_index": 0,
                "thinking": "SECRET THOUGHT",
            }
        ]
        model = "claude-sonnet-4-6"
        claude.script(
            model,
            AnthropicReply(
                [{"type": "text", "text": "Hi."}], extra={"input_transformations": transformations}
            ),
        )
        callback = ReasoningCallback()
        collector = Collector()
        register(callback)
        litellm.callbacks = [callback, collector]
        try:
            await order_call(
                "acompletion", model, claude, [{"role": "user", "content": "hi"}], stream=False
            )
            for _ in range(500):
                if collector.metadata:
                    break
                await asyncio.sleep(0.01)
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
            litellm.callbacks = []
        summary = collector.metadata[-1]["spend_logs_metadata"]["litellm_reasoning"]
        assert summary["input_transformations"] == [
            {
                "type": "drop_block",
                "reason": "prefix_binding_mismatch",
                "message_index": 1,
                "content_index": 0,
            }
        ]
        assert callback.stats["input_transformations"] == 1

    def test_bedrock_never_gets_a_reasoning_only_assistant_message(self) -> None:
        """An assistant message with neither text nor tool calls (a client that kept only an empty
        reply) never has blocks put on it for Bedrock, which refuses such a message; one with
        text gets them as before."""
        from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
        from litellm_reasoning.wire import get_dialect

        dialect = get_dialect("anthropic_bedrock")
        record = Reasoning(
            parts=(ReasoningPart(text="t", signature=ORDER_SIG[0]),), provider="bedrock"
        )
        empty = {"role": "assistant", "content": ""}
        assert dialect.render(empty, record) == empty
        assert dialect.render({"role": "assistant", "content": None}, record) == {
            "role": "assistant",
            "content": None,
        }
        answered = dialect.render({"role": "assistant", "content": "Hi."}, record)
        assert answered["thinking_blocks"] == [_thinking("t", ORDER_SIG[0])]

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_fallback_reply_is_kept_as_the_model_that_answered_it(
        self, how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        """Anthropic's `fallbacks` (Fable 5): another model answers, and the reply's `model` says
        which. Its signed blocks go back to the conversation's next request like any Claude reply
        (same credentials: the blocks are Anthropic's, the strict server takes them), and the
        record names the model that answered, not the one asked for (on a stream LiteLLM names every
        chunk, and the reply it assembles, after the model asked for: the record can only do the
        same; `/v1/messages` reads it from the stream itself, `TestMessagesSdk`)."""
        model = f"claude-fable-5-{how}-{stream}"
        blocks = [_thinking("Read a.py first.", ORDER_SIG[0]), _use("toolu_fb1", "a.py")]
        claude.script(
            model,
            AnthropicReply(blocks, extra={"model": "claude-opus-4-6"}),
            AnthropicReply([{"type": "text", "text": "Done."}]),
        )
        refused = len(claude.refusals)
        messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
        reply = await order_call(how, model, claude, messages, stream=stream)
        messages += [dropping_client(reply), _result("toolu_fb1")]
        await order_call(how, model, claude, messages, stream=stream)
        assert claude.refusals[refused:] == []
        assert _assistant_content(claude.bodies(model)[-1], 0) == blocks
        models = [record.model for record in stored(callback)]
        assert models == ([model] if stream else ["claude-opus-4-6"])


# ------------------------------ TestRecordings

CASSETTES = REPO / "cassettes"

Json = dict[str, Any]

Mode = Literal["sync", "async", "router.sync", "router.async"]

sync_and_async = pytest.mark.parametrize("mode", ["sync", "async"])

keeps_or_drops = pytest.mark.parametrize("keep", [True, False], ids=["keeps", "drops"])

streamed_or_not = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])

REC_THINKING = ("thinking", "redacted_thinking")


def _text(body: Any) -> str:
    if isinstance(body, bytes):
        return body.decode("utf-8")
    return "" if body is None else str(body)


def sse_content(body: str) -> list[Json]:
    """The content blocks an Anthropic SSE body assembles to, by block index."""
    blocks: dict[int, Json] = {}
    for line in body.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("type") == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event.get("type") == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    return [blocks[i] for i in sorted(blocks)]


def eventstream_events(raw: bytes) -> list[Json]:
    """`{event type: payload}` for each message of an AWS event stream."""
    out: list[Json] = []
    offset = 0
    while offset < len(raw):
        total, header_len = struct.unpack(">II", raw[offset : offset + 8])
        cursor, end_headers = offset + 12, offset + 12 + header_len
        kind = ""
        while cursor < end_headers:
            name_len = raw[cursor]
            name = raw[cursor + 1 : cursor + 1 + name_len].decode()
            cursor += 2 + name_len
            value_len = struct.unpack(">H", raw[cursor : cursor + 2])[0]
            if name == ":event-type":
                kind = raw[cursor + 2 : cursor + 2 + value_len].decode()
            cursor += 2 + value_len
        out.append({kind: json.loads(raw[end_headers : offset + total - 4])})
        offset += total
    return out


def converse_stream_reasoning(raw: bytes) -> Json:
    """The `reasoningContent` block a Converse stream assembles to (text deltas + signature)."""
    text, signature = "", None
    for event in eventstream_events(raw):
        delta = (event.get("contentBlockDelta") or {}).get("delta") or {}
        piece = delta.get("reasoningContent") or {}
        text += piece.get("text", "")
        signature = piece.get("signature", signature)
    return {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}


@dataclass
class Exchange:
    path: str
    body: Json
    response: Any
    content_type: str


@dataclass
class Wire:
    exchanges: list[Exchange] = field(default_factory=list)

    def body(self, k: int) -> Json:
        return self.exchanges[k].body


@contextmanager
def replay(name: str) -> Iterator[Wire]:
    """Play `cassettes/<name>.yaml` in order, each interaction once; all must be used."""
    recorder = vcr.VCR(record_mode="none", match_on=["method", "path"])
    wire = Wire()
    with recorder.use_cassette(
        str(CASSETTES / f"{name}.yaml"), allow_playback_repeats=False
    ) as cassette:
        play = cassette.play_response

        def play_response(request: Request) -> Any:
            response = play(request)
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            raw = _text(request.body)
            wire.exchanges.append(
                Exchange(
                    path=request.path,
                    body=json.loads(raw) if raw else {},
                    response=response["body"]["string"],
                    content_type=";".join(headers.get("content-type") or []),
                )
            )
            return response

        setattr(cassette, "play_response", play_response)  # noqa: B010
        yield wire
        assert isinstance(cassette, Cassette)
        assert cassette.all_played, f"{name}: not every recorded interaction was replayed"


def recorded(name: str) -> list[Json]:
    """The cassette's interactions as recorded (request bodies parsed)."""
    import yaml

    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))
    return [
        {
            "request": json.loads(item["request"]["body"]),
            "response": item["response"]["body"]["string"],
        }
        for item in raw["interactions"]
    ]


def script(name: str) -> Json:
    data: Json = json.loads((CASSETTES / "scripts" / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _reply_dict(message: Any) -> Json:
    data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    return {k: v for k, v in data.items() if v is not None}


async def send(mode: Mode, kwargs: Json) -> Json:
    """One LiteLLM call, its stream read to the end; the reply message as the client has it."""

    def assemble(chunks: list[Any]) -> Json:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return _reply_dict(built.choices[0].message)

    target: Any = litellm
    if mode.startswith("router."):
        params = {k: v for k, v in kwargs.items() if k in ("model", "api_key", "aws_region_name")}
        target = litellm.Router(
            model_list=[{"model_name": "claude", "litellm_params": params}], num_retries=0
        )
        kwargs = {k: v for k, v in kwargs.items() if k not in params} | {"model": "claude"}
    if mode.endswith("async"):
        response = await target.acompletion(**kwargs)
        if kwargs.get("stream"):
            return assemble([chunk async for chunk in response])
        return _reply_dict(response.choices[0].message)

    def call() -> Json:
        response = target.completion(**kwargs)
        if kwargs.get("stream"):
            return assemble(list(response))
        return _reply_dict(response.choices[0].message)

    return await asyncio.to_thread(call)


def client_view(reply: Json, keep: bool) -> Json:
    """What the client sends back of a reply: all of it, or role, content and tool calls."""
    out: Json = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                },
            }
            for call in reply["tool_calls"]
        ]
    if keep:
        for key in ("thinking_blocks", "reasoning_content", "provider_specific_fields"):
            if reply.get(key) is not None:
                out[key] = reply[key]
    return out


@dataclass
class Run:
    name: str
    wire: Wire
    replies: list[Json]
    sent: list[Json]


async def play(
    name: str, mode: Mode, *, keep: bool, stream: bool | None = None, wait: bool = False
) -> Run:
    """Every request of `name`'s script, each sent right after the previous reply arrived.

    `stream` overrides the first request's streaming (a JSON recording cannot be streamed, so
    only follow-ups, which are JSON, may be); `wait` lets the previous capture land first."""
    data = script(name)
    replies: list[Json] = []
    sent: list[Json] = []
    with replay(name) as wire:
        for k, request in enumerate(data["requests"]):
            body = copy.deepcopy(request["body"])
            for index, j in request["echoes"].items():
                body["messages"][int(index)] = client_view(replies[j], keep)
            if k > 0:
                body["stream"] = bool(stream)
            body["model"] = f"{data['provider']}/{body['model']}"
            if data["provider"] == "anthropic":
                body["api_key"] = "replay-without-a-key"
            else:
                body["aws_region_name"] = "us-east-1"
            sent.append(body)
            if wait and k > 0:
                await asyncio.sleep(0.2)
            replies.append(await send(mode, body))
    assert len(wire.exchanges) == len(data["requests"])
    return Run(name, wire, replies, sent)


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def leading_thinking(content: list[Json]) -> list[Json]:
    """The thinking blocks at the start of an Anthropic content list; none may follow."""
    n = 0
    while n < len(content) and content[n].get("type") in REC_THINKING:
        n += 1
    assert all(part.get("type") not in REC_THINKING for part in content[n:])
    return content[:n]


def parts_of(blocks: list[Json]) -> list[tuple[str, str, str | None]]:
    return [
        ("redacted", b["data"], None)
        if b["type"] == "redacted_thinking"
        else ("thinking", b["thinking"], b["signature"])
        for b in blocks
    ]


def record_parts(record: Reasoning) -> list[tuple[str, str, str | None]]:
    return [
        ("redacted", p.data or "", None) if p.kind == "redacted" else (p.kind, p.text, p.signature)
        for p in record.parts
    ]


def spy(callback: ReasoningCallback) -> SpyStore:
    assert isinstance(callback.store, SpyStore)
    return callback.store


def converse_reasoning(content: list[Json]) -> list[Json]:
    n = 0
    while n < len(content) and "reasoningContent" in content[n]:
        n += 1
    assert all("reasoningContent" not in part for part in content[n:])
    return content[:n]


@pytest.mark.usefixtures("fake_aws")
class TestRecordings:
    """Real Claude recordings (Anthropic Messages API, Bedrock Converse) replayed through real
    LiteLLM.

    Each test plays one cassette from `cassettes/` (built by `cassettes/build_cassettes.py`):
    request 1 as the recorded client sent it, then each later request as a client sends it after
    LiteLLM's reply, either keeping the reply as LiteLLM gave it (`thinking_blocks` included) or
    keeping only role, content and tool calls. vcrpy answers from the cassette (matching method and
    path) and the tests read the request bodies LiteLLM's HTTP client really sent.

    Expected thinking blocks come from the raw recordings: the request the recorded client sent
    (and the provider accepted) after the reply, and the reply itself (JSON content blocks, SSE
    `thinking_delta` / `signature_delta` events, or Bedrock's binary event stream), never from
    LiteLLM or the callback."""

    @pytest.fixture
    def make_callback(self) -> Iterator[Callable[..., ReasoningCallback]]:
        def make(**kwargs: Any) -> ReasoningCallback:
            callback = ReasoningCallback(SpyStore(), capture_wait_seconds=10.0, **kwargs)
            litellm.callbacks = [callback]
            return callback

        litellm.logging_callback_manager._reset_all_callbacks()
        yield make
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.fixture
    def callback(self, make_callback: Callable[..., ReasoningCallback]) -> ReasoningCallback:
        return make_callback()

    @pytest.mark.parametrize("mode", ["sync", "async", "router.sync", "router.async"])
    @keeps_or_drops
    async def test_anthropic_tool_loop_sends_the_signed_thinking_back_exactly(
        self, mode: Mode, keep: bool, callback: ReasoningCallback
    ) -> None:
        """claude-sonnet-4-0 tool loop (non-streaming): request 2 carries the reply's signed
        thinking block byte for byte, first in the assistant message, then the text and the
        tool_use, as the recorded client sent it and Anthropic accepted."""
        run = await play("anthropic_tool_loop", mode, keep=keep)
        rec = recorded("anthropic_tool_loop")

        reply_blocks = [
            b for b in json.loads(rec[0]["response"])["content"] if b["type"] in REC_THINKING
        ]
        accepted = rec[1]["request"]["messages"][1]["content"]
        assert leading_thinking(accepted) == reply_blocks
        assert len(reply_blocks) == 1 and reply_blocks[0]["signature"].startswith("EqEE")

        assert run.wire.body(0)["messages"] == rec[0]["request"]["messages"]
        on_wire = run.wire.body(1)["messages"]
        assert [m["role"] for m in on_wire] == ["user", "assistant", "user"]
        assert leading_thinking(on_wire[1]["content"]) == reply_blocks
        assert [(b["type"], b.get("text"), b.get("id")) for b in on_wire[1]["content"][1:]] == [
            (b["type"], b.get("text"), b.get("id")) for b in accepted[1:]
        ]
        assert run.wire.body(1)["thinking"] == rec[1]["request"]["thinking"]

        await eventually(lambda: callback.stats["captured"] >= 1)
        first = spy(callback).records[0]
        assert record_parts(first) == parts_of(reply_blocks)
        # the model that answered (the recorded reply names the snapshot behind the alias asked for)
        answered = json.loads(rec[0]["response"])["model"]
        assert rec[0]["request"]["model"] == "claude-sonnet-4-0" != answered
        assert (first.provider, first.model) == ("anthropic", answered)
        assert callback.stats["restored"] == (0 if keep else 1)
        assert callback.stats["thinking_disabled"] == 0
        assert callback.stats["dropped"] == 0
        assert callback.stats["errors"] == 0

    @sync_and_async
    @keeps_or_drops
    @streamed_or_not
    async def test_anthropic_streamed_tool_use_is_restored_the_instant_the_stream_ends(
        self, mode: Mode, keep: bool, stream: bool, callback: ReasoningCallback
    ) -> None:
        """claude-sonnet-4-6 SSE (thinking_delta, signature_delta, text, tool_use): the tool-result
        request sent right after the stream ends carries the assembled, signed thinking block."""
        run = await play("anthropic_stream_tool_use", mode, keep=keep, stream=stream)
        rec = recorded("anthropic_stream_tool_use")

        (streamed,) = [b for b in sse_content(_text(rec[0]["response"])) if b["type"] == "thinking"]
        assert streamed["signature"].startswith("EroC") and streamed["thinking"].startswith(
            "The user"
        )
        on_wire = run.wire.body(1)["messages"]
        assert leading_thinking(on_wire[1]["content"]) == [streamed]
        assert [b["type"] for b in on_wire[1]["content"]] == ["thinking", "text", "tool_use"]
        assert on_wire[2]["content"][0]["type"] == "tool_result"
        assert callback.stats["restored"] == (0 if keep else 1)
        assert callback.stats["errors"] == 0
        await eventually(lambda: callback.stats["captured"] >= 1)
        assert record_parts(spy(callback).records[0]) == parts_of([streamed])

    @sync_and_async
    @keeps_or_drops
    async def test_anthropic_two_streamed_redacted_blocks_go_back_in_order(
        self, mode: Mode, keep: bool, callback: ReasoningCallback
    ) -> None:
        """Two redacted_thinking blocks that arrived whole in content_block_start: the next request
        of the same turn (a `turn: false` note) carries both, data exact, in order, first."""
        run = await play("anthropic_redacted_stream", mode, keep=keep)
        rec = recorded("anthropic_redacted_stream")

        redacted = sse_content(_text(rec[0]["response"]))[:2]
        assert [b["type"] for b in redacted] == ["redacted_thinking", "redacted_thinking"]
        on_wire = run.wire.body(1)["messages"]
        assert leading_thinking(on_wire[1]["content"]) == redacted
        assert "turn" not in on_wire[2]
        assert callback.stats["restored"] == (0 if keep else 1)
        await eventually(lambda: callback.stats["captured"] >= 1)
        assert record_parts(spy(callback).records[0]) == parts_of(redacted)

    @sync_and_async
    @keeps_or_drops
    @pytest.mark.parametrize("name", ["anthropic_thinking_part", "anthropic_redacted"])
    async def test_anthropic_new_question_sends_no_earlier_thinking(
        self, name: str, mode: Mode, keep: bool, callback: ReasoningCallback
    ) -> None:
        """A new question starts a turn: under the default policy the earlier reply goes without
        its thinking (the recorded client sent it; pre-Opus-4.5 Claude strips it anyway)."""
        run = await play(name, mode, keep=keep)
        rec = recorded(name)

        assert leading_thinking(rec[1]["request"]["messages"][1]["content"])
        on_wire = run.wire.body(1)["messages"]
        assert leading_thinking(on_wire[1]["content"]) == []
        assert [b["text"] for b in on_wire[1]["content"]] == [
            b["text"] for b in rec[1]["request"]["messages"][1]["content"] if b["type"] == "text"
        ]
        assert callback.stats["stripped"] == (1 if keep else 0)
        assert callback.stats["restored"] == 0

    @sync_and_async
    @keeps_or_drops
    @pytest.mark.parametrize("name", ["anthropic_thinking_part", "anthropic_redacted"])
    async def test_anthropic_all_turns_policy_sends_what_the_recorded_client_sent(
        self, name: str, mode: Mode, keep: bool, make_callback: Callable[..., ReasoningCallback]
    ) -> None:
        """With `all_turns`, request 2 carries turn 1's thinking (signed, or redacted data) exactly
        as the recorded client sent it, restored when the client dropped it."""
        callback = make_callback(policies={"anthropic/*": "all_turns"})
        run = await play(name, mode, keep=keep)
        rec = recorded(name)

        accepted = leading_thinking(rec[1]["request"]["messages"][1]["content"])
        reply = [b for b in json.loads(rec[0]["response"])["content"] if b["type"] in REC_THINKING]
        assert accepted == reply and accepted
        assert leading_thinking(run.wire.body(1)["messages"][1]["content"]) == accepted
        assert callback.stats["restored"] == (0 if keep else 1)

    @pytest.mark.parametrize("mode", ["async", "router.async", "sync"])
    @keeps_or_drops
    async def test_bedrock_tool_loop_sends_reasoning_content_back_exactly(
        self, mode: Mode, keep: bool, callback: ReasoningCallback
    ) -> None:
        """Claude 3.7 on Bedrock Converse, tool loop (acompletion, Router, sync `completion`, whose
        body LiteLLM signs before any hook: rendered where LiteLLM builds it): request 2 carries the
        reply's reasoningText (text + signature) first, exactly as the recorded client sent it."""
        run = await play("bedrock_tool_loop", mode, keep=keep)
        rec = recorded("bedrock_tool_loop")

        reply = json.loads(rec[0]["response"])["output"]["message"]["content"]
        accepted = rec[1]["request"]["messages"][1]["content"]
        assert converse_reasoning(accepted) == converse_reasoning(reply) != []
        on_wire = run.wire.body(1)["messages"][1]["content"]
        assert converse_reasoning(on_wire) == converse_reasoning(accepted)
        assert [next(iter(b)) for b in on_wire] == ["reasoningContent", "text", "toolUse"]
        assert run.wire.body(1)["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
        assert callback.stats["restored"] == (0 if keep else 1)
        await eventually(lambda: callback.stats["captured"] >= 1)
        record = spy(callback).records[0]
        assert record.provider == "bedrock"
        text = reply[0]["reasoningContent"]["reasoningText"]
        assert record_parts(record) == [("thinking", text["text"], text["signature"])]

    @keeps_or_drops
    async def test_bedrock_redacted_content_reaches_the_wire(
        self, keep: bool, make_callback: Callable[..., ReasoningCallback]
    ) -> None:
        """Bedrock redactedContent (Claude 3.7): with `all_turns`, request 2 carries it exactly as
        the recorded client sent it. LiteLLM 1.106.12 drops redacted blocks for Converse; the
        callback's fix makes them arrive there too (1.110.2 sends them itself)."""
        callback = make_callback(policies={"bedrock/*": "all_turns"})
        run = await play("bedrock_redacted", "async", keep=keep)
        rec = recorded("bedrock_redacted")

        reply = json.loads(rec[0]["response"])["output"]["message"]["content"]
        accepted = converse_reasoning(rec[1]["request"]["messages"][1]["content"])
        assert accepted == converse_reasoning(reply)
        assert "redactedContent" in accepted[0]["reasoningContent"]
        assert converse_reasoning(run.wire.body(1)["messages"][1]["content"]) == accepted
        assert callback.stats["restored"] == (0 if keep else 1)

    @keeps_or_drops
    async def test_bedrock_binary_stream_reasoning_is_restored(
        self, keep: bool, callback: ReasoningCallback
    ) -> None:
        """converse-stream (AWS binary event stream): text deltas and a signature delta; the next
        request of the same turn carries the assembled reasoningText with its signature."""
        run = await play("bedrock_stream", "async", keep=keep)
        rec = recorded("bedrock_stream")

        expected = converse_stream_reasoning(rec[0]["response"])
        assert expected["reasoningContent"]["reasoningText"]["signature"]
        assert converse_reasoning(run.wire.body(1)["messages"][1]["content"]) == [expected]
        assert run.wire.exchanges[1].path.endswith("/converse")
        assert callback.stats["restored"] == (0 if keep else 1)


# ------------------------------ TestBedrock

BEDROCK_SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+bedrock0=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1bedrock1==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2Xbedrock2==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kbedrock3==",
]

BEDROCK_REDACTED = "EvgFCkYIBxgCKkBiZWRyb2NrLXJlZGFjdGVkLXRoaW5raW5nLTAwMDE="

BEDROCK_ALL_TURNS = "us.anthropic.claude-sonnet-4-6"  # earlier turns' thinking kept in context

BEDROCK_CURRENT_TURN = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

Server = BedrockClaudeUpstream | BedrockInvokeClaudeUpstream

ROUTES = ["converse", "invoke"]
"""LiteLLM's two Bedrock routes for Claude: Converse (the default) and `bedrock/invoke/`
(Anthropic Messages bodies inside Bedrock's framing)."""


async def bedrock_call(
    how: str, model: str, bedrock: Server, messages: list[Any], *, stream: bool
) -> Any:
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


BEDROCK_INTERLEAVED = {
    "plain": [
        _thinking("I need a.py.", BEDROCK_SIG[0]),
        _use("tooluse_a1", "a.py"),
        _thinking("And b.py, separately.", BEDROCK_SIG[1]),
        _use("tooluse_a2", "b.py"),
    ],
    "with-text": [
        _thinking("I need a.py.", BEDROCK_SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        _use("tooluse_b1", "a.py"),
        _thinking("Now b.py.", BEDROCK_SIG[3]),
        {"type": "redacted_thinking", "data": BEDROCK_REDACTED},
        {"type": "text", "text": "Then b.py."},
        _use("tooluse_b2", "b.py"),
    ],
}


@pytest.mark.usefixtures("fake_aws")
class TestBedrock:
    """Claude on Bedrock Converse exactly as it answered: interleaved thinking keeps its place among
    the reply's blocks, the interrupted tool loop keeps its blocks, and no assistant message goes
    out empty or holding only reasoning, on every call path (the sync one included: LiteLLM signs
    its Converse body before any hook), streamed (AWS event stream) or not, for a client that drops
    reasoning and one that keeps LiteLLM's `thinking_blocks`.

    The local server is strict (`BedrockClaudeUpstream`): it refuses as Bedrock does (an empty
    message, a reasoning-only prefill) and as Claude behind it does (thinking not first, an
    answered tool use without its block, a latest assistant message differing from its reply),
    with Bedrock's texts."""

    @pytest.fixture(scope="class")
    def servers(self) -> Iterator[dict[str, Server]]:
        with (
            BedrockClaudeUpstream(strict=True) as converse,
            BedrockInvokeClaudeUpstream(strict=True) as invoke,
        ):
            yield {"converse": converse, "invoke": invoke}

    @pytest.fixture
    def bedrock(self, servers: dict[str, Server]) -> Server:
        return servers["converse"]

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.mark.parametrize("route", ROUTES)
    @pytest.mark.parametrize("shape", sorted(BEDROCK_INTERLEAVED))
    @pytest.mark.parametrize("client", sorted(CLIENTS))
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_interleaved_blocks_go_back_in_their_original_order(
        self,
        how: str,
        stream: bool,
        client: str,
        shape: str,
        route: str,
        servers: dict[str, Server],
        callback: ReasoningCallback,
    ) -> None:
        bedrock = servers[route]
        reply = BEDROCK_INTERLEAVED[shape]
        bedrock.script(
            BEDROCK_ALL_TURNS,
            AnthropicReply(reply),
            AnthropicReply([{"type": "text", "text": "Done."}]),
        )
        before, refused = len(bedrock.bodies()), len(bedrock.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        message = await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, list(history), stream=stream)
        history.append(CLIENTS[client](message))
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        done = await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, list(history), stream=stream)
        assert bedrock.refusals[refused:] == []
        assert done.content == "Done."
        wire = bedrock.bodies()[before:]
        assert _assistant(wire[1], 0) == _as_sent(reply, route)
        assert callback.stats["errors"] == 0

    async def test_all_turns_keeps_every_earlier_message_in_its_order(
        self, bedrock: Server, callback: ReasoningCallback
    ) -> None:
        """After a new turn the earlier interleaved reply still goes back exactly as it came (the
        request extends the previous one), on the sync path too."""
        reply = BEDROCK_INTERLEAVED["plain"]
        closing = [_thinking("Both read.", BEDROCK_SIG[2]), {"type": "text", "text": "Done."}]
        bedrock.script(
            BEDROCK_ALL_TURNS,
            AnthropicReply(reply),
            AnthropicReply(closing),
            AnthropicReply([{"type": "text", "text": "Bye."}]),
        )
        before = len(bedrock.bodies())
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        history.append(
            dropping_client(
                await bedrock_call("completion", BEDROCK_ALL_TURNS, bedrock, history, stream=False)
            )
        )
        history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
        history.append(
            dropping_client(
                await bedrock_call("completion", BEDROCK_ALL_TURNS, bedrock, history, stream=True)
            )
        )
        history.append({"role": "user", "content": "Thanks."})
        await bedrock_call("acompletion", BEDROCK_ALL_TURNS, bedrock, list(history), stream=False)
        wire = bedrock.bodies()[before:]
        assert _assistant(wire[2], 0) == _as_sent(reply)
        assert _assistant(wire[2], 1) == _as_sent(closing)

    @pytest.mark.parametrize("route", ROUTES)
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
        self,
        how: str,
        stream: bool,
        route: str,
        servers: dict[str, Server],
        callback: ReasoningCallback,
    ) -> None:
        """Sonnet 4.5 keeps only the current turn; the user typed after the tool results. LiteLLM
        merges results and question into one user message: the loop is open, its block goes back."""
        bedrock = servers[route]
        first = [_thinking("Read a.py first.", BEDROCK_SIG[0]), _use("tooluse_c1", "a.py")]
        bedrock.script(
            BEDROCK_CURRENT_TURN,
            AnthropicReply(first),
            AnthropicReply([{"type": "text", "text": "Sure."}]),
        )
        before, refused = len(bedrock.bodies()), len(bedrock.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py."}]
        history.append(
            dropping_client(
                await bedrock_call(how, BEDROCK_CURRENT_TURN, bedrock, history, stream=stream)
            )
        )
        history += [_result("tooluse_c1"), {"role": "user", "content": "Actually, what is b.py?"}]
        answer = await bedrock_call(
            how, BEDROCK_CURRENT_TURN, bedrock, list(history), stream=stream
        )
        assert bedrock.refusals[refused:] == []
        assert answer.content == "Sure."
        wire = bedrock.bodies()[before:]
        assert _assistant(wire[1], 0) == _as_sent(first, route)
        assert "thinking" in (
            wire[1] if route == "invoke" else wire[1]["additionalModelRequestFields"]
        )
        assert callback.stats["thinking_disabled"] == 0

    @pytest.mark.parametrize("route", ROUTES)
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_tool_loop_with_no_block_to_send_goes_with_thinking_off(
        self, how: str, route: str, servers: dict[str, Server], callback: ReasoningCallback
    ) -> None:
        """The tool calls came from another provider (nothing Bedrock signed): thinking goes off
        for this call, the sync path included, instead of Claude's 400."""
        bedrock = servers[route]
        bedrock.script(BEDROCK_ALL_TURNS, AnthropicReply([{"type": "text", "text": "Read."}]))
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
        answer = await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, history, stream=False)
        assert bedrock.refusals[refused:] == []
        assert answer.content == "Read."
        (sent,) = bedrock.bodies()[before:]
        assert "thinking" not in sent
        assert "thinking" not in (sent.get("additionalModelRequestFields") or {})
        assert callback.stats["thinking_disabled"] == 1

    @pytest.mark.parametrize("how", ["acompletion", "completion"])
    async def test_no_reasoning_only_assistant_message_reaches_bedrock(
        self, how: str, bedrock: Server, callback: ReasoningCallback
    ) -> None:
        """A reply that was only thinking (cut at max_tokens) comes back from the client as an
        empty-text assistant message before the user's next line: its block is not put on it (a
        reasoning-only message is refused), so the request is what it would be without the
        callback."""
        bedrock.script(
            BEDROCK_ALL_TURNS,
            AnthropicReply([_thinking("Hmm, long.", BEDROCK_SIG[1])], stop_reason="max_tokens"),
            AnthropicReply([{"type": "text", "text": "Go on."}]),
        )
        before = len(bedrock.bodies())
        history: list[Any] = [{"role": "user", "content": "Think."}]
        await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, list(history), stream=False)
        history += [{"role": "assistant", "content": ""}, {"role": "user", "content": "And?"}]
        litellm.logging_callback_manager._reset_all_callbacks()  # the same request without it
        with contextlib.suppress(litellm.BadRequestError):
            await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, list(history), stream=False)
        sent_without = bedrock.bodies()[-1]["messages"]
        register(callback)
        bedrock.script(BEDROCK_ALL_TURNS, AnthropicReply([{"type": "text", "text": "Go on."}]))
        with contextlib.suppress(litellm.BadRequestError):
            await bedrock_call(how, BEDROCK_ALL_TURNS, bedrock, list(history), stream=False)
        sent_with = bedrock.bodies()[-1]["messages"]
        assert len(bedrock.bodies()) - before == 3
        assert sent_with == sent_without
        for message in sent_with:
            content = [b for b in message["content"] if "cachePoint" not in b]
            assert content, "an empty message reached Bedrock"
            assert not all("reasoningContent" in b for b in content)

    def test_the_strict_server_refuses_like_bedrock(self) -> None:
        """The server's own refusals, with Bedrock's texts (what the suites above run against)."""
        from litellm_reasoning.testing.bedrock_upstream import bedrock_refusal

        reasoning = {
            "reasoningContent": {"reasoningText": {"text": "t", "signature": BEDROCK_SIG[0]}}
        }
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


# ------------------------------ TestVertex

VERTEX_SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+vertex0=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1vertex1==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2Xvertex2==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kvertex3==",
]

VERTEX_REDACTED = "EvgFCkYIBxgCKkB2ZXJ0ZXgtcmVkYWN0ZWQtdGhpbmtpbmctMDAwMQ=="

VERTEX_ALL_TURNS = "claude-sonnet-4-6"

VERTEX_CURRENT_TURN = "claude-sonnet-4-5@20250929"


async def vertex_call(
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


VERTEX_INTERLEAVED = {
    "plain": [
        claude_thinking("I need a.py.", VERTEX_SIG[0]),
        claude_tool_use("toolu_v1", "a.py"),
        claude_thinking("And b.py, separately.", VERTEX_SIG[1]),
        claude_tool_use("toolu_v2", "b.py"),
    ],
    "with-text": [
        claude_thinking("I need a.py.", VERTEX_SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        claude_tool_use("toolu_w1", "a.py"),
        claude_thinking("", VERTEX_SIG[3]),
        {"type": "redacted_thinking", "data": VERTEX_REDACTED},
        {"type": "text", "text": "Then b.py."},
        claude_tool_use("toolu_w2", "b.py"),
    ],
}


class TestVertex:
    """Claude on Vertex AI exactly as it answered, through LiteLLM's real Vertex transport (its
    google-auth service-account flow against a local token endpoint): interleaved thinking keeps
    its place, the interrupted tool loop keeps its blocks, a loop with no Vertex-signed block goes
    with thinking off, on every call path, streamed or not, for a client that drops reasoning and
    one that keeps LiteLLM's `thinking_blocks`. The server validates as Claude does
    (`VertexClaudeUpstream(strict=True)`, the Anthropic server's checks)."""

    @pytest.fixture(scope="class", autouse=True)
    def _needs(self) -> None:
        pytest.importorskip("google.auth", reason="LiteLLM's Vertex transport needs google-auth")

    @pytest.fixture(scope="class")
    def vertex(self) -> Iterator[VertexClaudeUpstream]:
        with VertexClaudeUpstream(strict=True) as up:
            yield up

    @pytest.fixture(scope="class")
    def credentials(self, vertex: VertexClaudeUpstream) -> str:
        return json.dumps(service_account(vertex.token_uri))

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.mark.parametrize("shape", sorted(VERTEX_INTERLEAVED))
    @pytest.mark.parametrize("client", sorted(CLIENTS))
    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_interleaved_blocks_go_back_in_their_original_order(
        self,
        how: str,
        stream: bool,
        client: str,
        shape: str,
        vertex: VertexClaudeUpstream,
        credentials: str,
        callback: ReasoningCallback,
    ) -> None:
        reply = VERTEX_INTERLEAVED[shape]
        vertex.script(
            VERTEX_ALL_TURNS,
            AnthropicReply(reply),
            AnthropicReply([{"type": "text", "text": "Done."}]),
        )
        before, refused = len(vertex.bodies(VERTEX_ALL_TURNS)), len(vertex.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
        message = await vertex_call(
            how, VERTEX_ALL_TURNS, vertex, credentials, list(history), stream=stream
        )
        history.append(CLIENTS[client](message))
        history += [tool_result(c["id"]) for c in history[-1]["tool_calls"]]
        done = await vertex_call(
            how, VERTEX_ALL_TURNS, vertex, credentials, list(history), stream=stream
        )
        assert vertex.refusals[refused:] == []
        assert done.content == "Done."
        wire = vertex.bodies(VERTEX_ALL_TURNS)[before:]
        assert _assistant(wire[1], 0) == reply
        assert callback.stats["errors"] == 0

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
        self,
        how: str,
        stream: bool,
        vertex: VertexClaudeUpstream,
        credentials: str,
        callback: ReasoningCallback,
    ) -> None:
        """Sonnet 4.5 keeps only the current turn; the user typed after the tool results: the
        loop is still open for Claude, its block goes back."""
        first = [
            claude_thinking("Read a.py first.", VERTEX_SIG[0]),
            claude_tool_use("toolu_x1", "a.py"),
        ]
        vertex.script(
            VERTEX_CURRENT_TURN,
            AnthropicReply(first),
            AnthropicReply([{"type": "text", "text": "Sure."}]),
        )
        before, refused = len(vertex.bodies(VERTEX_CURRENT_TURN)), len(vertex.refusals)
        history: list[Any] = [{"role": "user", "content": "Read a.py."}]
        message = await vertex_call(
            how, VERTEX_CURRENT_TURN, vertex, credentials, history, stream=stream
        )
        history.append(dropping_client(message))
        history += [tool_result("toolu_x1"), {"role": "user", "content": "Actually, what is b.py?"}]
        answer = await vertex_call(
            how, VERTEX_CURRENT_TURN, vertex, credentials, list(history), stream=stream
        )
        assert vertex.refusals[refused:] == []
        assert answer.content == "Sure."
        wire = vertex.bodies(VERTEX_CURRENT_TURN)[before:]
        assert _assistant(wire[1], 0) == first
        assert "thinking" in wire[1]
        assert callback.stats["thinking_disabled"] == 0

    @pytest.mark.parametrize("how", CALLS)
    async def test_blocks_the_anthropic_api_signed_never_reach_vertex(
        self, how: str, vertex: VertexClaudeUpstream, credentials: str, callback: ReasoningCallback
    ) -> None:
        """The tool loop started on the Anthropic API (its reply's block is stored) and goes on
        on Vertex, another issuer: the block is left out and thinking goes off for the call,
        instead of Vertex's refusal of a signature it did not issue."""
        model = "claude-sonnet-4-6"
        first = [
            claude_thinking("Anthropic's own.", VERTEX_SIG[3]),
            claude_tool_use("toolu_y1", "a.py"),
        ]
        vertex.revoked.add(VERTEX_SIG[3])  # Vertex refuses it as an invalid signature
        vertex.script(VERTEX_ALL_TURNS, AnthropicReply([{"type": "text", "text": "Read."}]))
        before, refused = len(vertex.bodies(VERTEX_ALL_TURNS)), len(vertex.refusals)
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
        answer = await vertex_call(
            how, VERTEX_ALL_TURNS, vertex, credentials, history, stream=False
        )
        assert answer.content == "Read."
        assert vertex.refusals[refused:] == []
        (sent,) = vertex.bodies(VERTEX_ALL_TURNS)[before:]
        assert "thinking" not in sent
        assert [b["type"] for b in _assistant(sent, 0)] == ["tool_use"]
        assert callback.stats["thinking_disabled"] == 1

    def test_the_transport_really_authenticated(self, vertex: VertexClaudeUpstream) -> None:
        """LiteLLM fetched its access token from the local token endpoint (google-auth ran)."""
        assert any(r.path.endswith(TOKEN_PATH) for r in vertex.received)
        sent = [
            r for r in vertex.received if ":rawPredict" in r.path or "streamRawPredict" in r.path
        ]
        assert sent and all(r.headers.get("authorization") == "Bearer local-token" for r in sent)


# ------------------------------ TestThirdPartyAnthropicApis

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]

THOUGHT = {"type": "thinking", "thinking": "Read a.py first."}
"""A third-party API's block: no signature."""


def _third_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


async def _tool_loop(
    how: str,
    server: AnthropicUpstream,
    model: str,
    api_key: str,
    second_key: str,
    stream: bool = False,
) -> dict[str, Any]:
    """A tool call, then its result from a client that dropped the block (the second request
    with `second_key`): the tool-call message as it reached the server."""
    call_id = "toolu_" + uuid.uuid4().hex[:10]
    server.script(
        model,
        AnthropicReply(
            [THOUGHT, {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}]
        ),
        AnthropicReply([{"type": "text", "text": "done"}]),
    )
    messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
    common = {"stream": stream, "tools": TOOLS, "max_tokens": 1024}
    reply = await complete(
        how, f"anthropic/{model}", server.base_url, messages, api_key=api_key, **common
    )
    messages += [
        {"role": "assistant", "content": reply.content, "tool_calls": [_third_call(call_id)]},
        {"role": "tool", "tool_call_id": call_id, "content": "x = 1"},
    ]
    await complete(
        how, f"anthropic/{model}", server.base_url, messages, api_key=second_key, **common
    )
    sent: dict[str, Any] = server.bodies(model)[-1]["messages"][1]
    return sent


class TestThirdPartyAnthropicApis:
    """`anthropic/` deployments at a third-party Anthropic-compatible API (MiniMax, Kimi, DeepSeek,
    MiMo, Thinking Machines' Tinker for Inkling: a custom `api_base`) on the chat route: their
    thinking blocks carry no Anthropic signature. A client that drops them gets them back as the
    deployment issued them, in place (LiteLLM 1.110 drops unsigned blocks when it translates a chat
    message: they are put on the body it built); never on another deployment's request (another
    credential: a real Claude would refuse an unsigned block), and Claude's own signed path is
    unchanged (its tests).

    Through real LiteLLM (`acompletion` and `completion`) against the local Anthropic-format
    server."""

    @pytest.mark.parametrize("stream", [False, True])
    @pytest.mark.parametrize("how", ["acompletion", "completion"])
    @pytest.mark.parametrize("model", ["MiniMax-M3", "kimi-k2.7", "thinkingmachines/inkling"])
    async def test_a_third_party_apis_blocks_go_back_as_issued(
        self, how: str, model: str, stream: bool
    ) -> None:
        callback = register(ReasoningCallback(capture_wait_seconds=5))
        with AnthropicUpstream() as server:
            sent = await _tool_loop(how, server, model, "key-a", "key-a", stream)
        assert sent["content"][0] == THOUGHT  # as issued: no signature added, none required
        assert [b["type"] for b in sent["content"]] == ["thinking", "tool_use"]
        assert callback.stats["restored"] == 1 and callback.stats["dropped"] == 0

    @pytest.mark.parametrize("how", ["acompletion", "completion"])
    async def test_never_to_another_deployment(self, how: str) -> None:
        """The same model name behind other credentials (another account, or Claude itself): an
        unsigned block is not its to take."""
        callback = register(ReasoningCallback(capture_wait_seconds=5))
        with AnthropicUpstream() as server:
            sent = await _tool_loop(how, server, "MiniMax-M3", "key-a", "key-b")
        assert [b["type"] for b in sent["content"]] == ["tool_use"]
        assert callback.stats["restored"] == 0


# ------------------------------ TestMessagesSdk

MESSAGES_TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
"""The one tool of the `/v1/messages` tests (Anthropic format)."""

SDK_SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-messages-sdk=="

SDK_REPLY = [
    {"type": "thinking", "thinking": "Read a.py first.", "signature": SDK_SIG},
    {"type": "text", "text": "Reading a.py."},
    {"type": "tool_use", "id": "toolu_sdk_1", "name": "read_file", "input": {"path": "a"}},
]


def _params(model: str, base_url: str) -> dict[str, Any]:
    """A Claude tool loop with thinking on, sent to the local Anthropic server."""
    return {
        "model": f"anthropic/{model}",
        "api_base": base_url,
        "api_key": "k",
        "max_tokens": 2048,
        "thinking": THINKING,
        "tools": [MESSAGES_TOOL],
    }


def _serve(claude: AnthropicUpstream, model: str, first: list[Any], then: str) -> dict[str, Any]:
    """`claude` answers `model` with `first`, then always with `then`; the call's params."""
    claude.script(model, AnthropicReply(first))
    claude.always(model, AnthropicReply([{"type": "text", "text": then}]))
    return _params(model, claude.base_url)


def _streams_need_the_proxy_extra() -> None:
    # LiteLLM streams this route through modules of its proxy (1.110.2 without the proxy extra
    # fails the stream itself: `No module named 'fastapi'`).
    pytest.importorskip("fastapi", reason="LiteLLM streams /v1/messages only with its proxy extra")


class _Successes(CustomLogger):
    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex  # LiteLLM keeps one instance per class and fields
        self.metadata: list[dict[str, Any]] = []

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.metadata.append(kwargs["litellm_params"]["metadata"])


class _WithoutRequestHook(ReasoningCallback):
    """The callback as it was before it defined `async_pre_request_hook` (the control)."""

    async_pre_request_hook = CustomLogger.async_pre_request_hook  # type: ignore[assignment]


REDACTED_DISPLAY = [  # `redact-thinking-2026-02-12` (Claude Code): the text withheld, signed
    {"type": "thinking", "thinking": "", "signature": SDK_SIG + "-redacted-display"},
    {"type": "tool_use", "id": "toolu_sdk_r1", "name": "read_file", "input": {"path": "a"}},
    {"type": "thinking", "thinking": "", "signature": SDK_SIG + "-redacted-display-2"},
    {"type": "tool_use", "id": "toolu_sdk_r2", "name": "read_file", "input": {"path": "b"}},
]


def _sdk_result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "x"}


class TestMessagesSdk:
    """The Anthropic Messages format through LiteLLM's SDK (`litellm.anthropic.messages.acreate`,
    what the proxy's `/v1/messages` calls): a client that drops thinking blocks gets them back in
    place, so a strict Claude accepts its tool loop; a client that keeps them sends what it got."""

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    async def test_messages_acreate_restores_dropped_thinking_in_place(
        self, callback: ReasoningCallback, keeps: bool
    ) -> None:
        model = f"claude-sonnet-4-5-messages-{keeps}"
        with AnthropicUpstream(strict=True) as claude:
            claude.script(model, AnthropicReply(SDK_REPLY))
            claude.always(model, AnthropicReply([{"type": "text", "text": "one line"}]))

            async def send(messages: list[Any]) -> Any:
                return await litellm.anthropic.messages.acreate(
                    model=f"anthropic/{model}",
                    messages=messages,
                    api_base=claude.base_url,
                    api_key="k",
                    max_tokens=2048,
                    thinking=THINKING,
                    tools=[MESSAGES_TOOL],
                )

            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            first = await send(messages)
            content = first["content"]
            sent_back = content if keeps else [b for b in content if b["type"] != "thinking"]
            messages += [
                {"role": "assistant", "content": sent_back},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}
                    ],
                },
            ]
            answer = await send(messages)
            wire = claude.bodies(model)[-1]["messages"]
        assert answer["content"][0]["text"] == "one line"
        assert claude.refusals == []
        assert wire[1]["content"] == SDK_REPLY
        assert callback.stats["captured"] == 1
        assert callback.stats["restored"] == (0 if keeps else 1)

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    async def test_messages_acreate_stream_is_captured_from_its_sse(
        self, callback: ReasoningCallback, keeps: bool
    ) -> None:
        """An SDK stream (`acreate(stream=True)`): LiteLLM hands the hooks a chat-shaped copy of the
        reply, so it is captured from the SSE bytes LiteLLM collected: the next request of a client
        that dropped the thinking gets it back in place, exactly."""
        _streams_need_the_proxy_extra()
        model = f"claude-sonnet-4-5-messages-stream-{keeps}"
        with AnthropicUpstream(strict=True) as claude:
            params = _serve(claude, model, SDK_REPLY, "one line")
            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            stream = await litellm.anthropic.messages.acreate(
                messages=messages, stream=True, **params
            )
            sse = b"".join([c async for c in stream]).decode()
            assert '"signature_delta"' in sse  # the thinking came streamed, signed
            sent_back = SDK_REPLY if keeps else [b for b in SDK_REPLY if b["type"] != "thinking"]
            messages += [
                {"role": "assistant", "content": sent_back},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}
                    ],
                },
            ]
            answer = await litellm.anthropic.messages.acreate(messages=messages, **params)
            wire = claude.bodies(model)[-1]["messages"]
        assert answer["content"][0]["text"] == "one line"
        assert claude.refusals == []
        assert wire[1]["content"] == SDK_REPLY
        for _ in range(200):  # a keeping client's next request waits for nothing: poll
            if callback.stats["captured"]:
                break
            await asyncio.sleep(0.05)
        assert callback.stats["captured"] == 1
        assert callback.stats["restored"] == (0 if keeps else 1)

    async def test_messages_calls_get_a_decisions_summary(self) -> None:
        callback, successes = ReasoningCallback(capture_wait_seconds=10.0), _Successes()
        register(callback)
        litellm.callbacks = [callback, successes]
        model = "claude-sonnet-4-5-messages-summary"
        try:
            with AnthropicUpstream(strict=True) as claude:
                params = _serve(claude, model, SDK_REPLY, "one line")
                messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
                first = await litellm.anthropic.messages.acreate(messages=messages, **params)
                messages += [
                    {
                        "role": "assistant",
                        "content": [b for b in first["content"] if b["type"] != "thinking"],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}
                        ],
                    },
                ]
                await litellm.anthropic.messages.acreate(messages=messages, **params)
                deadline = asyncio.get_running_loop().time() + 30
                while len(successes.metadata) < 2:
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.05)
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
            litellm.callbacks = []
        summary = successes.metadata[-1]["spend_logs_metadata"]["litellm_reasoning"]
        assert summary["messages"] == {"1": "restored"}
        assert summary["counts"]["restored"] == 1 and summary["dialect"] == "anthropic"
        assert summary["reasoning_tokens"]["sent"] > 0

    @pytest.mark.parametrize("defines_hook", [True, False], ids=["callback", "control"])
    async def test_litellm_rust_core_on_the_messages_route(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, defines_hook: bool
    ) -> None:
        """LiteLLM's opt-in Rust core (`LITELLM_RUST=true`) serves Anthropic-format calls to
        `anthropic/` without running the reply hooks: nothing is captured, and a dropping client's
        tool loop is refused (the control shows it). LiteLLM 1.110+ keeps a call on Python when a
        callback defines `async_pre_request_hook`, and the callback does: the loop completes.
        LiteLLM 1.106 / 1.108 route by provider alone: the callback warns once, naming the model."""
        catalog = pytest.importorskip("litellm.rust_bridge.catalog", reason="no Rust core")
        monkeypatch.setenv("LITELLM_RUST", "true")
        caplog.set_level("WARNING", logger="litellm_reasoning")
        feature = getattr(getattr(catalog, "Feature", None), "PRE_REQUEST_HOOK", None)
        kept_on_python = defines_hook and feature is not None
        kind = ReasoningCallback if defines_hook else _WithoutRequestHook
        callback = register(kind(capture_wait_seconds=2.0))
        # A model that always thinks: thinking cannot go off for the loop with no block, so the
        # control's missing capture shows as Claude's refusal.
        model = f"claude-fable-5-1-rust-{defines_hook}-{uuid.uuid4().hex[:6]}"
        try:
            with AnthropicUpstream(strict=True) as claude:
                params = _serve(claude, model, SDK_REPLY, "one line")
                messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
                first = await litellm.anthropic.messages.acreate(messages=messages, **params)
                dropped = [b for b in first["content"] if b["type"] != "thinking"]
                result = [{"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}]
                messages += [
                    {"role": "assistant", "content": dropped},
                    {"role": "user", "content": result},
                ]
                if kept_on_python:
                    await litellm.anthropic.messages.acreate(messages=messages, **params)
                else:
                    with pytest.raises(litellm.BadRequestError, match="Expected `thinking`"):
                        await litellm.anthropic.messages.acreate(messages=messages, **params)
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        warnings = [r.getMessage() for r in caplog.records if "Rust core" in r.getMessage()]
        if kept_on_python:
            assert claude.refusals == []
            assert claude.bodies(model)[-1]["messages"][1]["content"] == SDK_REPLY
            assert callback.stats["captured"] == 1 and callback.stats["restored"] == 1
            assert warnings == []
        else:
            assert callback.stats["captured"] == 0  # the Rust core ran no reply hook
            if feature is None:  # LiteLLM 1.106 / 1.108: said once, naming the model
                assert len(warnings) == 1 and f"anthropic/{model}" in warnings[0]

    async def test_the_adapter_route_keeps_the_turn_across_a_delivery(
        self,
        callback: ReasoningCallback,
    ) -> None:
        """A chat-completions model behind the Anthropic format (LiteLLM's adapter drops `turn`):
        the chat call is told which user messages start a turn, so a delivery keeps the tool
        loop's reasoning on a current_turn target (Qwen on vLLM)."""
        from litellm_reasoning.testing.upstream import Reply, Upstream

        call = {"id": "call_s1", "type": "function", "function": {"name": "read_file"}}
        call["function"]["arguments"] = '{"path": "a"}'
        with Upstream() as chat:
            chat.script(
                "qwen3-32b",
                Reply(
                    {
                        "role": "assistant",
                        "content": "",
                        "reasoning_content": "Read a.",
                        "tool_calls": [call],
                    }
                ),
            )
            chat.always("qwen3-32b", Reply({"role": "assistant", "content": "done"}))

            async def send(messages: list[Any]) -> Any:
                return await litellm.anthropic.messages.acreate(
                    model="hosted_vllm/qwen3-32b",
                    messages=messages,
                    api_base=chat.base_url,
                    api_key="k",
                    max_tokens=256,
                    tools=[MESSAGES_TOOL],
                )

            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            first = await send(messages)
            kept = [b for b in first["content"] if b["type"] in ("text", "tool_use")]
            messages += [
                {"role": "assistant", "content": kept},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "call_s1", "content": "x"}],
                },
                {"role": "user", "content": "(build finished)", "turn": False},
            ]
            await send(messages)
            sent = chat.bodies("qwen3-32b")[-1]["messages"]
        loop = next(m for m in sent if m.get("tool_calls"))
        assert (loop.get("reasoning_content") or loop.get("reasoning")) == "Read a."
        assert not any("turn" in m for m in sent)

    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    async def test_thinking_blocks_with_no_text_are_restored_in_place(
        self, callback: ReasoningCallback, stream: bool
    ) -> None:
        """Claude Code's redact-thinking beta returns thinking blocks whose text is empty and whose
        signature alone carries them: stored and restored in place like any other, never dropped
        as empty (anthropics/claude-code#86865)."""
        if stream:
            _streams_need_the_proxy_extra()
        model = f"claude-opus-4-6-redact-display-{stream}"
        with AnthropicUpstream(strict=True) as claude:
            params = _serve(claude, model, REDACTED_DISPLAY, "both read")
            messages: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
            first = await litellm.anthropic.messages.acreate(
                messages=messages, stream=stream, **params
            )
            if stream:
                assert b'"signature_delta"' in b"".join([c async for c in first])
            messages += [
                {
                    "role": "assistant",
                    "content": [b for b in REDACTED_DISPLAY if b["type"] == "tool_use"],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_sdk_r{i}", "content": "x"}
                        for i in (1, 2)
                    ],
                },
            ]
            answer = await litellm.anthropic.messages.acreate(messages=messages, **params)
            wire = claude.bodies(model)[-1]["messages"]
        assert answer["content"][0]["text"] == "both read"
        assert claude.refusals == []
        assert wire[1]["content"] == REDACTED_DISPLAY
        assert callback.stats["restored"] == 1

    async def test_same_tool_ids_under_other_system_prompts_never_share_a_record(
        self,
        callback: ReasoningCallback,
    ) -> None:
        """Round three, the Anthropic format: an Anthropic-compatible API that hands out the same
        tool ids (`functions.<name>:<n>`), one key, the same user message under two customers'
        system prompts. Each customer's next request gets its own thinking back, never the other's
        (the replies interleave, so a shared key would hand the later one's to both)."""
        model = f"claude-compatible-{uuid.uuid4().hex[:6]}"
        tool_id = "functions.read_file:0"

        def reply(customer: str) -> AnthropicReply:
            return AnthropicReply(
                [
                    {
                        "type": "thinking",
                        "thinking": f"secret of {customer}",
                        "signature": customer,
                    },
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "read_file",
                        "input": {"path": "a"},
                    },
                ]
            )

        with AnthropicUpstream() as claude:
            claude.always(model, AnthropicReply([{"type": "text", "text": "done"}]))

            async def send(customer: str, messages: list[Any]) -> Any:
                system = f"You are the assistant of customer {customer}."
                params = _params(model, claude.base_url)
                return await litellm.anthropic.messages.acreate(
                    messages=messages, system=system, **params
                )

            question = {"role": "user", "content": "What is in a.py?"}
            replies = {}
            for customer in ("A", "B"):
                claude.script(model, reply(customer))
                replies[customer] = await send(customer, [question])
            sent = {}
            for customer in ("A", "B"):
                kept = [b for b in replies[customer]["content"] if b["type"] != "thinking"]
                await send(
                    customer,
                    [
                        question,
                        {"role": "assistant", "content": kept},
                        {"role": "user", "content": [_sdk_result(tool_id)]},
                    ],
                )
                wire = claude.bodies(model)[-1]["messages"]
                blocks = wire[1]["content"]
                sent[customer] = [b.get("thinking") for b in blocks if b["type"] == "thinking"]
        assert sent == {"A": ["secret of A"], "B": ["secret of B"]}

    async def test_same_tool_ids_in_two_conversations_of_one_customer_never_share_a_record(
        self,
        callback: ReasoningCallback,
    ) -> None:
        """The same, one system prompt: two conversations that began differently reach the same
        user message and the same first call (`functions.<name>:0`), one key. Each next request
        gets its own conversation's thinking back (the later reply is placed apart by the store)."""
        model = f"claude-compatible-{uuid.uuid4().hex[:6]}"
        tool_id = "functions.read_file:0"
        system = "You are a coding agent."

        def reply(conversation: str) -> AnthropicReply:
            return AnthropicReply(
                [
                    {"type": "thinking", "thinking": f"plan of {conversation}", "signature": "s"},
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "read_file",
                        "input": {"path": "a"},
                    },
                ]
            )

        with AnthropicUpstream() as claude:
            claude.always(model, AnthropicReply([{"type": "text", "text": "done"}]))

            async def send(messages: list[Any]) -> Any:
                params = _params(model, claude.base_url)
                return await litellm.anthropic.messages.acreate(
                    messages=messages, system=system, **params
                )

            go_on = {"role": "user", "content": "Go on."}
            histories = {
                name: [
                    {"role": "user", "content": f"About {name}.py"},
                    {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
                    go_on,
                ]
                for name in ("x", "y")
            }
            for name, history in histories.items():
                claude.script(model, reply(name))
                answer = await send(history)
                kept = [b for b in answer["content"] if b["type"] != "thinking"]
                history += [
                    {"role": "assistant", "content": kept},
                    {"role": "user", "content": [_sdk_result(tool_id)]},
                ]
            sent = {}
            for name, history in histories.items():
                await send(history)
                blocks = claude.bodies(model)[-1]["messages"][3]["content"]
                sent[name] = [b.get("thinking") for b in blocks if b["type"] == "thinking"]
        assert sent == {"x": ["plan of x"], "y": ["plan of y"]}
        assert callback.stats["shared_key_own"] == 1

    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    async def test_the_replys_prompt_cache_is_counted(
        self, callback: ReasoningCallback, stream: bool
    ) -> None:
        """`/v1/messages`: Claude's `usage` (input tokens not counting the cache, cache reads and
        writes apart; a stream's from `message_start` and `message_delta`) in the stats."""
        if stream:
            _streams_need_the_proxy_extra()
        model = f"claude-sonnet-4-5-cache-{uuid.uuid4().hex[:6]}"
        usage = {
            "input_tokens": 12,
            "cache_read_input_tokens": 4000,
            "cache_creation_input_tokens": 80,
            "output_tokens": 5,
        }
        with AnthropicUpstream() as claude:
            claude.script(model, AnthropicReply(SDK_REPLY, extra={"usage": usage}))
            reply = await litellm.anthropic.messages.acreate(
                messages=[{"role": "user", "content": "What is in a.py?"}],
                stream=stream,
                **_params(model, claude.base_url),
            )
            if stream:
                [c async for c in reply]
            for _ in range(200):  # a stream is captured as its last event passes: poll
                if callback.stats["captured"]:
                    break
                await asyncio.sleep(0.05)
        assert (
            callback.stats["cache_read_tokens"],
            callback.stats["cache_write_tokens"],
            callback.stats["uncached_prompt_tokens"],
        ) == (4000, 80, 12)

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    async def test_after_a_compaction_block_kept_turns_go_back_whole_and_nothing_before(
        self,
        keeps: bool,
    ) -> None:
        """`compact-2026-09-04`: the API reads nothing before the compaction block, and checks the
        thinking of the turns kept after it against the compacted conversation. So the earlier
        exchange's block is not restored (all_turns would restore it), and the kept turns' blocks
        all go (restored for a client that dropped them, left as a keeping client sent them), where
        the budget would cut them as earlier turns of an uncompacted conversation."""
        callback = register(ReasoningCallback(capture_wait_seconds=10.0, max_reasoning_tokens=5))
        model = f"claude-opus-4-6-compaction-{keeps}"
        old = [
            {
                "type": "thinking",
                "thinking": "An old thought, summarised away.",
                "signature": SDK_SIG,
            },
            {"type": "text", "text": "Old answer."},
        ]
        loop = [
            {
                "type": "thinking",
                "thinking": "After the summary: read a.py.",
                "signature": SDK_SIG + "2",
            },
            {"type": "tool_use", "id": "toolu_kept_1", "name": "read_file", "input": {"path": "a"}},
        ]
        answer = [
            {"type": "thinking", "thinking": "a.py holds x.", "signature": SDK_SIG + "3"},
            {"type": "text", "text": "It holds x."},
        ]
        compaction = {"type": "compaction", "content": "Summary of the old exchange."}
        try:
            with AnthropicUpstream(strict=True) as claude:
                claude.script(model, *(AnthropicReply(c) for c in (old, loop, answer)))
                claude.always(model, AnthropicReply([{"type": "text", "text": "b.py holds y."}]))
                params = _params(model, claude.base_url)

                def back(reply: Any) -> dict[str, Any]:
                    content = reply["content"]
                    kept = content if keeps else [b for b in content if b["type"] != "thinking"]
                    return {"role": "assistant", "content": kept}

                messages: list[Any] = [{"role": "user", "content": "An old question."}]
                messages.append(
                    back(await litellm.anthropic.messages.acreate(messages=messages, **params))
                )
                messages += [
                    {"role": "user", "content": "Compact, then: what is in a.py?"},
                    {"role": "assistant", "content": [compaction]},
                    {"role": "user", "content": "What is in a.py?"},
                ]
                messages.append(
                    back(await litellm.anthropic.messages.acreate(messages=messages, **params))
                )
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_kept_1", "content": "x"}
                        ],
                    }
                )
                messages.append(
                    back(await litellm.anthropic.messages.acreate(messages=messages, **params))
                )
                messages.append({"role": "user", "content": "And b.py?"})
                await litellm.anthropic.messages.acreate(messages=messages, **params)
                wire = claude.bodies(model)[-1]["messages"]
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        assert claude.refusals == []
        # Before the compaction block: never restored; a kept block the budget may take (the API
        # does not read it).
        assert wire[1]["content"] == [old[1]]
        assert wire[3]["content"] == [compaction]
        assert wire[5]["content"] == loop  # the kept turns, whole
        assert wire[7]["content"] == answer
        # The old block, cut in each of the three requests after it (a keeping client sent it).
        assert callback.stats["over_budget"] == (3 if keeps else 0)

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
    async def test_a_fallback_reply_is_kept_as_the_model_that_answered_it(
        self, callback: ReasoningCallback, stream: bool
    ) -> None:
        """Anthropic's `fallbacks` (Fable 5): another model answers and the reply's `model` (the
        stream's `message_start`) says which. The record names that model; its signed blocks go
        back in place to the conversation's next request (same credentials)."""
        if stream:
            _streams_need_the_proxy_extra()
        model = f"claude-fable-5-messages-{stream}"
        with AnthropicUpstream(strict=True) as claude:
            claude.script(model, AnthropicReply(SDK_REPLY, extra={"model": "claude-opus-4-6"}))
            claude.always(model, AnthropicReply([{"type": "text", "text": "one line"}]))
            params = _params(model, claude.base_url)
            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            if stream:
                reply = await litellm.anthropic.messages.acreate(
                    messages=messages, stream=True, **params
                )
                assert b'"claude-opus-4-6"' in b"".join([c async for c in reply])
            else:
                assert (await litellm.anthropic.messages.acreate(messages=messages, **params))[
                    "model"
                ] == "claude-opus-4-6"
            messages += [
                {"role": "assistant", "content": [b for b in SDK_REPLY if b["type"] != "thinking"]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}
                    ],
                },
            ]
            await litellm.anthropic.messages.acreate(messages=messages, **params)
            wire = claude.bodies(model)[-1]["messages"]
        assert claude.refusals == []
        assert wire[1]["content"] == SDK_REPLY
        models = [record.model for record in stored(callback)]
        assert models == ["claude-opus-4-6"]

    @pytest.mark.parametrize("model", ["claude-sonnet-4-5-no-block", "claude-fable-5-1-no-block"])
    async def test_an_open_tool_loop_with_no_block_to_send_turns_thinking_off_where_it_can(
        self, callback: ReasoningCallback, model: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """`/v1/messages`, a client that dropped the thinking block of the tool use it answers, and
        no record of it (another gateway made the call, or its record expired): a strict Claude
        refuses the loop with thinking on. As on chat, thinking goes off for this call where the
        model lets it (Sonnet 4.5: the call passes, the earlier message's block goes with it);
        Fable 5.1 always thinks, so the request goes as the client sent it, with a warning, and
        Claude's 400 is the one it gets without this callback."""
        import logging

        earlier = {"type": "thinking", "thinking": "Look first.", "signature": SDK_SIG}
        use = {
            "type": "tool_use",
            "id": "toolu_no_block",
            "name": "read_file",
            "input": {"path": "a"},
        }
        messages: list[Any] = [
            {"role": "user", "content": "What is in b.py?"},
            {"role": "assistant", "content": [earlier, {"type": "text", "text": "Nothing."}]},
            {"role": "user", "content": "And a.py?"},
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_no_block", "content": "x"}
                ],
            },
        ]
        with AnthropicUpstream(strict=True) as claude:
            claude.always(model, AnthropicReply([{"type": "text", "text": "one line"}]))
            with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
                try:
                    answer = await litellm.anthropic.messages.acreate(
                        messages=messages, **_params(model, claude.base_url)
                    )
                except Exception as exc:  # Claude's 400, as without the callback
                    answer = exc
            (body,) = claude.bodies(model)
        if "sonnet" in model:
            assert answer["content"][0]["text"] == "one line"
            assert claude.refusals == []
            assert "thinking" not in body
            assert body["messages"][1]["content"] == [{"type": "text", "text": "Nothing."}]
            assert body["messages"][3]["content"] == [use]
            assert callback.stats["thinking_disabled"] == 1
            assert "thinking turned off" in caplog.text
        else:
            assert isinstance(answer, Exception)
            assert len(claude.refusals) == 1
            assert body["thinking"]["type"] != "disabled"  # LiteLLM may make it `adaptive`
            assert body["messages"] == messages
            assert callback.stats["thinking_stays_on"] == 1
            assert callback.stats["thinking_disabled"] == 0
            assert "cannot be turned off" in caplog.text


# ------------------------------ TestMessagesLimits


def _turn(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": f"Think about {tag}. " * 20, "signature": f"EqQB-{tag}=="},
        {"type": "text", "text": f"{tag} done."},
    ]


def _limits_call(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": f"Read {tag}.", "signature": f"EqQB-call-{tag}=="},
        {"type": "tool_use", "id": f"toolu_{tag}", "name": "read_file", "input": {"path": tag}},
    ]


async def _conversation(
    model: str, callback: ReasoningCallback
) -> tuple[list[dict[str, Any]], AnthropicUpstream]:
    """Two answered turns, then a tool loop in the current turn; the client keeps every block.
    Returns the last request's messages as they reached Claude."""
    with AnthropicUpstream(strict=True) as claude:
        claude.script(
            model,
            AnthropicReply(_turn("one")),
            AnthropicReply(_turn("two")),
            AnthropicReply(_limits_call("three")),
        )
        claude.always(model, AnthropicReply([{"type": "text", "text": "three done."}]))

        async def send(messages: list[Any]) -> Any:
            return await send_messages(claude.base_url, model, messages, tools=[MESSAGES_TOOL])

        messages: list[Any] = []
        for question in ("One?", "Two?", "Three?"):
            messages.append({"role": "user", "content": question})
            reply = await send(messages)
            messages.append({"role": "assistant", "content": reply["content"]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_three", "content": "x"}],
            }
        )
        await send(messages)
        assert claude.refusals == []
        return claude.bodies(model)[-1]["messages"], claude


def _kinds(message: dict[str, Any]) -> list[str]:
    return [b["type"] for b in message["content"]]


class TestMessagesLimits:
    """The Anthropic-format route applies the chat path's policy and budget to earlier turns
    (`litellm.anthropic.messages`, what the proxy's `/v1/messages` calls): a turn the policy leaves
    out loses the blocks a client kept, `max_reasoning_tokens` drops the oldest blocks as one
    leading run, the current turn is never touched, and the strict Claude server accepts each
    request. The decisions summary says what happened to each message."""

    async def test_current_turn_takes_the_blocks_a_client_kept_out_of_earlier_turns(self) -> None:
        callback = register(ReasoningCallback(policies={"claude-sonnet-4-5*": "current_turn"}))
        try:
            wire, _ = await _conversation("claude-sonnet-4-5-limits", callback)
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        assert _kinds(wire[1]) == ["text"] and _kinds(wire[3]) == ["text"]
        assert wire[5]["content"] == _limits_call("three")  # the current turn's loop, untouched
        # Request 2 leaves turn one's block out, requests 3 and 4 (the tool result continues
        # turn three) those of turns one and two.
        assert callback.stats["stripped"] == 1 + 2 + 2

    async def test_the_budget_drops_the_oldest_blocks_as_one_leading_run(self) -> None:
        callback = register(ReasoningCallback(max_reasoning_tokens=150))
        try:
            wire, _ = await _conversation("claude-opus-4-6-limits", callback)
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        # Each earlier turn's block is ~88 estimated tokens, the loop's ~7: 183 > 150, so the
        # oldest (turn one's) goes; requests 3 and 4 both drop it.
        assert _kinds(wire[1]) == ["text"]
        assert _kinds(wire[3]) == ["thinking", "text"]
        assert wire[5]["content"] == _limits_call("three")
        assert callback.stats["over_budget"] == 2

    def test_a_long_stream_is_read_back_whole(self) -> None:
        """12 000 thinking deltas and a tool input in 400 pieces (a long Claude Code step): the
        blocks come back whole, each field's pieces joined once."""
        import json as _json

        from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, sse_from_reply
        from litellm_reasoning.wire.anthropic.messages import content_of_stream

        thinking = "".join(f"step {i}. " for i in range(12_000))
        tool_input = {"path": "x" * 2_000}
        reply = AnthropicReply(
            [
                {"type": "thinking", "thinking": thinking, "signature": "EqQB-long=="},
                {"type": "tool_use", "id": "toolu_long", "name": "read_file", "input": tool_input},
            ]
        )
        events = []
        recut: set[str] = set()
        for event in sse_from_reply("claude-sonnet-4-6", reply).split("\n\n"):
            data = event.partition("data: ")[2]
            payload = _json.loads(data) if data else None
            delta = (payload or {}).get("delta") or {}
            kind = delta.get("type")
            if kind in recut:
                continue  # the server's own pieces of what was re-cut already
            if kind in ("thinking_delta", "input_json_delta"):
                recut.add(kind)
            if kind == "thinking_delta":  # re-cut into one delta per step
                for i in range(12_000):
                    piece = {**payload, "delta": {**delta, "thinking": f"step {i}. "}}
                    events.append(f"event: content_block_delta\ndata: {_json.dumps(piece)}")
                continue
            if kind == "input_json_delta":
                text = _json.dumps(tool_input)
                for start in range(0, len(text), 5):
                    piece = {**payload, "delta": {**delta, "partial_json": text[start : start + 5]}}
                    events.append(f"event: content_block_delta\ndata: {_json.dumps(piece)}")
                continue
            if event:
                events.append(event)
        deltas = [e for e in events if "thinking_delta" in e]
        assert len(deltas) == 12_000
        assert content_of_stream("\n\n".join(events) + "\n\n") == reply.content


# ------------------------------ TestMessagesToolChanges

GREP = {"name": "grep", "description": "Search files", "input_schema": {"type": "object"}}

CHANGES = {
    # a tool by value (inline-tools) and one taken away by name (mid-conversation tool changes)
    "inline": [{"type": "tool_addition", "tool": {"type": "tool_definition", "definition": GREP}}],
    "by_name": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "read_file"}}],
}


def _changes_thinking(text: str, tag: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": f"EqQB-{tag}=="}


def _dropped(reply: Any) -> dict[str, Any]:
    kept = [block for block in reply["content"] if block["type"] != "thinking"]
    return {"role": "assistant", "content": kept}


class TestMessagesToolChanges:
    """Anthropic's mid-conversation system messages and tool changes
    (`mid-conversation-tool-changes-2026-07-01`, `inline-tools-2026-09-15`: a `{"role": "system"}`
    message inside `messages` carrying `tool_addition` / `tool_removal` blocks, a tool by name or
    by value) on `/v1/messages` (`litellm.anthropic.messages`): the rewrite leaves these messages
    alone, byte for byte, and restores the dropped thinking of the assistant messages around them; a
    system message starts no turn, so the tool loop after it is the current turn's. The strict
    Claude server accepts every request."""

    @pytest.mark.parametrize("change", sorted(CHANGES))
    async def test_tool_changes_pass_untouched_and_the_thinking_around_them_is_restored(
        self,
        change: str,
    ) -> None:
        callback = register(ReasoningCallback())
        model = "claude-opus-4-6"
        system = {"role": "system", "content": CHANGES[change]}
        sent_system = copy.deepcopy(system)
        with AnthropicUpstream(strict=True) as claude:
            claude.script(
                model,
                AnthropicReply(
                    [
                        _changes_thinking("Read it.", "a"),
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                    ]
                ),
                AnthropicReply([_changes_thinking("Done.", "b"), {"type": "text", "text": "done"}]),
                AnthropicReply(
                    [
                        _changes_thinking("Grep now.", "c"),
                        {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}},
                    ]
                ),
                AnthropicReply([{"type": "text", "text": "found"}]),
            )
            messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
            reply = await send_messages(claude.base_url, model, messages, tools=[MESSAGES_TOOL])
            messages += [
                _dropped(reply),
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
            ]
            reply = await send_messages(claude.base_url, model, messages, tools=[MESSAGES_TOOL])
            messages += [_dropped(reply), system, {"role": "user", "content": "Now search"}]
            reply = await send_messages(claude.base_url, model, messages, tools=[MESSAGES_TOOL])
            messages += [
                _dropped(reply),
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2"}]},
            ]
            await send_messages(claude.base_url, model, messages, tools=[MESSAGES_TOOL])
            assert claude.refusals == []
            bodies = claude.bodies(model)
        assert system == sent_system  # the client's own message is not changed in place
        for body in bodies[2:]:
            wire = body["messages"]
            assert wire[4] == sent_system  # on the wire byte for byte, where the client put it
            first = [m["content"][0]["type"] for m in wire if m["role"] == "assistant"]
            assert first == ["thinking"] * len(first)  # every dropped block back in place
        # The tool loop after the system message is the current turn's (Claude's 400 without it).
        assert bodies[3]["messages"][6]["content"][0] == _changes_thinking("Grep now.", "c")
        assert callback.stats["restored"] == 1 + 2 + 3


# ------------------------------ TestMessagesNativeNotClaude


def _reply(tag: str, signature: str | None) -> list[dict[str, Any]]:
    thinking: dict[str, Any] = {"type": "thinking", "thinking": f"Read {tag}.py first."}
    if signature is not None:
        thinking["signature"] = signature
    return [
        thinking,
        {"type": "text", "text": f"Reading {tag}.py."},
        {"type": "tool_use", "id": f"call_{tag}_1", "name": "read_file", "input": {"path": tag}},
    ]


def _native_result(call_id: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "x"}],
    }


async def _send(
    model: str, server: AnthropicUpstream, messages: list[Any], *, path: str = "", key: str = "k"
) -> Any:
    """One `/v1/messages` call; `path`: appended to the server's base URL (an `anthropic/`
    deployment at DeepSeek's Anthropic-compatible API has `…/anthropic` as its api_base)."""
    return await litellm.anthropic.messages.acreate(
        model=model,
        messages=messages,
        api_base=server.base_url + path,
        api_key=key,
        max_tokens=2048,
        thinking=THINKING,
        tools=[MESSAGES_TOOL],
    )


class TestMessagesNativeNotClaude:
    """`/v1/messages` to a model that is not Claude but that LiteLLM forwards natively (DeepSeek's
    and MiniMax's Anthropic-compatible APIs), through LiteLLM's SDK (`litellm.anthropic.messages`,
    what the proxy's route calls): the provider's own thinking blocks (no Anthropic signature) go
    back as it issued them, in place, on the turns its rule needs (DeepSeek V4 with tools: every
    turn), and only to the provider that issued them. The DeepSeek server refuses a tool loop that
    lost its block with DeepSeek's text."""

    @pytest.fixture
    def callback(self) -> Iterator[ReasoningCallback]:
        yield register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.logging_callback_manager._reset_all_callbacks()

    @pytest.mark.parametrize("route", ["deepseek", "anthropic"])
    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    async def test_deepseek_gets_its_blocks_back_on_every_turn(
        self, callback: ReasoningCallback, keeps: bool, route: str
    ) -> None:
        """A tool loop, a new user turn, another tool loop: DeepSeek V4 with tools needs every
        earlier tool-call message's block (all turns); a client that dropped them gets them back
        exactly, a client that kept them sends what it got. Through LiteLLM's `deepseek/` and
        through an `anthropic/` deployment whose api_base is DeepSeek's Anthropic-compatible API
        (its blocks carry no Anthropic signature: that deployment is their issuer)."""
        model = f"deepseek-v4-pro-{keeps}-{route}"
        path = "/anthropic" if route == "anthropic" else ""
        first, second = _reply("a", None), _reply("b", None)
        with DeepSeekAnthropicUpstream() as deepseek:
            deepseek.script(
                model,
                AnthropicReply(first),
                AnthropicReply([{"type": "text", "text": "a holds x."}]),
                AnthropicReply(second),
            )
            deepseek.always(model, AnthropicReply([{"type": "text", "text": "b holds x."}]))

            def back(reply: Any) -> dict[str, Any]:
                content = reply["content"]
                kept = content if keeps else [b for b in content if b["type"] != "thinking"]
                return {"role": "assistant", "content": kept}

            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            messages += [
                back(await _send(f"{route}/{model}", deepseek, messages, path=path)),
                _native_result("call_a_1"),
            ]
            messages.append(back(await _send(f"{route}/{model}", deepseek, messages, path=path)))
            messages.append({"role": "user", "content": "And b.py?"})
            messages += [
                back(await _send(f"{route}/{model}", deepseek, messages, path=path)),
                _native_result("call_b_1"),
            ]
            final = await _send(f"{route}/{model}", deepseek, messages, path=path)
            wire = deepseek.bodies(model)[-1]["messages"]
            paths = {r.path for r in deepseek.received}
        assert paths == {"/anthropic/v1/messages"}  # LiteLLM's native route, not its chat adapter
        assert deepseek.refusals == []
        assert final["content"][0]["text"] == "b holds x."
        assert wire[1]["content"] == first  # the earlier turn's loop, as DeepSeek issued it
        assert wire[5]["content"] == second
        # Dropped: request 2 gets loop a back, 3 loop a (an earlier turn now), 4 loops a and b.
        assert callback.stats["restored"] == (0 if keeps else 4)

    async def test_without_the_callback_deepseek_refuses_the_dropped_loop(self) -> None:
        """The control: the same dropping client without the callback gets DeepSeek's 400."""
        model = "deepseek-v4-pro-control"
        with DeepSeekAnthropicUpstream() as deepseek:
            deepseek.script(model, AnthropicReply(_reply("a", None)))
            messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
            reply = await _send(f"deepseek/{model}", deepseek, messages)
            dropped = [b for b in reply["content"] if b["type"] != "thinking"]
            messages += [{"role": "assistant", "content": dropped}, _native_result("call_a_1")]
            with pytest.raises(litellm.BadRequestError, match="must be passed back"):
                await _send(f"deepseek/{model}", deepseek, messages)

    async def test_minimax_gets_its_blocks_back_as_issued(
        self, callback: ReasoningCallback
    ) -> None:
        model = "MiniMax-M2.5"
        first = _reply("m", "minimax-own")
        with AnthropicUpstream() as minimax:
            minimax.script(model, AnthropicReply(first))
            minimax.always(model, AnthropicReply([{"type": "text", "text": "done"}]))
            messages: list[Any] = [{"role": "user", "content": "What is in m.py?"}]
            reply = await _send(f"minimax/{model}", minimax, messages)
            dropped = [b for b in reply["content"] if b["type"] != "thinking"]
            messages += [{"role": "assistant", "content": dropped}, _native_result("call_m_1")]
            await _send(f"minimax/{model}", minimax, messages)
            wire = minimax.bodies(model)[-1]["messages"]
        assert wire[1]["content"] == first
        assert callback.stats["restored"] == 1

    async def test_claude_blocks_never_reach_deepseek(self, callback: ReasoningCallback) -> None:
        """A loop Claude started (its signed block stored) goes on on DeepSeek: the Claude block is
        not DeepSeek's and is not sent there (DeepSeek gets the message as the client sent it)."""
        signed = [
            {"type": "thinking", "thinking": "Claude's own.", "signature": "EqQBCgIYAh-claude=="},
            {"type": "tool_use", "id": "toolu_c_1", "name": "read_file", "input": {"path": "c"}},
        ]
        with AnthropicUpstream(strict=True) as claude, DeepSeekAnthropicUpstream() as deepseek:
            claude.script("claude-sonnet-4-5", AnthropicReply(signed))
            deepseek.always("deepseek-v4-pro-x", AnthropicReply([{"type": "text", "text": "ok"}]))
            messages: list[Any] = [{"role": "user", "content": "What is in c.py?"}]
            reply = await _send("anthropic/claude-sonnet-4-5", claude, messages)
            dropped = [b for b in reply["content"] if b["type"] != "thinking"]
            messages += [{"role": "assistant", "content": dropped}, _native_result("toolu_c_1")]
            with pytest.raises(litellm.BadRequestError, match="must be passed back"):
                await _send("deepseek/deepseek-v4-pro-x", deepseek, messages)
            wire = deepseek.bodies("deepseek-v4-pro-x")[-1]["messages"]
        assert wire[1]["content"] == dropped
        assert callback.stats["restored"] == 0

    async def test_a_third_party_deployments_blocks_never_reach_claude(
        self,
        callback: ReasoningCallback,
    ) -> None:
        """Blocks an `anthropic/` deployment at DeepSeek issued (unsigned) stay with it: the same
        conversation sent on to Claude (another deployment of the same provider) gets none of
        them, and Claude refuses nothing."""
        first = _reply("d", None)
        with AnthropicUpstream(strict=True) as claude, DeepSeekAnthropicUpstream() as deepseek:
            deepseek.script("deepseek-v4-pro-on", AnthropicReply(first))
            deepseek.always("deepseek-v4-pro-on", AnthropicReply([{"type": "text", "text": "d."}]))
            claude.always("claude-sonnet-4-5", AnthropicReply([{"type": "text", "text": "ok"}]))
            messages: list[Any] = [{"role": "user", "content": "What is in d.py?"}]
            model = "anthropic/deepseek-v4-pro-on"
            reply = await _send(model, deepseek, messages, path="/anthropic")
            dropped = [b for b in reply["content"] if b["type"] != "thinking"]
            messages += [{"role": "assistant", "content": dropped}, _native_result("call_d_1")]
            messages.append(await _send(model, deepseek, messages, path="/anthropic"))
            messages[-1] = {"role": "assistant", "content": messages[-1]["content"]}
            messages.append({"role": "user", "content": "Thanks. Now c.py?"})
            await _send("anthropic/claude-sonnet-4-5", claude, messages, key="claude-key")
            wire = claude.bodies("claude-sonnet-4-5")[-1]["messages"]
        assert deepseek.refusals == [] and claude.refusals == []
        assert wire[1]["content"] == dropped
        assert callback.stats["restored"] == 1  # DeepSeek's own loop, on DeepSeek only


# ------------------------------ TestClaudeCode

FIXTURE = json.loads((REPO / "tests" / "fixtures" / "claude_code_reordered.json").read_text())

CODE_REPLY: list[dict[str, Any]] = FIXTURE["reply"]

REQUEST: dict[str, Any] = FIXTURE["request"]

DONE = AnthropicReply([{"type": "text", "text": "Fixed."}])

QUESTION = "Fix the failing parser test."

CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["input_schema"],
        },
    }
    for tool in REQUEST["tools"]
]


class Summaries(CustomLogger):
    """A logging integration: the decisions summary of each successful call, by model."""

    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex  # LiteLLM keeps one instance per class and fields
        self.by_model: dict[str, list[dict[str, Any]]] = {}

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any = None, start_time: Any = None, end_time: Any = None
    ) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        spend = (payload.get("metadata") or {}).get("spend_logs_metadata") or {}
        if METADATA_KEY in spend:
            model = str(payload.get("model") or "")
            self.by_model.setdefault(model, []).append(spend[METADATA_KEY])

    def log_success_event(
        self, kwargs: Any, response_obj: Any = None, start_time: Any = None, end_time: Any = None
    ) -> None:
        asyncio.run(self.async_log_success_event(kwargs))


async def _summary(summaries: Summaries, model: str) -> dict[str, Any]:
    """The summary of the last call to `model` that sent an assistant message (success events
    run after the call returns, a sync call's on LiteLLM's logging thread: under load the first
    call's, which has none, may be logged after the second's)."""
    for _ in range(200):
        found = [s for name, got in summaries.by_model.items() if model in name for s in got]
        with_messages = [s for s in found if s["messages"]]
        if with_messages:
            return with_messages[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no summary of the second call to {model}: {summaries.by_model}")


def _altered(messages: list[Any]) -> list[Any]:
    """The fixture's messages with one word of the second thinking block changed."""
    out = copy.deepcopy(messages)
    block = out[1]["content"][2]
    block["thinking"] = block["thinking"].replace("parallel", "sequence")
    return out


def _sent_assistant(claude: AnthropicUpstream, model: str) -> list[Any]:
    sent = claude.bodies(model)[-1]["messages"]
    return next(m for m in sent if m["role"] == "assistant")["content"]


async def _messages_call(how: str, model: str, claude: AnthropicUpstream, messages: Any) -> Any:
    params = {k: v for k, v in REQUEST.items() if k != "messages"}
    if how == "router":
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "claude-code",
                    "litellm_params": {
                        "model": f"anthropic/{model}",
                        "api_base": claude.base_url,
                        "api_key": "k",
                    },
                }
            ]
        )
        return await router.aanthropic_messages(model="claude-code", messages=messages, **params)
    return await litellm.anthropic.messages.acreate(
        model=f"anthropic/{model}",
        messages=messages,
        api_base=claude.base_url,
        api_key="k",
        **params,
    )


def _chat_history(messages: list[Any], reply: Any) -> list[Any]:
    """The fixture's request as a chat client that keeps inline blocks sends it: the assistant
    message's content holds the blocks in Claude Code's order, the tool uses as tool calls
    (which LiteLLM puts after the content: exactly Claude Code's order on the wire)."""
    assistant = messages[1]["content"]
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in reply.tool_calls
    ]
    return [
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": [b for b in assistant if b["type"] != "tool_use"],
            "tool_calls": calls,
        },
        *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls),
    ]


async def _chat_call(how: str, model: str, claude: AnthropicUpstream, messages: Any) -> Any:
    return await complete(
        how,
        f"anthropic/{model}",
        claude.base_url,
        messages,
        stream=False,
        tools=CHAT_TOOLS,
        thinking=REQUEST["thinking"],
        max_tokens=REQUEST["max_tokens"],
    )


class TestClaudeCode:
    """Claude Code reorders interleaved blocks itself: given the reply `[thinking, text, tool_use,
    thinking, tool_use]` it sends back `[thinking, text, thinking, tool_use, tool_use]`, and Claude
    refuses ("cannot be modified"). When the blocks a client kept are exactly the stored reply's
    blocks in another order or grouping, they go out in the order Claude issued them, counted as
    `reordered`; a message whose blocks differ in anything is left as the client sent it.

    The request is `tests/fixtures/claude_code_reordered.json` (the shape of the public reports),
    sent in the Anthropic format (`litellm.anthropic.messages`, alone and through a Router) and in
    the chat format (a client that keeps inline blocks in its content, which LiteLLM sends in
    exactly Claude Code's order), to the strict local Claude."""

    @pytest.fixture(scope="class")
    def claude(self) -> Iterator[AnthropicUpstream]:
        with AnthropicUpstream(strict=True) as up:
            yield up

    @pytest.fixture
    def summaries(self) -> Summaries:
        return Summaries()

    @pytest.fixture
    def callback(self, summaries: Summaries) -> Iterator[ReasoningCallback]:
        cb = register(ReasoningCallback(capture_wait_seconds=10.0))
        litellm.callbacks = [cb, summaries]
        yield cb
        litellm.logging_callback_manager._reset_all_callbacks()
        litellm.callbacks = []

    @pytest.mark.parametrize("how", ["acreate", "router"])
    async def test_claude_codes_reordered_message_goes_out_as_claude_issued_it(
        self, how: str, claude: AnthropicUpstream, callback: ReasoningCallback, summaries: Summaries
    ) -> None:
        model = f"claude-opus-4-6-cc-{how}"
        claude.script(model, AnthropicReply(CODE_REPLY), DONE)
        refused = len(claude.refusals)
        first = await _messages_call(how, model, claude, REQUEST["messages"][:1])
        assert first["content"] == CODE_REPLY
        done = await _messages_call(how, model, claude, REQUEST["messages"])
        assert claude.refusals[refused:] == []
        assert done["content"][0]["text"] == "Fixed."
        assert _sent_assistant(claude, model) == CODE_REPLY
        assert callback.stats["reordered"] == 1
        assert callback.stats["errors"] == 0
        summary = await _summary(summaries, model)
        assert summary["counts"]["reordered"] == 1
        assert summary["messages"] == {"1": "reordered"}

    @pytest.mark.parametrize("how", ["acreate", "router"])
    async def test_a_message_whose_blocks_differ_is_left_as_the_client_sent_it(
        self, how: str, claude: AnthropicUpstream, callback: ReasoningCallback
    ) -> None:
        model = f"claude-opus-4-6-cc-altered-{how}"
        claude.script(model, AnthropicReply(CODE_REPLY), DONE)
        await _messages_call(how, model, claude, REQUEST["messages"][:1])
        messages = _altered(REQUEST["messages"])
        with pytest.raises(litellm.BadRequestError, match="cannot be modified"):
            await _messages_call(how, model, claude, messages)
        assert _sent_assistant(claude, model) == messages[1]["content"]
        assert callback.stats["reordered"] == 0

    @pytest.mark.parametrize("alter", [False, True], ids=["exact", "one-block-differs"])
    @pytest.mark.parametrize("how", CALLS)
    async def test_a_chat_client_keeping_inline_blocks_in_claude_codes_order(
        self,
        how: str,
        alter: bool,
        claude: AnthropicUpstream,
        callback: ReasoningCallback,
        summaries: Summaries,
    ) -> None:
        model = f"claude-opus-4-6-cc-chat-{how}-{alter}"
        claude.script(model, AnthropicReply(CODE_REPLY), DONE)
        refused = len(claude.refusals)
        reply = await _chat_call(how, model, claude, [{"role": "user", "content": QUESTION}])
        source = _altered(REQUEST["messages"]) if alter else REQUEST["messages"]
        history = _chat_history(source, reply)
        if alter:
            with pytest.raises(litellm.BadRequestError, match="cannot be modified"):
                await _chat_call(how, model, claude, history)
            assert _sent_assistant(claude, model) == source[1]["content"]  # the client's order
            assert callback.stats["reordered"] == 0
            return
        done = await _chat_call(how, model, claude, history)
        assert claude.refusals[refused:] == []
        assert done.content == "Fixed."
        assert _sent_assistant(claude, model) == CODE_REPLY
        assert callback.stats["reordered"] == 1
        summary = await _summary(summaries, model)
        assert summary["counts"]["reordered"] == 1
        assert summary["messages"] == {"1": "reordered"}

    def test_a_kept_reply_whose_order_is_not_known_is_left_as_sent(self) -> None:
        """A reply with blocks of kinds a layout does not know (server tools) is stored without a
        layout: a message holding such blocks is never "repaired" into thinking-first order (the
        client's order may well be Claude's). Without such blocks, no layout means Claude's own
        order: thinking first."""
        from litellm_reasoning.wire.anthropic.messages import in_issued_order, record_of_reply

        a = {"type": "thinking", "thinking": "Search first.", "signature": "EqQB-st-1=="}
        b = {"type": "thinking", "thinking": "Now read.", "signature": "EqQB-st-2=="}
        use = {"type": "tool_use", "id": "toolu_st_1", "name": "Read", "input": {}}
        search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
        result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
        with_server_tools = [a, search, result, b, use]
        record = record_of_reply(with_server_tools, provider="anthropic", model="m")
        assert record is not None and record.layout == ()
        message = {"role": "assistant", "content": with_server_tools}
        assert in_issued_order(message, record) is None
        plain = record_of_reply([a, b, use], provider="anthropic", model="m")
        assert plain is not None and plain.layout == ()
        moved = {"role": "assistant", "content": [a, use, b]}
        assert in_issued_order(moved, plain) == {"role": "assistant", "content": [a, b, use]}


# ------------------------------ TestMessagesProxy

GROUPS = {
    "claude": "claude-sonnet-4-5",
    "claude-loop": "claude-sonnet-4-5-loop",
    "claude-loop-stream": "claude-sonnet-4-5-loop-stream",
    "claude-current": "claude-sonnet-4-5-current",
    "claude-code": "claude-opus-4-6-code",
    "claude-code-stream": "claude-opus-4-6-code-stream",
}
"""Model group -> the upstream model (one script each). `claude-current*`: policy current_turn."""

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="


def _blocks(message: Any) -> list[dict[str, Any]]:
    return [b.model_dump(exclude_none=True) for b in message.content]


def _dropping(message: Any) -> dict[str, Any]:
    """What a client that keeps only text and tool uses sends back of a reply."""
    return {
        "role": "assistant",
        "content": [b for b in _blocks(message) if b["type"] in ("text", "tool_use")],
    }


def _sender(proxy: Any, group: str, stream: bool, **extra: Any) -> Any:
    """`send(messages)`: one `/v1/messages` request with the official client, with the read
    tool (`messages.stream` read to its final message, or `messages.create`)."""
    import anthropic

    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    params = {"model": group, "max_tokens": 2048, "tools": [MESSAGES_TOOL], **extra}

    def send(messages: list[Any]) -> Any:
        if stream:
            with client.messages.stream(messages=messages, **params) as events:
                return events.get_final_message()
        return client.messages.create(messages=messages, **params)

    return send


def _keeping(message: Any) -> dict[str, Any]:
    """What a client that keeps the whole reply sends back of it."""
    return {"role": "assistant", "content": _blocks(message)}


def _proxy_result(call_id: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "one line"}, *extra],
    }


def _interleaved(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": "Read a.py first.", "signature": f"{SIGNATURE}{tag}a"},
        {"type": "text", "text": "Reading a.py."},
        {"type": "tool_use", "id": f"toolu_{tag}_1", "name": "read_file", "input": {"path": "a"}},
    ]


def _claude_code_request() -> dict[str, Any]:
    from paths import REPO

    path = REPO / "tests" / "fixtures" / "claude_code_reordered.json"
    fixture: dict[str, Any] = json.loads(path.read_text())
    return fixture


@pytest.mark.proxy
class TestMessagesProxy:
    """The proxy's Anthropic-format `/v1/messages` (Claude Code, the Anthropic SDKs), with the
    official `anthropic` client: the callback never floods the proxy log. Its streams reach the
    proxy's iterator hook as raw SSE bytes, which release 0.1.0 handed to LiteLLM's chunk builder
    (an ERROR line and a traceback for every streamed request)."""

    @pytest.fixture(scope="class")
    def claude(self) -> Iterator[AnthropicUpstream]:
        with AnthropicUpstream(strict=True) as up:
            yield up

    @pytest.fixture(scope="class")
    def deepseek(self) -> Iterator[DeepSeekAnthropicUpstream]:
        with DeepSeekAnthropicUpstream() as up:
            yield up

    @pytest.fixture(scope="class")
    def chat_server(self) -> Iterator[Upstream]:
        with Upstream() as up:
            yield up

    @pytest.fixture(scope="class")
    def proxy(
        self,
        claude: AnthropicUpstream,
        deepseek: DeepSeekAnthropicUpstream,
        chat_server: Upstream,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[Any]:
        from proxy_utils import proxy_config, run_proxy

        adapter = {
            "model_name": "qwen-adapter",
            "litellm_params": {
                "model": "hosted_vllm/qwen3-32b",
                "api_base": chat_server.base_url,
                "api_key": "k",
            },
        }

        native = [
            {
                "model_name": f"deepseek-{how}",
                "litellm_params": {
                    "model": f"deepseek/deepseek-v4-pro-{how}",
                    "api_base": deepseek.base_url,
                    "api_key": "k",
                },
            }
            for how in ("create", "stream")
        ]
        config = proxy_config(
            [
                {
                    "model_name": group,
                    "litellm_params": {
                        "model": f"anthropic/{model}",
                        "api_base": claude.base_url,
                        "api_key": "k",
                    },
                }
                for group, model in GROUPS.items()
            ]
            + native
            + [adapter]
        )
        workdir = tmp_path_factory.mktemp("messages")
        env = {
            "LITELLM_REASONING_STORE": f"sqlite:///{workdir / 'reasoning.db'}",
            "LITELLM_REASONING_POLICIES": json.dumps({"claude-current*": "current_turn"}),
        }
        with run_proxy(config, workdir, env=env) as running:
            running.store_url = env["LITELLM_REASONING_STORE"]  # type: ignore[attr-defined]
            yield running

    def test_messages_json_and_streams_leave_no_error_in_the_proxy_log(
        self, claude: AnthropicUpstream, proxy: Any
    ) -> None:
        import anthropic

        claude.always(
            "claude-sonnet-4-5",
            AnthropicReply(
                [
                    {"type": "thinking", "thinking": "Easy.", "signature": SIGNATURE},
                    {"type": "text", "text": "Hi."},
                ]
            ),
        )
        client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        reply = client.messages.create(
            model="claude", max_tokens=2048, messages=messages, thinking=THINKING
        )
        assert [b.type for b in reply.content] == ["thinking", "text"]
        for _ in range(3):
            with client.messages.stream(
                model="claude", max_tokens=2048, messages=messages, thinking=THINKING
            ) as stream:
                final = stream.get_final_message()
            assert [b.type for b in final.content] == ["thinking", "text"]
        log = proxy.log_path.read_text(errors="replace")
        errors = [
            line for line in log.splitlines() if "ERROR" in line or "litellm-reasoning:" in line
        ]
        assert errors == [] and "Traceback" not in log, "\n".join(errors) or log[-3000:]

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    def test_a_client_that_drops_thinking_completes_its_tool_loop(
        self, claude: AnthropicUpstream, proxy: Any, stream: bool, keeps: bool
    ) -> None:
        """`messages.create` / `messages.stream` through the proxy to a strict Claude: the client
        sends tool uses back without their thinking blocks; the callback puts them back where they
        stood, Claude accepts the loop; a reminder beside the tool result still continues the
        turn; the client that keeps its blocks sends exactly what it got."""

        group = "claude-loop-stream" if stream else "claude-loop"
        model, tag = GROUPS[group], ("s" if stream else "c") + ("k" if keeps else "")
        back = _keeping if keeps else _dropping
        second = [
            {"type": "thinking", "thinking": "Now b.py.", "signature": f"{SIGNATURE}{tag}b"},
            {
                "type": "tool_use",
                "id": f"toolu_{tag}_2",
                "name": "read_file",
                "input": {"path": "b"},
            },
        ]
        claude.script(model, AnthropicReply(_interleaved(tag)), AnthropicReply(second))
        claude.always(model, AnthropicReply([{"type": "text", "text": "Both hold one line."}]))
        send = _sender(proxy, group, stream, thinking=THINKING)

        messages: list[Any] = [{"role": "user", "content": "What is in a.py and b.py?"}]
        first = send(messages)
        assert _blocks(first) == _interleaved(tag)
        reminder = {"type": "text", "text": "<system-reminder>keep going</system-reminder>"}
        messages += [back(first), _proxy_result(f"toolu_{tag}_1", reminder)]
        reply = send(messages)
        messages += [back(reply), _proxy_result(f"toolu_{tag}_2")]
        final = send(messages)
        assert final.content[0].text == "Both hold one line."
        assert claude.refusals == []
        wire = claude.bodies(model)[-1]["messages"]
        assert wire[1]["content"] == _interleaved(tag), "blocks not back where they stood"
        assert wire[3]["content"] == second

    def test_a_delivery_keeps_the_turn_and_a_new_turn_starts_one(
        self, claude: AnthropicUpstream, proxy: Any
    ) -> None:
        """Policy current_turn: a user message with `"turn": false` (a delivery at a step boundary)
        does not start a turn, so the tool loop before it keeps its blocks; a real new question
        does, and the earlier turn's blocks stay out. `turn` never reaches Claude."""
        import anthropic

        group, tag = "claude-current", "d"
        model = GROUPS[group]
        claude.script(
            model,
            AnthropicReply(_interleaved(tag)),
            AnthropicReply([{"type": "text", "text": "a.py holds one line."}]),
        )
        claude.always(model, AnthropicReply([{"type": "text", "text": "b.py too."}]))
        client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
        params: dict[str, Any] = {"model": group, "max_tokens": 2048, "thinking": THINKING}
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = client.messages.create(messages=messages, tools=[MESSAGES_TOOL], **params)
        delivery = {"role": "user", "content": "(build finished)", "turn": False}
        messages += [_dropping(first), _proxy_result(f"toolu_{tag}_1"), delivery]
        second = client.messages.create(messages=messages, tools=[MESSAGES_TOOL], **params)
        messages += [_dropping(second), {"role": "user", "content": "And b.py?"}]
        client.messages.create(messages=messages, tools=[MESSAGES_TOOL], **params)
        during, after = claude.bodies(model)[1:]
        assert during["messages"][1]["content"] == _interleaved(tag)
        assert after["messages"][1]["content"] == _dropping(first)["content"]
        for body in (during, after):
            assert not any("turn" in m for m in body["messages"])
        assert claude.refusals == []

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    def test_a_native_deepseek_deployment_gets_its_own_blocks_back(
        self, deepseek: DeepSeekAnthropicUpstream, proxy: Any, stream: bool, keeps: bool
    ) -> None:
        """DeepSeek's Anthropic-compatible API behind `/v1/messages` (LiteLLM forwards the body
        natively): a client that drops DeepSeek's thinking blocks completes its tool loop, with a
        delivery in it, and goes on after a new turn; the blocks go back as DeepSeek issued them
        (a keeping client sends what it got); the proxy log stays clean."""

        how = ("stream" if stream else "create") + ("-keeps" if keeps else "")
        back = _keeping if keeps else _dropping
        route = "stream" if stream else "create"
        group, model = f"deepseek-{route}", f"deepseek-v4-pro-{route}"
        first = [
            {"type": "thinking", "thinking": "Read a.py first."},
            {
                "type": "tool_use",
                "id": f"call_{how}_1",
                "name": "read_file",
                "input": {"path": "a"},
            },
        ]
        deepseek.script(
            model,
            AnthropicReply(first),
            AnthropicReply([{"type": "text", "text": "a.py holds one line."}]),
        )
        deepseek.always(model, AnthropicReply([{"type": "text", "text": "So does b.py."}]))
        send = _sender(proxy, group, stream, thinking=THINKING)

        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        delivery = {"role": "user", "content": "(build finished)", "turn": False}
        messages += [back(send(messages)), _proxy_result(f"call_{how}_1"), delivery]
        messages += [back(send(messages)), {"role": "user", "content": "And b.py?"}]
        final = send(messages)
        assert final.content[0].text == "So does b.py."
        assert deepseek.refusals == []
        wire = deepseek.bodies(model)[-1]["messages"]
        # An earlier turn now: DeepSeek with tools needs it too (a keeping client's own copy: the
        # SDK's streamed message carries an empty `signature`).
        assert wire[1]["content"] == (messages[1]["content"] if keeps else first)
        assert not any("turn" in m for m in wire)
        log = proxy.log_path.read_text(errors="replace")
        assert "Traceback" not in log and not [line for line in log.splitlines() if "ERROR" in line]

    @pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    def test_an_adapter_deployment_keeps_the_turn_across_a_delivery_and_a_reminder(
        self, chat_server: Upstream, proxy: Any, stream: bool, keeps: bool
    ) -> None:
        """`/v1/messages` to a chat-completions model (Qwen on vLLM, current_turn): LiteLLM's
        adapter translates the request and drops `turn`; the callback tells the chat call which of
        its user messages start a turn, so a tool result with a reminder beside it and a delivery
        (`"turn": false`) keep the tool loop's reasoning, and a real new question leaves it out."""

        model = "qwen3-32b"
        tag = ("s" if stream else "c") + ("k" if keeps else "d")
        call = {"id": f"call_q{tag}", "type": "function", "function": {"name": "read_file"}}
        call["function"]["arguments"] = '{"path": "a"}'
        chat_server.script(
            model,
            Reply(
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "Read a.",
                    "tool_calls": [call],
                }
            ),
            Reply({"role": "assistant", "content": "a holds one line."}),
        )
        chat_server.always(model, Reply({"role": "assistant", "content": "b holds one too."}))
        send = _sender(proxy, "qwen-adapter", stream)

        before = len(chat_server.bodies(model))
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = send(messages)
        assert [b.type for b in first.content][-1] == "tool_use"
        reminder = {"type": "text", "text": "<system-reminder>keep going</system-reminder>"}
        delivery = {"role": "user", "content": "(build finished)", "turn": False}
        messages += [(_keeping if keeps else _dropping)(first), _proxy_result(call["id"], reminder)]
        messages.append(delivery)
        send(messages)
        messages += [{"role": "assistant", "content": "a holds one line."}]
        messages += [{"role": "user", "content": "And b.py?"}]
        send(messages)
        during, after = chat_server.bodies(model)[before + 1 :]

        def reasoning(body: dict[str, Any]) -> Any:
            loop = next(m for m in body["messages"] if m.get("tool_calls"))
            return loop.get("reasoning_content") or loop.get("reasoning")

        assert reasoning(during) == "Read a."  # the delivery and the reminder started no turn
        assert not reasoning(after)  # a new question did: current_turn leaves it out
        for body in (during, after):
            assert not any("turn" in m for m in body["messages"])
        log = proxy.log_path.read_text(errors="replace")
        assert "Traceback" not in log and not [line for line in log.splitlines() if "ERROR" in line]

    @pytest.mark.parametrize("alter", [False, True], ids=["exact", "one-block-differs"])
    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    def test_claude_codes_reordered_blocks_go_out_as_claude_issued_them(
        self, claude: AnthropicUpstream, proxy: Any, stream: bool, alter: bool
    ) -> None:
        """Claude Code sends an interleaved reply back as `[thinking, text, thinking, tool_use,
        tool_use]` (`tests/fixtures/claude_code_reordered.json`): the exact blocks go out in the
        order Claude issued them, and Claude accepts the request; when one block differs, the
        message goes out as the client sent it (and Claude refuses it, as it would anyway)."""
        import anthropic

        fixture = _claude_code_request()
        reply, request = fixture["reply"], fixture["request"]
        group = "claude-code-stream" if stream else "claude-code"
        model = GROUPS[group]
        claude.script(model, AnthropicReply(reply))
        claude.always(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
        client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
        params = {k: v for k, v in request.items() if k != "messages"}

        def send(messages: list[Any]) -> Any:
            if stream:
                with client.messages.stream(model=group, messages=messages, **params) as events:
                    return events.get_final_message()
            # an explicit timeout: the SDK refuses a non-streamed 32 000-token request without one
            return client.messages.create(model=group, messages=messages, timeout=120, **params)

        refused = len(claude.refusals)
        assert _blocks(send(request["messages"][:1])) == reply
        messages = request["messages"]
        if alter:
            messages = json.loads(json.dumps(messages))
            block = messages[1]["content"][2]
            block["thinking"] = block["thinking"].replace("parallel", "sequence")
            with pytest.raises(anthropic.BadRequestError, match="cannot be modified"):
                send(messages)
        else:
            assert send(messages).content[0].text == "Fixed."
            assert claude.refusals[refused:] == []
        sent = claude.bodies(model)[-1]["messages"][1]["content"]
        assert sent == (messages[1]["content"] if alter else reply)

    def test_records_of_messages_calls_are_filed_under_the_virtual_key(self, proxy: Any) -> None:
        """The tenant boundary holds on `/v1/messages` too: every record this route wrote (the
        tests above) is scoped by the hashed virtual key the proxy authenticated."""
        from litellm_reasoning.stores import open_backend

        store = open_backend(proxy.store_url)
        try:
            tenants = store.tenants()
        finally:
            store.close()
        assert tenants, "the tests above captured nothing"
        assert all("|key=" in tenant.scope for tenant in tenants), [t.scope for t in tenants]


def test_restore_names_the_blocks_it_put_in_front_and_their_facts_follow() -> None:
    """`restore` says which messages got their blocks in front of their content (a reply that
    thought first, the common case: the facts of those are derived, not read again) and leaves
    out one whose record lays its blocks out between its text and tool use."""
    from litellm_reasoning.core.formats import blocks
    from litellm_reasoning.wire.anthropic.messages import record_of_reply, restore

    think = _thinking("first", "sig-1")
    text = {"type": "text", "text": "Let me look."}
    use = _use("toolu_front", "a.py")
    thought_first = record_of_reply([think, text, use], provider="anthropic", model="m")
    between = record_of_reply([text, think, use], provider="anthropic", model="m")
    assert thought_first is not None and between is not None
    sent = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [copy.deepcopy(text), copy.deepcopy(use)]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_front", "content": "ok"}],
        },
        {"role": "assistant", "content": [copy.deepcopy(text), copy.deepcopy(use)]},
    ]
    out, restored_at, fronted = restore(sent, {1: "k1", 3: "k3"}, {1: thought_first, 3: between}, 0)
    assert restored_at == [1, 3]
    assert fronted == {1: 1}
    assert [b["type"] for b in out[1]["content"]] == ["thinking", "text", "tool_use"]
    assert [b["type"] for b in out[3]["content"]] == ["text", "thinking", "tool_use"]
    derived = blocks.with_leading_reasoning(blocks.facts_of(sent[1]), fronted[1])
    assert derived == blocks.facts_of(out[1])
