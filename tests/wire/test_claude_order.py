"""Claude exactly as it answered: interleaved thinking keeps its place among the reply's blocks,
and the tool loop a new user message interrupts keeps its blocks, on every call path, streamed
or not, for a client that drops reasoning and one that keeps LiteLLM's `thinking_blocks`.

The local Claude server is strict (`AnthropicUpstream(strict=True)`): it refuses, with the API's
own texts, an assistant message whose thinking is not first, a tool loop whose message has no
block, and a latest assistant message whose blocks differ from the reply it came from."""

from __future__ import annotations

import asyncio
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
    joining_client,
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
from reliability_utils import stored

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.wire.anthropic.dialect import apply_layout, layout_of_blocks

CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
SIG = [
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/=",
    "EroCCmUIDhgCKkC+NWw0dWjXDUtFhxyU7T1jL1I74woU7bJADq7xTdoI1tp+nO7q/w==",
    "ErcBCkgICBACGAIiQHx0c2gEr1M5m9W3xY1nB2OUnVvM0L6t4v8k1p2XQf3c7aQ==",
    "EpwCCkYIBxgCKkDDyZy1YLkC9x8cGZ6OHr0vQfLhE7aX3cUmGfW+Yk9kUs5Ad2A==",
]


CLIENTS = {"drops": dropping_client, "keeps": keeping_client}


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture(scope="module")
def claude_api() -> Iterator[AnthropicUpstream]:
    """Streams as the API streams a short reply (one delta per block, a ping, compact JSON)."""
    with AnthropicUpstream(strict=True, api_style=True) as up:
        yield up


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


