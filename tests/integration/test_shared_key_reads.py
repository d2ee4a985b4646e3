"""A tool-call key two conversations of one tenant share (`core/shared_keys.py`), read through
real LiteLLM: what a request restores from what the store holds under the key and under its
conversation's own copy. (The rules alone: `tests/core/test_shared_keys.py`; written by the
stores themselves: `tests/stores/test_stores.py`; end to end with Kimi's counter ids:
`tests/wire/test_providers_tool_loops.py`.)"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.core.shared_keys import SHARED, exact_key
from litellm_reasoning.testing.upstream import Reply, Upstream

CALL = {
    "id": "functions.read_file:0",
    "type": "function",
    "function": {"name": "read_file", "arguments": "{}"},
}
TOOL = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}


def _history(name: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"About {name}.py"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": CALL["id"], "content": "ok"},
    ]


def _conversation(
    upstream: Upstream, name: str, *replies: str
) -> tuple[ReasoningCallback, str, list[dict[str, Any]], dict[str, Any]]:
    """A registered callback, a Kimi model of its own scripted with `replies`, the history
    about `name` and the call's parameters."""
    callback = register(ReasoningCallback())
    model = f"kimi-k2.6-{uuid.uuid4().hex[:8]}"
    for reply in replies:
        upstream.script(model, Reply(message={"content": reply}))
    params = {"model": f"moonshot/{model}", "api_base": upstream.base_url, "api_key": "k"}
    return callback, model, _history(name), params


def _tool_call_key(
    callback: ReasoningCallback, messages: list[dict[str, Any]], params: dict[str, Any]
) -> tuple[str, str, str]:
    """(scope, key, digest before it) of the history's tool-call message, as the call files it."""
    facts = callback.engine.facts_of({**params, "tools": [TOOL]})
    request = callback.engine.prepare(facts, messages)
    return request.scope, request.keys[4], request.before[4]


def _record(text: str, conversation: str) -> Reasoning:
    return dataclasses.replace(
        Reasoning.from_text(text, provider="moonshot"), conversation=conversation
    )


@pytest.mark.parametrize(
    ("held", "own_copy", "expected", "own_reads"),
    [
        # The key's first writer, marked shared: its own record, under the key.
        ("mine", False, "mine at the key", 0),
        # Another conversation's under a shared key, and this one's copy: the copy.
        ("shared", True, "my copy", 1),
        # A shared key without this conversation's copy (a head cut): nothing.
        ("shared", False, None, 0),
        # Another conversation's alone (the mark evicted) and this one's copy: the copy.
        ("other", True, "my copy", 1),
        # Another conversation's alone and no copy: read as this conversation's with its
        # head cut or edited (one writer: nothing tells them apart).
        ("other", False, "theirs at the key", 0),
    ],
)
async def test_what_a_request_restores_from_a_key_two_conversations_may_share(
    upstream: Upstream, held: str, own_copy: bool, expected: str | None, own_reads: int
) -> None:
    callback, model, messages, params = _conversation(upstream, "z", "Done.")
    try:
        scope, key, before = _tool_call_key(callback, messages, params)
        under_key = {
            "mine": _record("mine at the key", SHARED + before),
            "shared": _record("theirs at the key", SHARED + "another conversation"),
            "other": _record("theirs at the key", "another conversation"),
        }[held]
        records = {key: under_key}
        if own_copy:
            records[exact_key(key, before)] = _record("my copy", before)
        for name, record in records.items():  # each where the test puts it
            callback.store.put_many(scope, {name: record})
        await litellm.acompletion(messages=messages, tools=[TOOL], **params)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    wire = upstream.bodies(model)[-1]["messages"]
    assert wire[4].get("reasoning_content") == expected
    assert callback.stats["shared_key_own"] == own_reads
    assert callback.stats["shared_key_ambiguous"] == (1 if expected is None else 0)


@pytest.mark.parametrize("replaced", [False, True])
async def test_a_continued_request_checks_a_record_put_under_its_key_since(
    upstream: Upstream, replaced: bool
) -> None:
    """A request continuing a remembered one (its walk, keys and plan reused from the memo)
    still checks every record its read finds: one put under the key since (another
    conversation's, the key now shared) is read past to the conversation's own copy, not
    restored."""
    callback, model, messages, params = _conversation(upstream, "y", "Done.", "Done again.")
    try:
        scope, key, before = _tool_call_key(callback, messages, params)
        callback.store.put_many(scope, {key: _record("mine at the key", before)})
        await litellm.acompletion(messages=messages, tools=[TOOL], **params)
        if replaced:
            callback.store.put_many(
                scope,
                {
                    key: _record("theirs at the key", SHARED + "another conversation"),
                    exact_key(key, before): _record("my copy", before),
                },
            )
        longer = [
            *messages,
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "And?"},
        ]
        await litellm.acompletion(messages=longer, tools=[TOOL], **params)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    first, second = (body["messages"] for body in upstream.bodies(model)[-2:])
    assert first[4]["reasoning_content"] == "mine at the key"
    assert second[4]["reasoning_content"] == ("my copy" if replaced else "mine at the key")
    assert callback.stats["shared_key_own"] == (1 if replaced else 0)
    # each request restored the tool-call message's reasoning once
    assert callback.stats["restored"] == 2
