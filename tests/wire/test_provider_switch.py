"""Conversations that move between providers: a Router fallback mid-turn, or a user switching
model between turns. One provider's opaque tokens (signatures, encrypted content, their ids)
never reach another; plain reasoning text may cross to a target that takes text; what is left
out is counted (`stats["dropped"]`) and logged at DEBUG.

Every request goes through real LiteLLM to local servers (Anthropic Messages, and an
OpenAI-compatible one for DeepSeek, Moonshot and OpenRouter), from a client that keeps only
role, content and tool calls; the assertions read the request bodies the servers received.

Decisions (see `dialects/openrouter.py`, `dialects/anthropic.py`):

* Claude's thinking text may go to DeepSeek / Kimi as `reasoning_content` (they take text and,
  with tools, answer 400 without it); its signature never does.
* Unsigned text (DeepSeek) never becomes a Claude thinking block (covered in test_claude,
  `TestAnthropicApi`).
* OpenRouter-relayed Claude details never go to the Anthropic API, and Anthropic-signed blocks
  never become OpenRouter details: nothing shows either signature verifying on the other side.
* OpenRouter details bound to one upstream family (an encrypted OpenAI item) go back only to an
  OpenRouter model of that family.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from clients import dropping_client
from conftest import register
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.upstream import Reply, Upstream

CASSETTES = REPO / "cassettes"
SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
OPAQUE_KEYS = ("thinking_blocks", "reasoning_details", "provider_specific_fields", "signature")


def recorded_details(name: str) -> list[dict[str, Any]]:
    """The `reasoning_details` a recorded OpenRouter reply carried (real signature / data)."""
    raw = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text("utf-8"))
    follow_up = json.loads(raw["interactions"][1]["request"]["body"])
    details: list[dict[str, Any]] = follow_up["messages"][1]["reasoning_details"]
    return details


CLAUDE_DETAILS = recorded_details("openrouter_claude_signed")
O3_DETAILS = recorded_details("openrouter_o3_encrypted_stream")


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def ask(mode: str, **kwargs: Any) -> dict[str, Any]:
    if mode == "async":
        response = await litellm.acompletion(api_key="k", **kwargs)
    else:
        response = await asyncio.to_thread(litellm.completion, api_key="k", **kwargs)
    return dropping_client(response.choices[0].message)


def call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


def tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "a.py"}}


def carries_no(body: dict[str, Any], *secrets: str) -> bool:
    text = json.dumps(body)
    return not any(secret in text for secret in secrets)


modes = pytest.mark.parametrize("mode", ["sync", "async"])


# ---------------------------------------------------------------- Claude -> text dialects


async def test_router_fallback_mid_turn_from_claude_to_deepseek(
    claude: AnthropicUpstream,
    upstream: Upstream,
    callback: ReasoningCallback,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Claude made the tool call (signed thinking); answering the tool result, Claude fails and
    the Router falls back to DeepSeek. DeepSeek gets Claude's thinking text as
    `reasoning_content` (it 400s on a tool-call message without it) and no signature."""
    model, other = "claude-sonnet-4-5", "ds-switch-fallback"
    claude.script(model, AnthropicReply([_signed("Read a.py first."), tool_use("toolu_s1")]))
    upstream.script(other, Reply(message={"content": "Done.", "reasoning_content": "ok"}))
    router = litellm.Router(
        model_list=[
            {
                "model_name": "claude",
                "litellm_params": {
                    "model": f"anthropic/{model}",
                    "api_base": claude.base_url,
                    "api_key": "k",
                },
            },
            {
                "model_name": "deepseek",
                "litellm_params": {
                    "model": f"deepseek/{other}",
                    "api_base": upstream.base_url,
                    "api_key": "k",
                },
            },
        ],
        fallbacks=[{"claude": ["deepseek"]}],
        num_retries=0,
    )
    kw: dict[str, Any] = {"tools": [TOOL], "thinking": THINKING, "max_tokens": 2048}
    history: list[Any] = [{"role": "user", "content": "Fix the parser."}]
    reply = await router.acompletion(model="claude", messages=list(history), **kw)
    history.append(dropping_client(reply.choices[0].message))
    history.append({"role": "tool", "tool_call_id": "toolu_s1", "content": "def parse(): ..."})
    # No scripted reply left: Claude answers 400 and the Router falls back.
    with caplog.at_level(logging.DEBUG, logger="litellm_reasoning"):
        await router.acompletion(model="claude", messages=list(history), **kw)

    (body,) = upstream.bodies(other)
    sent = body["messages"][1]
    assert sent["reasoning_content"] == "Read a.py first."
    assert [c["id"] for c in sent["tool_calls"]] == ["toolu_s1"]
    assert not any(key in m for m in body["messages"] for key in OPAQUE_KEYS)
    assert carries_no(body, SIG)
    assert callback.stats["errors"] == 0


