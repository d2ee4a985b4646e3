"""OpenAI Responses: the pure rules (turn rule over input items, which `rs_` ids may go out,
what is stored under which anchor) and the issuer rule through real LiteLLM: OpenAI's encrypted
reasoning is never sent to another provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from clients import RESPONSES_TOOLS, chat_only_tool_loop, next_input
from conftest import settled
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.formats.items import Conversation, as_message, is_anchor, wanted
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import render
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.core.turns import current_turn_start, without_turn
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.upstream import Reply, Upstream
from litellm_reasoning.wire import get_dialect
from litellm_reasoning.wire.openai_responses import input_items
from litellm_reasoning.wire.openai_responses.dialect import (
    is_reasoning_model,
    with_encrypted_include,
)
from litellm_reasoning.wire.openai_responses.input_items import records, render_input

CASSETTES = REPO / "cassettes"
Json = dict[str, Any]


def _tool_loop() -> list[Json]:
    raw = yaml.safe_load((CASSETTES / "openai_responses_tool_loop.yaml").read_text("utf-8"))
    return [
        {
            "request": json.loads(item["request"]["body"]),
            "response": json.loads(item["response"]["body"]["string"]),
        }
        for item in raw["interactions"]
    ]


# ---------------------------------------------------------------- pure rules


def test_turn_rule_over_input_items() -> None:
    """The one turn rule (`core.turns`) reads Responses input items as it reads chat messages."""
    items: list[Json] = [
        {"role": "user", "content": "Q1"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Q2"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
        {"role": "user", "content": "note", "turn": False},
        {"role": "user", "content": "wrong type", "turn": "false"},
    ]
    assert current_turn_start(items) == 6  # only the boolean false marks a delivery
    assert current_turn_start(items[:6]) == 2
    assert current_turn_start(items[1:2]) == -1


def test_tool_loop_reply_is_stored_under_the_call_the_client_sends_back() -> None:
    """The recorded reply's reasoning item is found again from request 2 as the recorded client
    sent it without its reasoning item, and restored exactly as that client sent it."""
    first, second = _tool_loop()
    captured = records(
        Conversation.of("s", first["request"]["input"]),
        first["response"]["output"],
        provider="openai",
        model="gpt-5",
    )
    dropped = [i for i in second["request"]["input"] if i.get("type") != "reasoning"]
    keys = wanted(Conversation.of("s", dropped), TurnPolicy.ALL_TURNS)
    assert set(keys.values()) == set(captured)
    found = {index: captured[key] for index, key in keys.items()}
    assert render_input(dropped, found, store=True).items == second["request"]["input"]
    # A function call's record names the conversation before it, as the next request's lookup
    # does (`shared_keys`: deterministic call ids two conversations repeat are told apart).
    conversation = Conversation.of("s", dropped)
    placed = {i: captured[key].conversation for i, key in keys.items()}
    calls = [i for i in keys if dropped[i].get("type") == "function_call"]
    assert calls and all(placed[i] == conversation.digests[i - 1] for i in calls)
    # another tenant's keys never name this record
    assert not set(wanted(Conversation.of("t", dropped), TurnPolicy.ALL_TURNS).values()) & set(
        captured
    )


_item = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": st.sampled_from(["c1", "c2"])},
        optional={"id": st.just("fc_1"), "turn": st.just(False)},
    ),
    st.fixed_dictionaries(
        {"type": st.just("message"), "role": st.sampled_from(["user", "assistant"])},
        optional={"content": st.just("hi"), "turn": st.booleans()},
    ),
    st.fixed_dictionaries(
        {"type": st.just("reasoning"), "summary": st.just([])},
        optional={"id": st.just("rs_1"), "encrypted_content": st.just("gAAA")},
    ),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": st.just("c1")}),
)
_record = st.builds(
    lambda provider, data, rid: Reasoning(
        parts=(ReasoningPart(kind="encrypted", text="", data=data, id=rid),), provider=provider
    ),
    st.sampled_from(["openai", "anthropic", None]),
    st.sampled_from(["gAAAB", ""]),
    st.sampled_from(["rs_9", None]),
)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(_item, max_size=8), data=st.data())
def test_render_input_between_the_found_items_is_item_by_item(
    items: list[Any], data: st.DataObject
) -> None:
    """With `store` on, the input is made a slice at a time between the found anchors: the
    same items, records and decisions as made item by item (and with it off, the client's own
    reasoning items lose their ids as before)."""
    found = data.draw(
        st.dictionaries(st.integers(-1, len(items) + 1), _record, max_size=4), label="found"
    )
    cleaned = without_turn(items)
    by_slices = input_items._rendered_between(cleaned, found, "openai")
    by_items = input_items._rendered_each(cleaned, found, True, "openai")
    assert by_slices.items == by_items.items
    assert by_slices.restored == by_items.restored
    assert by_slices.dropped == by_items.dropped
    assert render_input(items, found, store=True, provider="openai").items == by_items.items
    off = render_input(items, found, store=False, provider="openai").items
    assert not any(
        i.get("type") == "reasoning" and "id" in i and "encrypted_content" in i for i in off
    )


@settings(max_examples=300, deadline=None)
@given(items=st.lists(_item, max_size=8), policy=st.sampled_from(list(TurnPolicy)), data=st.data())
def test_the_anchors_a_policy_keeps_are_its_rule(
    items: list[Any], policy: TurnPolicy, data: st.DataObject
) -> None:
    """`wanted` asks for the anchors the client sent without their reasoning item that
    `policy.keeps` names, read as the chat message each stands for."""
    start = data.draw(st.integers(-1, max(len(items) - 1, -1)), label="turn start")
    expected = {
        i
        for i, item in enumerate(items)
        if is_anchor(item)
        and not (i > 0 and items[i - 1].get("type") == "reasoning")
        and policy is not TurnPolicy.NONE
        and policy.keeps(i, as_message(item), start)
    }
    assert set(wanted(Conversation.of("s", items), policy, start)) == expected


def test_rs_ids_only_where_they_can_be_paired() -> None:
    part = ReasoningPart(kind="encrypted", data="ENC", id="rs_1", details={"summary": []})
    record = {1: Reasoning(parts=(part,), provider="openai")}
    call = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""}
    items: list[Json] = [{"role": "user", "content": "q"}, call]
    with_id = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"}
    without_id = {"type": "reasoning", "summary": [], "encrypted_content": "ENC"}
    assert render_input(items, record, store=True).items[1] == with_id
    assert render_input(items, record, store=False).items[1] == without_id
    bare_call = {k: v for k, v in call.items() if k != "id"}
    assert render_input([items[0], bare_call], record, store=True).items[1] == without_id
    # store false: the client's own reasoning items lose their id as well
    own = [items[0], {**with_id}, call]
    assert render_input(own, {}, store=False).items[1] == without_id


def test_another_issuers_record_is_not_put_in_the_input() -> None:
    part = ReasoningPart(kind="encrypted", data="ENC", id="rs_1")
    items: list[Json] = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
    ]
    rendered = render_input(items, {1: Reasoning(parts=(part,), provider="azure")}, store=True)
    assert rendered.items == items and rendered.dropped == [1]


def test_encrypted_content_is_asked_only_of_reasoning_models() -> None:
    """Non-reasoning models reject `include: ["reasoning.encrypted_content"]`."""
    assert all(map(is_reasoning_model, ["gpt-5", "gpt-5.5", "o3-mini", "openai/o4-mini"]))
    assert all(map(is_reasoning_model, ["gpt-6-sol", "gpt-6.1-terra", "openai/gpt-6-astra"]))
    assert not any(
        map(is_reasoning_model, ["gpt-4o", "gpt-4.1-mini", "gpt-oss-120b", "gpt-35-turbo"])
    )


def test_include_is_merged_not_replaced() -> None:
    assert with_encrypted_include(None) == ["reasoning.encrypted_content"]
    assert with_encrypted_include(["a"]) == ["a", "reasoning.encrypted_content"]
    assert with_encrypted_include(["reasoning.encrypted_content"]) == [
        "reasoning.encrypted_content"
    ]


def test_bridge_target_and_policy() -> None:
    target = resolve_target("openai", "responses/gpt-5", None, dialect_of=get_dialect)
    assert (target.dialect.name, target.policy) == ("openai_responses", TurnPolicy.ALL_TURNS)
    # plain OpenAI chat still takes no reasoning back
    assert (
        resolve_target("openai", "gpt-5", None, dialect_of=get_dialect).dialect.name
        == "no_reasoning"
    )


OPENAI_RECORD = Reasoning(
    parts=(
        ReasoningPart(
            kind="encrypted",
            text="summary",
            data="gAAAA-openai",
            id="rs_1",
            details={"summary": [{"type": "summary_text", "text": "summary"}]},
        ),
    ),
    provider="openai",
    model="gpt-5",
)


@pytest.mark.parametrize(
    "dialect", ["anthropic", "anthropic_bedrock", "anthropic_vertex", "openai_chat", "no_reasoning"]
)
def test_other_dialects_never_render_openai_encrypted_reasoning(dialect: str) -> None:
    messages: list[Json] = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "x"},
    ]
    out = render(messages, get_dialect(dialect), TurnPolicy.ALL_TURNS, {1: OPENAI_RECORD})
    assert "gAAAA-openai" not in json.dumps(out.messages)
    assert "summary" not in json.dumps(out.messages[1])


# ---------------------------------------------------------------- issuer rule through LiteLLM


@pytest.fixture
def cb() -> Iterator[ReasoningCallback]:
    litellm.logging_callback_manager._reset_all_callbacks()
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    yield callback
    litellm.logging_callback_manager._reset_all_callbacks()


async def test_openai_reasoning_does_not_follow_a_switch_to_another_provider(
    cb: ReasoningCallback,
) -> None:
    """A tool loop started on `openai/responses/gpt-5` (recorded reply) continues on Claude and
    on DeepSeek: the OpenAI encrypted item is captured, and neither provider receives it (nor
    its summary as reasoning text)."""
    first, _ = _tool_loop()
    (reasoning,) = [i for i in first["response"]["output"] if i["type"] == "reasoning"]
    with Upstream() as openai, AnthropicUpstream(strict=True) as claude:
        openai.script("gpt-5", Reply(raw_body=json.dumps(first["response"])))
        messages: list[Json] = [{"role": "user", "content": "Compose a poem."}]
        reply = await litellm.acompletion(
            model="openai/responses/gpt-5", messages=messages, api_base=openai.base_url, api_key="k"
        )
        call = reply.choices[0].message.tool_calls[0]
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": "plan updated"},
        ]
        await settled(cb)
        assert cb.stats["captured"] == 1
        claude.script("claude-sonnet-4-5", AnthropicReply([{"type": "text", "text": "ok"}]))
        await litellm.acompletion(
            model="anthropic/claude-sonnet-4-5",
            messages=messages,
            api_base=claude.base_url,
            api_key="k",
            max_tokens=100,
        )
        openai.script("deepseek-reasoner", Reply(message={"role": "assistant", "content": "ok"}))
        await litellm.acompletion(
            model="deepseek/deepseek-reasoner",
            messages=messages,
            api_base=openai.base_url,
            api_key="k",
        )
        wire = json.dumps(
            [*claude.bodies("claude-sonnet-4-5"), *openai.bodies("deepseek-reasoner")]
        )
    assert reasoning["encrypted_content"] not in wire
    assert reasoning["summary"][0]["text"][:40] not in wire
    assert cb.stats["dropped"] >= 1  # Claude's dialect saw the record and left it out


# ------------------------------------------------------------------ Responses to a chat-only model


@pytest.mark.parametrize("keep", [False, True], ids=["dropping", "keeping"])
async def test_responses_to_a_chat_only_model_restores_the_tool_call_reasoning(
    cb: ReasoningCallback, keep: bool
) -> None:
    """`litellm.aresponses` to DeepSeek goes through LiteLLM's Responses-to-chat bridge, which
    sends the reply's empty content back as an empty text part: the message is the same one
    (identity), so its reasoning goes back and DeepSeek's strict rule passes."""
    from litellm_reasoning.testing.refusals import deepseek_reasoning_required

    model = "deepseek-v4-flash"
    with Upstream(refuse=[deepseek_reasoning_required]) as deepseek:
        chat_only_tool_loop(deepseek, model)
        params: dict[str, Any] = {
            "model": f"deepseek/{model}",
            "api_base": deepseek.base_url,
            "api_key": "k",
            "tools": RESPONSES_TOOLS,
        }
        first = [{"role": "user", "content": "Weather in Paris?"}]
        reply = await litellm.aresponses(input=first, **params)
        output = [item.model_dump(exclude_none=True) for item in reply.output]
        await settled(cb)
        second = await litellm.aresponses(input=next_input(first, output, keep), **params)
        assert second.output_text == "Sunny."
        sent = deepseek.bodies(model)[-1]["messages"]
        assert sent[1]["role"] == "assistant" and sent[1]["tool_calls"]
        assert sent[1]["reasoning_content"] == "Look up Paris."
        assert deepseek.refusals == []
        assert cb.stats["missing"] == 0
