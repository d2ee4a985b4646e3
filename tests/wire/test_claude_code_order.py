"""Claude Code reorders interleaved blocks itself: given the reply `[thinking, text, tool_use,
thinking, tool_use]` it sends back `[thinking, text, thinking, tool_use, tool_use]`, and Claude
refuses ("cannot be modified"). When the blocks a client kept are exactly the stored reply's
blocks in another order or grouping, they go out in the order Claude issued them, counted as
`reordered`; a message whose blocks differ in anything is left as the client sent it.

The request is `tests/fixtures/claude_code_reordered.json` (the shape of the public reports),
sent in the Anthropic format (`litellm.anthropic.messages`, alone and through a Router) and in
the chat format (a client that keeps inline blocks in its content, which LiteLLM sends in
exactly Claude Code's order), to the strict local Claude."""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import complete
from conftest import register
from litellm.integrations.custom_logger import CustomLogger
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.decisions import METADATA_KEY
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

FIXTURE = json.loads((REPO / "tests" / "fixtures" / "claude_code_reordered.json").read_text())
REPLY: list[dict[str, Any]] = FIXTURE["reply"]
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


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


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


@pytest.fixture
def summaries() -> Summaries:
    return Summaries()


@pytest.fixture
def callback(summaries: Summaries) -> Iterator[ReasoningCallback]:
    cb = register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.callbacks = [cb, summaries]
    yield cb
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = []


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


# ------------------------------------------------------------------ Anthropic format


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


@pytest.mark.parametrize("how", ["acreate", "router"])
async def test_claude_codes_reordered_message_goes_out_as_claude_issued_it(
    how: str, claude: AnthropicUpstream, callback: ReasoningCallback, summaries: Summaries
) -> None:
    model = f"claude-opus-4-6-cc-{how}"
    claude.script(model, AnthropicReply(REPLY), DONE)
    refused = len(claude.refusals)
    first = await _messages_call(how, model, claude, REQUEST["messages"][:1])
    assert first["content"] == REPLY
    done = await _messages_call(how, model, claude, REQUEST["messages"])
    assert claude.refusals[refused:] == []
    assert done["content"][0]["text"] == "Fixed."
    assert _sent_assistant(claude, model) == REPLY
    assert callback.stats["reordered"] == 1
    assert callback.stats["errors"] == 0
    summary = await _summary(summaries, model)
    assert summary["counts"]["reordered"] == 1
    assert summary["messages"] == {"1": "reordered"}


@pytest.mark.parametrize("how", ["acreate", "router"])
async def test_a_message_whose_blocks_differ_is_left_as_the_client_sent_it(
    how: str, claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    model = f"claude-opus-4-6-cc-altered-{how}"
    claude.script(model, AnthropicReply(REPLY), DONE)
    await _messages_call(how, model, claude, REQUEST["messages"][:1])
    messages = _altered(REQUEST["messages"])
    with pytest.raises(litellm.BadRequestError, match="cannot be modified"):
        await _messages_call(how, model, claude, messages)
    assert _sent_assistant(claude, model) == messages[1]["content"]
    assert callback.stats["reordered"] == 0


# ------------------------------------------------------------------ chat format

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]


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


@pytest.mark.parametrize("alter", [False, True], ids=["exact", "one-block-differs"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_chat_client_keeping_inline_blocks_in_claude_codes_order(
    how: str,
    alter: bool,
    claude: AnthropicUpstream,
    callback: ReasoningCallback,
    summaries: Summaries,
) -> None:
    model = f"claude-opus-4-6-cc-chat-{how}-{alter}"
    claude.script(model, AnthropicReply(REPLY), DONE)
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
    assert _sent_assistant(claude, model) == REPLY
    assert callback.stats["reordered"] == 1
    summary = await _summary(summaries, model)
    assert summary["counts"]["reordered"] == 1
    assert summary["messages"] == {"1": "reordered"}


def test_a_kept_reply_whose_order_is_not_known_is_left_as_sent() -> None:
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