@modes
async def test_claude_tool_turn_then_kimi_next_turn_gets_text_only(
    mode: str, claude: AnthropicUpstream, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """A user switches from Claude to Kimi between turns. Kimi checks `reasoning_content` on
    every earlier tool-call message, so the earlier Claude tool call carries Claude's thinking
    text; the signature stays behind."""
    model, kimi = "claude-sonnet-4-5", f"kimi-switch-{mode}"
    claude.script(
        model,
        AnthropicReply([_signed("Need the file."), tool_use(f"toolu_k_{mode}")]),
        AnthropicReply([{"type": "text", "text": "Fixed."}]),
    )
    upstream.script(kimi, Reply(message={"content": "Sure.", "reasoning_content": "Hm."}))
    kw: dict[str, Any] = {"tools": [TOOL], "thinking": THINKING, "max_tokens": 2048}
    base = {"model": f"anthropic/{model}", "api_base": claude.base_url, **kw}
    history: list[Any] = [{"role": "user", "content": "Fix the parser."}]
    history.append(await ask(mode, messages=list(history), **base))
    history.append({"role": "tool", "tool_call_id": f"toolu_k_{mode}", "content": "..."})
    history.append(await ask(mode, messages=list(history), **base))
    history.append({"role": "user", "content": "Now in Kimi: explain the fix."})
    await ask(
        mode,
        model=f"moonshot/{kimi}",
        api_base=upstream.base_url,
        messages=list(history),
        tools=[TOOL],
    )

    (body,) = upstream.bodies(kimi)
    messages = body["messages"]
    assert messages[1]["reasoning_content"] == "Need the file."
    assert "reasoning_content" not in messages[3]  # no tool call, earlier turn
    assert carries_no(body, SIG)
    assert not any(key in m for m in messages for key in OPAQUE_KEYS)
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- OpenRouter <-> Anthropic


@modes
async def test_openrouter_claude_details_never_reach_the_anthropic_api(
    mode: str,
    claude: AnthropicUpstream,
    upstream: Upstream,
    callback: ReasoningCallback,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Claude through OpenRouter made the tool call (a recorded OpenRouter-relayed signed
    detail); the next step goes to the Anthropic API directly. The OpenRouter signature is not
    sent as a thinking block (left out, counted, logged); with thinking on and no block Claude
    accepts, thinking is off for that call."""
    router_model, model = f"anthropic/claude-or-{mode}", "claude-sonnet-4-5"
    upstream.script(
        router_model,
        Reply(
            message={
                "content": "",
                "reasoning": CLAUDE_DETAILS[0]["text"],
                "reasoning_details": CLAUDE_DETAILS,
                "tool_calls": [call(f"c_or_{mode}")],
            }
        ),
    )
    claude.script(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
    before = len(claude.bodies(model))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    history.append(
        await ask(
            mode,
            model=f"openrouter/{router_model}",
            api_base=upstream.base_url,
            messages=list(history),
            tools=[TOOL],
        )
    )
    history.append({"role": "tool", "tool_call_id": f"c_or_{mode}", "content": "ok"})
    with caplog.at_level(logging.DEBUG, logger="litellm_reasoning"):
        await ask(
            mode,
            model=f"anthropic/{model}",
            api_base=claude.base_url,
            messages=list(history),
            tools=[TOOL],
            thinking=THINKING,
            max_tokens=2048,
        )

    (body,) = claude.bodies(model)[before:]
    assert body["messages"][1]["content"] == [tool_use(f"c_or_{mode}")]
    assert carries_no(body, CLAUDE_DETAILS[0]["signature"])
    assert "thinking" not in body
    assert callback.stats["dropped"] == 1
    assert callback.stats["thinking_disabled"] == 1
    assert "cannot take the reasoning" in caplog.text


@modes
async def test_anthropic_blocks_never_become_openrouter_details(
    mode: str, claude: AnthropicUpstream, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """The other way: Claude on the Anthropic API made the tool call; the tool result goes to
    Claude through OpenRouter. The Anthropic signature is not turned into `reasoning_details`."""
    model, router_model = "claude-sonnet-4-5", f"anthropic/claude-back-{mode}"
    claude.script(model, AnthropicReply([_signed("Look at a.py."), tool_use(f"toolu_b_{mode}")]))
    upstream.script(router_model, Reply(message={"content": "Fixed."}))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    history.append(
        await ask(
            mode,
            model=f"anthropic/{model}",
            api_base=claude.base_url,
            messages=list(history),
            tools=[TOOL],
            thinking=THINKING,
            max_tokens=2048,
        )
    )
    history.append({"role": "tool", "tool_call_id": f"toolu_b_{mode}", "content": "ok"})
    await ask(
        mode,
        model=f"openrouter/{router_model}",
        api_base=upstream.base_url,
        messages=list(history),
        tools=[TOOL],
    )

    (body,) = upstream.bodies(router_model)
    assert not any(key in m for m in body["messages"] for key in OPAQUE_KEYS)
    assert "reasoning_content" not in body["messages"][1]
    assert carries_no(body, SIG)
    assert callback.stats["dropped"] == 1


# ---------------------------------------------------------------- within OpenRouter


@modes
@pytest.mark.parametrize(
    ("second", "sent"), [("openai/gpt-5", True), ("anthropic/claude-sonnet-4.5", False)]
)
async def test_openrouter_encrypted_openai_details_stay_with_openai_models(
    mode: str, second: str, sent: bool, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """o3 through OpenRouter returned an encrypted `openai-responses-v1` detail (recorded) with
    its tool call. Continuing with another OpenAI model through OpenRouter sends it back
    unmodified; with a Claude model it is left out and counted."""
    first = f"openai/o3-{mode}-{second}"
    second_model = f"{second}-{mode}"
    upstream.script(
        first,
        Reply(
            message={
                "content": "",
                "reasoning_details": O3_DETAILS,
                "tool_calls": [call(f"c_o3_{mode}")],
            }
        ),
    )
    upstream.script(second_model, Reply(message={"content": "Done."}))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    common = {"api_base": upstream.base_url, "tools": [TOOL]}
    history.append(await ask(mode, model=f"openrouter/{first}", messages=list(history), **common))
    history.append({"role": "tool", "tool_call_id": f"c_o3_{mode}", "content": "ok"})
    await ask(mode, model=f"openrouter/{second_model}", messages=list(history), **common)

    (body,) = upstream.bodies(second_model)
    assistant = body["messages"][1]
    if sent:
        assert assistant["reasoning_details"] == O3_DETAILS
        assert callback.stats["dropped"] == 0
    else:
        assert "reasoning_details" not in assistant
        assert carries_no(body, O3_DETAILS[0]["data"], O3_DETAILS[0]["id"])
        assert callback.stats["dropped"] == 1
    assert callback.stats["errors"] == 0


def _signed(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": SIG}


# ---------------------------------------------------------------- Mistral -> others


def _mistral_stream() -> tuple[str, str]:
    """The recorded Magistral SSE body and its thinking text (pieces joined)."""
    raw = yaml.safe_load((CASSETTES / "mistral_magistral_stream.yaml").read_text("utf-8"))
    body = str(raw["interactions"][0]["response"]["body"]["string"])
    pieces = [
        item["text"]
        for line in body.splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
        for choice in json.loads(line[5:])["choices"]
        if isinstance(choice["delta"].get("content"), list)
        for part in choice["delta"]["content"]
        if part["type"] == "thinking"
        for item in part["thinking"]
    ]
    return body, "".join(pieces)


def _streamed_reply(model: str, upstream: Upstream, history: list[Any]) -> Any:
    """A sync streamed call, read to the end; the reply as LiteLLM assembles it."""
    chunks = list(
        litellm.completion(
            model=model,
            api_base=upstream.base_url,
            api_key="k",
            messages=list(history),
            stream=True,
        )
    )
    built = litellm.stream_chunk_builder(chunks)
    assert built is not None
    return built.choices[0].message


@modes
@pytest.mark.parametrize("keep", [True, False], ids=["keeps", "drops"])
async def test_mistral_thinking_never_reaches_claude_as_a_signed_block(
    mode: str,
    keep: bool,
    claude: AnthropicUpstream,
    upstream: Upstream,
    callback: ReasoningCallback,
) -> None:
    """LiteLLM hands Mistral's thinking out as thinking blocks with the placeholder signature
    `mistral`. Continuing the turn on Claude, even a client that keeps those blocks sends no
    thinking block (Claude would reject the signature); the text is not sent either."""
    body, thinking = _mistral_stream()
    mistral, model = f"magistral-switch-{mode}-{keep}", "claude-sonnet-4-5"
    upstream.script(mistral, Reply(raw_body=body, content_type="text/event-stream"))
    claude.script(model, AnthropicReply([{"type": "text", "text": "Sure."}]))
    before = len(claude.bodies(model))
    history: list[Any] = [{"role": "user", "content": "How do I cross the street?"}]
    message = await asyncio.to_thread(_streamed_reply, f"mistral/{mistral}", upstream, history)
    kept = message.model_dump(exclude_none=True) if keep else dropping_client(message)
    if keep:
        assert {b.get("signature") for b in kept["thinking_blocks"]} == {"mistral"}
    history += [kept, {"role": "user", "content": "Go on.", "turn": False}]
    await ask(
        mode,
        model=f"anthropic/{model}",
        api_base=claude.base_url,
        messages=list(history),
        thinking=THINKING,
        max_tokens=2048,
    )

    (sent,) = claude.bodies(model)[before:]
    blocks = sent["messages"][1]["content"]
    assert all(b["type"] == "text" for b in blocks)
    assert carries_no(sent, '"signature": "mistral"', thinking[:40])
    assert callback.stats["errors"] == 0


@modes
async def test_mistral_thinking_text_may_cross_to_deepseek(
    mode: str, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """Plain text crosses to a target that takes text: a Magistral reply continued within the
    turn on DeepSeek carries the joined thinking as `reasoning_content`, nothing else."""
    body, thinking = _mistral_stream()
    mistral, deepseek = f"magistral-ds-{mode}", f"ds-after-mistral-{mode}"
    upstream.script(mistral, Reply(raw_body=body, content_type="text/event-stream"))
    upstream.script(deepseek, Reply(message={"content": "ok"}))
    history: list[Any] = [{"role": "user", "content": "How do I cross the street?"}]
    reply = await asyncio.to_thread(_streamed_reply, f"mistral/{mistral}", upstream, history)
    history.append(dropping_client(reply))
    history.append({"role": "user", "content": "Go on.", "turn": False})
    await ask(mode, model=f"deepseek/{deepseek}", api_base=upstream.base_url, messages=history)

    (sent,) = upstream.bodies(deepseek)
    assert sent["messages"][1]["reasoning_content"] == thinking
    assert not any(key in sent["messages"][1] for key in OPAQUE_KEYS)
    assert callback.stats["errors"] == 0


# ---------------------------------------------------------------- Bedrock <-> Anthropic


BEDROCK_SIG = "EqoBCkgIARABGAIiQL4B3d5Zbedrock0signature0not0from0anthropicAAAA=="


def _converse_reply(text: str, call_id: str) -> str:
    """A Converse reply: Bedrock-signed reasoning, then a tool use."""
    return json.dumps(
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "reasoningContent": {
                                "reasoningText": {"text": text, "signature": BEDROCK_SIG}
                            }
                        },
                        {
                            "toolUse": {
                                "toolUseId": call_id,
                                "name": "read_file",
                                "input": {"path": "a.py"},
                            }
                        },
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLELOCALONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-only-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


async def test_bedrock_signed_thinking_never_reaches_the_anthropic_api(
    aws: None, claude: AnthropicUpstream, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """Claude on Bedrock made the tool call (a Bedrock-signed block); the tool result goes to
    the Anthropic API: the Bedrock signature is left out (counted) and thinking is off."""
    bedrock = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    model = "claude-sonnet-4-5"
    # Converse bodies name no model: the reply is queued under the empty name.
    upstream.script("", Reply(raw_body=_converse_reply("Read it.", "tu_bed_1")))
    claude.script(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
    before = len(claude.bodies(model))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    reply = await litellm.acompletion(
        model=f"bedrock/converse/{bedrock}",
        api_base=upstream.base_url,
        aws_region_name="us-east-1",
        messages=list(history),
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
    )
    history.append(dropping_client(reply.choices[0].message))
    history.append({"role": "tool", "tool_call_id": "tu_bed_1", "content": "ok"})
    await ask(
        "async",
        model=f"anthropic/{model}",
        api_base=claude.base_url,
        messages=list(history),
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
    )

    (body,) = claude.bodies(model)[before:]
    assert body["messages"][1]["content"] == [tool_use("tu_bed_1")]
    assert carries_no(body, BEDROCK_SIG, "Read it.")
    assert callback.stats["dropped"] == 1
    assert callback.stats["thinking_disabled"] == 1


async def test_anthropic_signed_thinking_never_reaches_bedrock(
    aws: None, claude: AnthropicUpstream, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """The other way: the Anthropic API's signed block is not sent to Claude on Bedrock."""
    bedrock = "anthropic.claude-3-7-sonnet-20250219-v1:1"
    model = "claude-sonnet-4-5"
    claude.script(model, AnthropicReply([_signed("Look at a.py."), tool_use("toolu_to_bed")]))
    done = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Fixed."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }
    upstream.script("", Reply(raw_body=json.dumps(done)))
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    history.append(
        await ask(
            "async",
            model=f"anthropic/{model}",
            api_base=claude.base_url,
            messages=list(history),
            tools=[TOOL],
            thinking=THINKING,
            max_tokens=2048,
        )
    )
    history.append({"role": "tool", "tool_call_id": "toolu_to_bed", "content": "ok"})
    await litellm.acompletion(
        model=f"bedrock/converse/{bedrock}",
        api_base=upstream.base_url,
        aws_region_name="us-east-1",
        messages=list(history),
        tools=[TOOL],
        thinking=THINKING,
        max_tokens=2048,
    )

    sent = [r.body for r in upstream.received if "converse" in r.path]
    body = sent[-1]
    assert carries_no(body, SIG, "Look at a.py.")
    assert not any("reasoningContent" in block for block in body["messages"][1]["content"])
    assert callback.stats["dropped"] == 1
