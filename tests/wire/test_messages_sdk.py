"""The Anthropic Messages format through LiteLLM's SDK (`litellm.anthropic.messages.acreate`,
what the proxy's `/v1/messages` calls): a client that drops thinking blocks gets them back in
place, so a strict Claude accepts its tool loop; a client that keeps them sends what it got."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from clients import THINKING
from conftest import register
from litellm.integrations.custom_logger import CustomLogger
from reliability_utils import stored

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-messages-sdk=="
REPLY = [
    {"type": "thinking", "thinking": "Read a.py first.", "signature": SIG},
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
        "tools": [TOOL],
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


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
async def test_messages_acreate_restores_dropped_thinking_in_place(
    callback: ReasoningCallback, keeps: bool
) -> None:
    model = f"claude-sonnet-4-5-messages-{keeps}"
    with AnthropicUpstream(strict=True) as claude:
        claude.script(model, AnthropicReply(REPLY))
        claude.always(model, AnthropicReply([{"type": "text", "text": "one line"}]))

        async def send(messages: list[Any]) -> Any:
            return await litellm.anthropic.messages.acreate(
                model=f"anthropic/{model}",
                messages=messages,
                api_base=claude.base_url,
                api_key="k",
                max_tokens=2048,
                thinking=THINKING,
                tools=[TOOL],
            )

        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = await send(messages)
        content = first["content"]
        sent_back = content if keeps else [b for b in content if b["type"] != "thinking"]
        messages += [
            {"role": "assistant", "content": sent_back},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}],
            },
        ]
        answer = await send(messages)
        wire = claude.bodies(model)[-1]["messages"]
    assert answer["content"][0]["text"] == "one line"
    assert claude.refusals == []
    assert wire[1]["content"] == REPLY
    assert callback.stats["captured"] == 1
    assert callback.stats["restored"] == (0 if keeps else 1)


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
async def test_messages_acreate_stream_is_captured_from_its_sse(
    callback: ReasoningCallback, keeps: bool
) -> None:
    """An SDK stream (`acreate(stream=True)`): LiteLLM hands the hooks a chat-shaped copy of the
    reply, so it is captured from the SSE bytes LiteLLM collected: the next request of a client
    that dropped the thinking gets it back in place, exactly."""
    _streams_need_the_proxy_extra()
    model = f"claude-sonnet-4-5-messages-stream-{keeps}"
    with AnthropicUpstream(strict=True) as claude:
        params = _serve(claude, model, REPLY, "one line")
        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        stream = await litellm.anthropic.messages.acreate(messages=messages, stream=True, **params)
        sse = b"".join([c async for c in stream]).decode()
        assert '"signature_delta"' in sse  # the thinking came streamed, signed
        sent_back = REPLY if keeps else [b for b in REPLY if b["type"] != "thinking"]
        messages += [
            {"role": "assistant", "content": sent_back},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}],
            },
        ]
        answer = await litellm.anthropic.messages.acreate(messages=messages, **params)
        wire = claude.bodies(model)[-1]["messages"]
    assert answer["content"][0]["text"] == "one line"
    assert claude.refusals == []
    assert wire[1]["content"] == REPLY
    for _ in range(200):  # a keeping client's next request waits for nothing: poll
        if callback.stats["captured"]:
            break
        await asyncio.sleep(0.05)
    assert callback.stats["captured"] == 1
    assert callback.stats["restored"] == (0 if keeps else 1)


class _Successes(CustomLogger):
    def __init__(self) -> None:
        super().__init__()
        self.instance_id = uuid.uuid4().hex  # LiteLLM keeps one instance per class and fields
        self.metadata: list[dict[str, Any]] = []

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.metadata.append(kwargs["litellm_params"]["metadata"])


async def test_messages_calls_get_a_decisions_summary() -> None:
    callback, successes = ReasoningCallback(capture_wait_seconds=10.0), _Successes()
    register(callback)
    litellm.callbacks = [callback, successes]
    model = "claude-sonnet-4-5-messages-summary"
    try:
        with AnthropicUpstream(strict=True) as claude:
            params = _serve(claude, model, REPLY, "one line")
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


class _WithoutRequestHook(ReasoningCallback):
    """The callback as it was before it defined `async_pre_request_hook` (the control)."""

    async_pre_request_hook = CustomLogger.async_pre_request_hook  # type: ignore[assignment]


@pytest.mark.parametrize("defines_hook", [True, False], ids=["callback", "control"])
async def test_litellm_rust_core_on_the_messages_route(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, defines_hook: bool
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
            params = _serve(claude, model, REPLY, "one line")
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
        assert claude.bodies(model)[-1]["messages"][1]["content"] == REPLY
        assert callback.stats["captured"] == 1 and callback.stats["restored"] == 1
        assert warnings == []
    else:
        assert callback.stats["captured"] == 0  # the Rust core ran no reply hook
        if feature is None:  # LiteLLM 1.106 / 1.108: said once, naming the model
            assert len(warnings) == 1 and f"anthropic/{model}" in warnings[0]


async def test_the_adapter_route_keeps_the_turn_across_a_delivery(
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
                tools=[TOOL],
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


REDACTED_DISPLAY = [  # `redact-thinking-2026-02-12` (Claude Code): the text withheld, signed
    {"type": "thinking", "thinking": "", "signature": SIG + "-redacted-display"},
    {"type": "tool_use", "id": "toolu_sdk_r1", "name": "read_file", "input": {"path": "a"}},
    {"type": "thinking", "thinking": "", "signature": SIG + "-redacted-display-2"},
    {"type": "tool_use", "id": "toolu_sdk_r2", "name": "read_file", "input": {"path": "b"}},
]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
async def test_thinking_blocks_with_no_text_are_restored_in_place(
    callback: ReasoningCallback, stream: bool
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
        first = await litellm.anthropic.messages.acreate(messages=messages, stream=stream, **params)
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


def _result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "x"}


async def test_same_tool_ids_under_other_system_prompts_never_share_a_record(
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
                {"type": "thinking", "thinking": f"secret of {customer}", "signature": customer},
                {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": "a"}},
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
                    {"role": "user", "content": [_result(tool_id)]},
                ],
            )
            wire = claude.bodies(model)[-1]["messages"]
            blocks = wire[1]["content"]
            sent[customer] = [b.get("thinking") for b in blocks if b["type"] == "thinking"]
    assert sent == {"A": ["secret of A"], "B": ["secret of B"]}


async def test_same_tool_ids_in_two_conversations_of_one_customer_never_share_a_record(
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
                {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": "a"}},
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
                {"role": "user", "content": [_result(tool_id)]},
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
    callback: ReasoningCallback, stream: bool
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
        claude.script(model, AnthropicReply(REPLY, extra={"usage": usage}))
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
        {"type": "thinking", "thinking": "An old thought, summarised away.", "signature": SIG},
        {"type": "text", "text": "Old answer."},
    ]
    loop = [
        {"type": "thinking", "thinking": "After the summary: read a.py.", "signature": SIG + "2"},
        {"type": "tool_use", "id": "toolu_kept_1", "name": "read_file", "input": {"path": "a"}},
    ]
    answer = [
        {"type": "thinking", "thinking": "a.py holds x.", "signature": SIG + "3"},
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
    callback: ReasoningCallback, stream: bool
) -> None:
    """Anthropic's `fallbacks` (Fable 5): another model answers and the reply's `model` (the
    stream's `message_start`) says which. The record names that model; its signed blocks go
    back in place to the conversation's next request (same credentials)."""
    if stream:
        _streams_need_the_proxy_extra()
    model = f"claude-fable-5-messages-{stream}"
    with AnthropicUpstream(strict=True) as claude:
        claude.script(model, AnthropicReply(REPLY, extra={"model": "claude-opus-4-6"}))
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
            {"role": "assistant", "content": [b for b in REPLY if b["type"] != "thinking"]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_sdk_1", "content": "x"}],
            },
        ]
        await litellm.anthropic.messages.acreate(messages=messages, **params)
        wire = claude.bodies(model)[-1]["messages"]
    assert claude.refusals == []
    assert wire[1]["content"] == REPLY
    models = [record.model for record in stored(callback)]
    assert models == ["claude-opus-4-6"]


@pytest.mark.parametrize("model", ["claude-sonnet-4-5-no-block", "claude-fable-5-1-no-block"])
async def test_an_open_tool_loop_with_no_block_to_send_turns_thinking_off_where_it_can(
    callback: ReasoningCallback, model: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`/v1/messages`, a client that dropped the thinking block of the tool use it answers, and
    no record of it (another gateway made the call, or its record expired): a strict Claude
    refuses the loop with thinking on. As on chat, thinking goes off for this call where the
    model lets it (Sonnet 4.5: the call passes, the earlier message's block goes with it);
    Fable 5.1 always thinks, so the request goes as the client sent it, with a warning, and
    Claude's 400 is the one it gets without this callback."""
    import logging

    earlier = {"type": "thinking", "thinking": "Look first.", "signature": SIG}
    use = {"type": "tool_use", "id": "toolu_no_block", "name": "read_file", "input": {"path": "a"}}
    messages: list[Any] = [
        {"role": "user", "content": "What is in b.py?"},
        {"role": "assistant", "content": [earlier, {"type": "text", "text": "Nothing."}]},
        {"role": "user", "content": "And a.py?"},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_no_block", "content": "x"}],
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
