"""`/v1/messages` to a model that is not Claude but that LiteLLM forwards natively (DeepSeek's
and MiniMax's Anthropic-compatible APIs), through LiteLLM's SDK (`litellm.anthropic.messages`,
what the proxy's route calls): the provider's own thinking blocks (no Anthropic signature) go
back as it issued them, in place, on the turns its rule needs (DeepSeek V4 with tools: every
turn), and only to the provider that issued them. The DeepSeek server refuses a tool loop that
lost its block with DeepSeek's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import THINKING
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import (
    AnthropicReply,
    AnthropicUpstream,
    DeepSeekAnthropicUpstream,
)

TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _reply(tag: str, signature: str | None) -> list[dict[str, Any]]:
    thinking: dict[str, Any] = {"type": "thinking", "thinking": f"Read {tag}.py first."}
    if signature is not None:
        thinking["signature"] = signature
    return [
        thinking,
        {"type": "text", "text": f"Reading {tag}.py."},
        {"type": "tool_use", "id": f"call_{tag}_1", "name": "read_file", "input": {"path": tag}},
    ]


def _result(call_id: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "x"}],
    }


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


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
        tools=[TOOL],
    )


@pytest.mark.parametrize("route", ["deepseek", "anthropic"])
@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
async def test_deepseek_gets_its_blocks_back_on_every_turn(
    callback: ReasoningCallback, keeps: bool, route: str
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
            _result("call_a_1"),
        ]
        messages.append(back(await _send(f"{route}/{model}", deepseek, messages, path=path)))
        messages.append({"role": "user", "content": "And b.py?"})
        messages += [
            back(await _send(f"{route}/{model}", deepseek, messages, path=path)),
            _result("call_b_1"),
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


async def test_without_the_callback_deepseek_refuses_the_dropped_loop() -> None:
    """The control: the same dropping client without the callback gets DeepSeek's 400."""
    model = "deepseek-v4-pro-control"
    with DeepSeekAnthropicUpstream() as deepseek:
        deepseek.script(model, AnthropicReply(_reply("a", None)))
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        reply = await _send(f"deepseek/{model}", deepseek, messages)
        dropped = [b for b in reply["content"] if b["type"] != "thinking"]
        messages += [{"role": "assistant", "content": dropped}, _result("call_a_1")]
        with pytest.raises(litellm.BadRequestError, match="must be passed back"):
            await _send(f"deepseek/{model}", deepseek, messages)


async def test_minimax_gets_its_blocks_back_as_issued(callback: ReasoningCallback) -> None:
    model = "MiniMax-M2.5"
    first = _reply("m", "minimax-own")
    with AnthropicUpstream() as minimax:
        minimax.script(model, AnthropicReply(first))
        minimax.always(model, AnthropicReply([{"type": "text", "text": "done"}]))
        messages: list[Any] = [{"role": "user", "content": "What is in m.py?"}]
        reply = await _send(f"minimax/{model}", minimax, messages)
        dropped = [b for b in reply["content"] if b["type"] != "thinking"]
        messages += [{"role": "assistant", "content": dropped}, _result("call_m_1")]
        await _send(f"minimax/{model}", minimax, messages)
        wire = minimax.bodies(model)[-1]["messages"]
    assert wire[1]["content"] == first
    assert callback.stats["restored"] == 1


async def test_claude_blocks_never_reach_deepseek(callback: ReasoningCallback) -> None:
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
        messages += [{"role": "assistant", "content": dropped}, _result("toolu_c_1")]
        with pytest.raises(litellm.BadRequestError, match="must be passed back"):
            await _send("deepseek/deepseek-v4-pro-x", deepseek, messages)
        wire = deepseek.bodies("deepseek-v4-pro-x")[-1]["messages"]
    assert wire[1]["content"] == dropped
    assert callback.stats["restored"] == 0


async def test_a_third_party_deployments_blocks_never_reach_claude(
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
        messages += [{"role": "assistant", "content": dropped}, _result("call_d_1")]
        messages.append(await _send(model, deepseek, messages, path="/anthropic"))
        messages[-1] = {"role": "assistant", "content": messages[-1]["content"]}
        messages.append({"role": "user", "content": "Thanks. Now c.py?"})
        await _send("anthropic/claude-sonnet-4-5", claude, messages, key="claude-key")
        wire = claude.bodies("claude-sonnet-4-5")[-1]["messages"]
    assert deepseek.refusals == [] and claude.refusals == []
    assert wire[1]["content"] == dropped
    assert callback.stats["restored"] == 1  # DeepSeek's own loop, on DeepSeek only