async def call(
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


# ------------------------------------------------------------------ pure: layouts


def test_a_layout_puts_blocks_back_where_they_stood() -> None:
    original = [
        _thinking("A", SIG[0]),
        {"type": "text", "text": "Let me look."},
        _use("toolu_1", "a.py"),
        _thinking("B", SIG[1]),
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
    assert layout_of_blocks([original[0], original[1], original[2]]) == ()  # LiteLLM's own order


# ------------------------------------------------------------------ interleaved thinking


INTERLEAVED = {
    "plain": [
        _thinking("I need a.py.", SIG[0]),
        _use("toolu_a1", "a.py"),
        _thinking("And b.py, separately.", SIG[1]),
        _use("toolu_a2", "b.py"),
    ],
    "with-text": [
        _thinking("I need a.py.", SIG[2]),
        {"type": "text", "text": "Reading a.py."},
        _use("toolu_b1", "a.py"),
        _thinking("", SIG[3]),
        {"type": "redacted_thinking", "data": "EvgFCkYIBxgCKkBmxKtCnM3xlr1zpw0Ik4FY0bnznK"},
        {"type": "text", "text": "Then b.py."},
        _use("toolu_b2", "b.py"),
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
    claude: AnthropicUpstream,
    callback: ReasoningCallback,
) -> None:
    model = "claude-sonnet-4-6"
    reply = INTERLEAVED[shape]
    claude.script(model, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}]))
    before = len(claude.bodies(model))
    refused = len(claude.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    message = await call(how, model, claude, list(history), stream=stream)
    history.append(CLIENTS[client](message))
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    done = await call(how, model, claude, list(history), stream=stream)
    assert claude.refusals[refused:] == []
    assert done.content == "Done."
    wire = claude.bodies(model)[before:]
    assert _assistant_content(wire[1], 0) == reply
    assert callback.stats["errors"] == 0


@pytest.mark.parametrize("shape", sorted(INTERLEAVED))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_client_holding_empty_text_gets_the_blocks_in_place(
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
    reply = INTERLEAVED[shape]
    claude_api.script(
        model, AnthropicReply(reply), AnthropicReply([{"type": "text", "text": "Done."}])
    )
    before, refused = len(claude_api.bodies(model)), len(claude_api.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    message = await call(how, model, claude_api, list(history), stream=stream)
    history.append(joining_client(message))
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    done = await call(how, model, claude_api, list(history), stream=stream)
    assert claude_api.refusals[refused:] == []
    assert done.content == "Done."
    assert _assistant_content(claude_api.bodies(model)[before:][1], 0) == reply


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
    reply = INTERLEAVED["plain"]
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


@pytest.mark.parametrize("how", CALLS)
async def test_between_tools_thinking_gets_its_blocks_back_in_place(
    how: str, claude: AnthropicUpstream, callback: ReasoningCallback
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
    with pytest.raises(litellm.BadRequestError, match="Expected `thinking` or `redacted_thinking`"):
        await complete(
            how, f"anthropic/{model}", claude.base_url, FOREIGN_LOOP, stream=False, **params
        )
    assert claude.bodies(model)[-1]["thinking"] == between
    assert callback.stats["thinking_disabled"] == 0
    assert callback.stats["thinking_stays_on"] == 1


@pytest.mark.parametrize("how", CALLS)
async def test_a_model_that_thinks_by_default_gets_thinking_disabled_not_dropped(
    how: str, claude: AnthropicUpstream, callback: ReasoningCallback
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
    claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    """Opus 4.6 keeps earlier turns' thinking: after a new turn the earlier interleaved reply
    still goes back exactly as it came, so each request extends the previous one."""
    model = "claude-opus-4-6"
    reply = INTERLEAVED["plain"]
    claude.script(
        model,
        AnthropicReply(reply),
        AnthropicReply([_thinking("Both read.", SIG[2]), {"type": "text", "text": "Done."}]),
        AnthropicReply([{"type": "text", "text": "Bye."}]),
    )
    before = len(claude.bodies(model))
    history: list[Any] = [{"role": "user", "content": "Read a.py and b.py."}]
    history.append(dropping_client(await call("acompletion", model, claude, history, stream=False)))
    history += [_result(c["id"]) for c in history[-1]["tool_calls"]]
    history.append(dropping_client(await call("acompletion", model, claude, history, stream=True)))
    history.append({"role": "user", "content": "Thanks."})
    await call("acompletion", model, claude, list(history), stream=False)
    wire = claude.bodies(model)[before:]
    assert _assistant_content(wire[2], 0) == reply
    assert _assistant_content(wire[2], 1) == [
        _thinking("Both read.", SIG[2]),
        {"type": "text", "text": "Done."},
    ]


# ------------------------------------------------------------------ the interrupted tool loop


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_new_user_message_after_tool_results_keeps_the_loops_blocks(
    how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    """Sonnet 4.5 keeps only the current turn; the client stopped the loop and the user typed:
    `[…, assistant tool_use, tool result, user "new question"]`. LiteLLM merges the result and
    the question into one user message, so the loop is still open: its blocks go back."""
    model = "claude-sonnet-4-5"
    first = [_thinking("Read a.py first.", SIG[0]), _use("toolu_c1", "a.py")]
    claude.script(model, AnthropicReply(first), AnthropicReply([{"type": "text", "text": "Sure."}]))
    before = len(claude.bodies(model))
    refused = len(claude.refusals)
    history: list[Any] = [{"role": "user", "content": "Read a.py."}]
    history.append(dropping_client(await call(how, model, claude, list(history), stream=stream)))
    history += [_result("toolu_c1"), {"role": "user", "content": "Actually, what is b.py?"}]
    answer = await call(how, model, claude, list(history), stream=stream)
    assert claude.refusals[refused:] == []
    assert answer.content == "Sure."
    wire = claude.bodies(model)[before:]
    assert _assistant_content(wire[1], 0) == first
    assert "thinking" in wire[1]  # kept on: nothing had to be switched off
    assert callback.stats["thinking_disabled"] == 0


# ------------------------------------------------------------------ through the real proxy


@pytest.fixture(scope="module")
def proxy(claude: AnthropicUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
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


@pytest.mark.proxy
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_proxy_interleaved_order_and_interrupted_loop_with_the_openai_client(
    stream: bool, claude: AnthropicUpstream, proxy: Any
) -> None:
    import openai

    refused = len(claude.refusals)
    client: Any = openai.OpenAI(base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0)
    # Interleaved thinking on Sonnet 4.6.
    reply = INTERLEAVED["with-text"]
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
    first = [_thinking("Read a.py first.", SIG[0]), _use("toolu_p1", "a.py")]
    claude.script(
        "claude-sonnet-4-5", AnthropicReply(first), AnthropicReply([{"type": "text", "text": "B."}])
    )
    before = len(claude.bodies("claude-sonnet-4-5"))
    history = [{"role": "user", "content": "Read a.py."}]
    history.append(_openai_step(client, "loop", history, stream))
    history += [_result("toolu_p1"), {"role": "user", "content": "What is b.py?"}]
    assert _openai_step(client, "loop", history, stream)["content"] == "B."
    wire = claude.bodies("claude-sonnet-4-5")[before:]
    assert _assistant_content(wire[1], 0) == first
    assert claude.refusals[refused:] == [], proxy.log_tail()


# ------------------------------------------------------------------ guards


async def test_input_transformations_reach_the_decisions_summary(
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
        await call("acompletion", model, claude, [{"role": "user", "content": "hi"}], stream=False)
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


def test_bedrock_never_gets_a_reasoning_only_assistant_message() -> None:
    """An assistant message with neither text nor tool calls (a client that kept only an empty
    reply) never has blocks put on it for Bedrock, which refuses such a message; one with
    text gets them as before."""
    from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
    from litellm_reasoning.wire import get_dialect

    dialect = get_dialect("anthropic_bedrock")
    record = Reasoning(parts=(ReasoningPart(text="t", signature=SIG[0]),), provider="bedrock")
    empty = {"role": "assistant", "content": ""}
    assert dialect.render(empty, record) == empty
    assert dialect.render({"role": "assistant", "content": None}, record) == {
        "role": "assistant",
        "content": None,
    }
    answered = dialect.render({"role": "assistant", "content": "Hi."}, record)
    assert answered["thinking_blocks"] == [_thinking("t", SIG[0])]


# ------------------------------------------------------------------ Anthropic's `fallbacks`


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", CALLS)
async def test_a_fallback_reply_is_kept_as_the_model_that_answered_it(
    how: str, stream: bool, claude: AnthropicUpstream, callback: ReasoningCallback
) -> None:
    """Anthropic's `fallbacks` (Fable 5): another model answers, and the reply's `model` says
    which. Its signed blocks go back to the conversation's next request like any Claude reply
    (same credentials: the blocks are Anthropic's, the strict server takes them), and the
    record names the model that answered, not the one asked for (on a stream LiteLLM names every
    chunk, and the reply it assembles, after the model asked for: the record can only do the
    same; `/v1/messages` reads it from the stream itself, `test_messages_sdk`)."""
    model = f"claude-fable-5-{how}-{stream}"
    blocks = [_thinking("Read a.py first.", SIG[0]), _use("toolu_fb1", "a.py")]
    claude.script(
        model,
        AnthropicReply(blocks, extra={"model": "claude-opus-4-6"}),
        AnthropicReply([{"type": "text", "text": "Done."}]),
    )
    refused = len(claude.refusals)
    messages: list[Any] = [{"role": "user", "content": "Fix a.py"}]
    reply = await call(how, model, claude, messages, stream=stream)
    messages += [dropping_client(reply), _result("toolu_fb1")]
    await call(how, model, claude, messages, stream=stream)
    assert claude.refusals[refused:] == []
    assert _assistant_content(claude.bodies(model)[-1], 0) == blocks
    models = [record.model for record in stored(callback)]
    assert models == ([model] if stream else ["claude-opus-4-6"])
