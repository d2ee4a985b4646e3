"""Stored key material, pinned: fixed inputs -> the bytes release 0.1.0 wrote (the record
codec's pinned bytes: tests/stores/test_codec_bytes.py, run on every line). A record written
before an upgrade must be found after it, so these values only change under the
key-compatibility rule (old and new releases sharing a store both keep restoring:
tests/stores/test_rolling_upgrade.py runs the previous release's code against this one)."""

from __future__ import annotations

import pytest

from litellm_reasoning.core import identity
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.stores._base import scope_id

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

MESSAGES = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny."},
]

# Computed by release 0.1.0 (commit e62144a) from MESSAGES.
DIGESTS_0_1_0 = [
    "37039ceb04eb048204f1667e28a639e2",
    "78aef80762dd3694cee08e0230a37d70",
    "f83c9c0900b87f8e565e0ffb89fcdfaa",
    "3214ae57a7b626eaa9988fcfba6eb095",
    "125ef6346c8314f4a5738385edf5cf0a",
]
TOOL_CALL_KEY_0_1_0 = "667fe1c5e894e749e5b42feb917ee68c6b6d1216"
# Computed by release 0.3.0 (commit ad69d5b; 0.2.0's key too): `key_at(scope, MESSAGES, 2)`.
TOOL_CALL_KEY_0_3_0 = "987a900f75001d629f8f022409252e5d07b80bf7"
# This release's (the system prompt is key material): pinned so a later release keeps it.
TOOL_CALL_KEY_0_4_0 = "9a70f1fad70f45d6bf7059f4f435ea66084ed62b"
POSITION_KEY_0_1_0 = "f09da64f57f604a52465cc1cbf3d6cf875857302"
POSITION_KEY_SCOPED_0_1_0 = "b7db64dfedee9b4b6cd1ed91fff3bcbce1490182"
SCOPE_ID_0_1_0 = {
    "ns=default": "95f178812d0ec549",
    "ns=acme|key=abc|team=t1|user=bob": "933f754cbab57abb",
}


def test_conversation_digests_are_unchanged() -> None:
    assert identity.prefix_digests(MESSAGES) == DIGESTS_0_1_0


def test_position_keys_are_unchanged() -> None:
    digests = identity.prefix_digests(MESSAGES)
    assert identity.message_key("ns=default", MESSAGES[4], digests[4]) == POSITION_KEY_0_1_0
    scoped = identity.message_key("ns=acme|key=abc|team=t1|user=bob", MESSAGES[4], digests[4])
    assert scoped == POSITION_KEY_SCOPED_0_1_0


def test_the_earlier_releases_tool_call_keys_are_still_computed() -> None:
    assert identity.legacy_tool_call_key("ns=default", MESSAGES[2]) == TOOL_CALL_KEY_0_1_0
    roles_and_shapes = [(m["role"], identity.canonical(m)) for m in MESSAGES[:2]]
    anchor = identity.anchor_of(roles_and_shapes, 2)
    previous = identity.previous_tool_call_keys("ns=default", MESSAGES[2], anchor=anchor)
    assert previous == (TOOL_CALL_KEY_0_3_0, TOOL_CALL_KEY_0_1_0)


def test_this_releases_tool_call_key_is_pinned() -> None:
    assert identity.key_at("ns=default", MESSAGES, 2) == TOOL_CALL_KEY_0_4_0


def test_scope_ids_are_unchanged() -> None:
    assert {scope: scope_id(scope) for scope in SCOPE_ID_0_1_0} == SCOPE_ID_0_1_0


# The `/v1/messages` format's keys (`core.formats.blocks`), as release 0.4.0 computes them
# (computed by commit add1989, before they moved out of `wire.anthropic.messages`).
BLOCK_MESSAGES = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "P"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": "sunny",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    },
    {"role": "assistant", "content": "It is sunny."},
    {"role": "user", "content": "Thanks"},
]
BLOCK_DIGESTS_0_4_0 = [
    "a072f84cf77377e179f1484311a2cc1b",
    "b2389a9859e32a292dd61ae1d78c9c8d",
    "34f0777e8a110a84b6835280e834ea5a",
    "c59108d6ad265237cc483be4845aa8f9",
    "55dd9a0b21885d20f6c4f7d7dc6d6851",
    "8f6becb034167cb9585b229d323647a6",
]
BLOCK_SYSTEM_0_4_0 = "c764f0b10bc372906e4b4cf39f9b8eca"
BLOCK_TOOL_USE_KEY_0_4_0 = "m2:f42800a0a10fda12ff4f3fa37bc817a8"
BLOCK_TEXT_KEY_0_4_0 = "m1:1b37292e7206d7ab78aa77e7b11be888"
BLOCK_TOOL_USE_KEY_0_3_0 = "m1:e46bf335f6d41c5b09bd19918a05dc94"
# Responses input items (`core.formats.items`): the anchors' keys (a function call keeps
# 0.1.0's tool-call key; an assistant message its position key).
INPUT_ITEMS = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_0", "output": "sunny"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "It is sunny."}],
    },
    {"role": "user", "content": "Thanks"},
]
ITEMS_DIGEST_0_4_0 = "c5471f71da1c7722cc0c9ca814cd6c24"
ITEM_KEYS_0_4_0 = {
    1: "667fe1c5e894e749e5b42feb917ee68c6b6d1216",
    3: "36d0d189587495b57c3cf787b60780c93f2440cb",
}


def test_the_block_message_keys_are_pinned() -> None:
    from litellm_reasoning.core.formats import blocks

    digests = blocks.prefix_digests(BLOCK_MESSAGES)
    assert digests == BLOCK_DIGESTS_0_4_0
    system = blocks.system_digest(
        [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    )
    assert system == BLOCK_SYSTEM_0_4_0
    keys = {
        i: blocks.message_key(
            "ns=default", digests[i], BLOCK_MESSAGES[i], blocks.place_of(BLOCK_MESSAGES, i, system)
        )
        for i in (1, 3)
    }
    assert keys == {1: BLOCK_TOOL_USE_KEY_0_4_0, 3: BLOCK_TEXT_KEY_0_4_0}
    assert blocks.previous_message_key("ns=default", BLOCK_MESSAGES[1]) == (
        BLOCK_TOOL_USE_KEY_0_3_0
    )
    # What a dropping client sends: the key is found without the thinking block.
    dropped = [*BLOCK_MESSAGES]
    dropped[1] = {"role": "assistant", "content": [BLOCK_MESSAGES[1]["content"][1]]}
    missing, _ = blocks.wanted(
        "ns=default", dropped, TurnPolicy.ALL_TURNS, 4, blocks.prefix_digests(dropped), system
    )
    assert missing == keys


def test_the_input_item_keys_are_pinned() -> None:
    from litellm_reasoning.core.formats import items

    conversation = items.Conversation.of("ns=default", INPUT_ITEMS)
    assert conversation.digest == ITEMS_DIGEST_0_4_0
    assert items.wanted(conversation, TurnPolicy.ALL_TURNS) == ITEM_KEYS_0_4_0
