"""The prefix memo of the block-messages and input-items formats changes nothing but the time:
whatever a conversation did between requests (grew, was edited, truncated, resent with values
Python calls equal but JSON does not, mutated in place after the request, moved its cache
markers), a request gets exactly the digests the walk without the memo computes, each scope
only its own, and the memo stays within its bounds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litellm_reasoning.core import identity
from litellm_reasoning.core.formats import blocks, items
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.turns import current_turn_start, without_turn
from litellm_reasoning.memo.chain_digests import ChainDigests

SCOPE = "ns=test"

FORMATS: dict[str, tuple[Callable[[str, Any], str], str, Callable[[Any], list[str]]]] = {
    "blocks": (blocks.next_digest, blocks.EMPTY, blocks.prefix_digests),
    "items": (items.next_digest, identity.EMPTY_DIGEST, items.chained_digests),
}

# ------------------------------------------------------------------ random conversations

equal_but_not_same = st.sampled_from([1, 1.0, True, 0, 0.0, False, None, "1"])
"""Values `==` mixes up (1 == 1.0 == True) while their JSON differs."""
text = st.sampled_from(["", "a", "b", "ok", "toolu_1", "x" * 40])
block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries(
        {"type": st.just("text"), "text": text, "cache_control": st.just({"type": "ephemeral"})}
    ),
    st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": text, "signature": st.sampled_from(["s1", "s2"])}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": st.sampled_from(["toolu_1", "toolu_2"]),
            "name": st.just("read"),
            "input": st.dictionaries(st.sampled_from(["path", "limit"]), equal_but_not_same),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": st.just("toolu_1"), "content": text}
    ),
    st.fixed_dictionaries({"type": st.just("reasoning"), "id": text}),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": text, "arguments": equal_but_not_same}
    ),
)
message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"])},
        optional={"content": st.one_of(text, st.lists(block, max_size=3), equal_but_not_same)},
    ),
    block,  # input items are blocks at the top level
)
conversation = st.lists(message, max_size=6)
edit = st.one_of(
    st.tuples(st.just("append"), st.lists(message, min_size=1, max_size=3)),
    st.tuples(st.just("replace"), st.integers(0, 8), message),
    st.tuples(st.just("truncate"), st.integers(0, 8)),
    st.tuples(st.just("same"), st.just(0)),  # resent unchanged, as new dicts
    st.tuples(st.just("other"), conversation),  # another conversation of the scope
)


def _apply(history: list[Any], change: tuple[Any, ...]) -> list[Any]:
    how = change[0]
    if how == "append":
        return history + copy.deepcopy(change[1])
    if how == "replace" and history:
        out = list(history)
        out[change[1] % len(history)] = copy.deepcopy(change[2])
        return out
    if how == "truncate":
        return history[: change[1]]
    if how == "other":
        return copy.deepcopy(change[1])
    return copy.deepcopy(history)


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=conversation, edits=st.lists(edit, max_size=8), mutate=st.booleans())
def test_memoised_equals_unmemoised_on_random_conversations(
    name: str, start: list[Any], edits: list[tuple[Any, ...]], mutate: bool
) -> None:
    step, empty, walk = FORMATS[name]
    memo = ChainDigests(step, empty, max_bytes=2_000)
    history = copy.deepcopy(start)
    for change in [("same", 0), *edits]:
        history = _apply(history, change)
        assert memo.digests(SCOPE, history) == walk(history)
        if mutate and history and isinstance(history[0], dict):
            history[0]["content"] = "changed in place after the request"
            assert memo.digests(SCOPE, history) == walk(history)
        assert memo.held_bytes <= 2_000 or memo.conversations == 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=conversation,
    edits=st.lists(edit, max_size=8),
    systems=st.lists(st.sampled_from(["", "You are Claude Code.", "Another prompt."]), min_size=9),
    policy=st.sampled_from(list(TurnPolicy)),
)
def test_memoised_facts_and_keys_equal_what_the_walk_reads_and_makes(
    start: list[Any], edits: list[tuple[Any, ...]], systems: list[str], policy: TurnPolicy
) -> None:
    """The block format's facts of each message and its store keys (which also depend on the
    system prompt, the memo's salt) are the ones read and made without the memo."""
    memo = ChainDigests(blocks.next_digest, blocks.EMPTY, blocks.facts_of)
    history = copy.deepcopy(start)
    for change, system_prompt in zip([("same", 0), *edits], systems, strict=False):
        history = _apply(history, change)
        system = blocks.system_digest(system_prompt)
        walked = memo.walk(SCOPE, history, system)
        assert walked.facts == blocks.all_facts(history)
        turn_start = len(history) // 2 - 1
        got = blocks.wanted(
            SCOPE, history, policy, turn_start, walked.digests, system, walked.facts, walked.keys
        )
        fresh = blocks.wanted(
            SCOPE, history, policy, turn_start, blocks.prefix_digests(history), system
        )
        assert got == fresh
        memo.remember(walked)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=conversation,
    edits=st.lists(edit, max_size=8),
    policy=st.sampled_from(list(TurnPolicy)),
)
def test_memoised_input_item_keys_equal_what_the_walk_makes(
    start: list[Any], edits: list[tuple[Any, ...]], policy: TurnPolicy
) -> None:
    """The Responses anchors' store keys a request reuses from its conversation's previous
    request are the ones made without the memo."""
    memo = ChainDigests(items.next_digest, identity.EMPTY_DIGEST)
    history = copy.deepcopy(start)
    for change in [("same", 0), *edits]:
        history = _apply(history, change)
        walked = memo.walk(SCOPE, history)
        got = items.wanted(
            items.Conversation.of(SCOPE, history, walked.digests, walked.keys), policy
        )
        assert got == items.wanted(items.Conversation.of(SCOPE, history), policy)
        memo.remember(walked)


def _claude_code(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": [{"type": "text", "text": f"task {i}"}]})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"n": i}}
                ],
            }
        )
        out.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}],
            }
        )
    return out


class CountedSteps:
    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, before: str, item: Any) -> str:
        self.steps += 1
        return blocks.next_digest(before, item)


def test_a_continued_conversation_steps_only_its_new_messages() -> None:
    counted = CountedSteps()
    memo = ChainDigests(counted, blocks.EMPTY)
    first = _claude_code(20)
    memo.digests(SCOPE, first)
    assert counted.steps == 60
    second = copy.deepcopy(first) + _claude_code(21)[-3:]
    assert memo.digests(SCOPE, second) == blocks.prefix_digests(second)
    assert counted.steps == 63
    # another scope never reuses this scope's conversations
    memo.digests("ns=other", copy.deepcopy(second))
    assert counted.steps == 63 + 63


def test_remembered_facts_are_off_the_collectors_lists() -> None:
    """A remembered conversation's facts (named tuples, which the collector never untracks of
    its own accord) are untracked with the accelerator: a busy key's remembered conversations
    do not lengthen every full collection. The request's answers are the same either way."""
    import gc

    from litellm_reasoning.accelerator import NATIVE

    memo = ChainDigests(blocks.next_digest, blocks.EMPTY, blocks.facts_of)
    messages = _claude_code(20)
    walked = memo.walk(SCOPE, messages)
    assert walked.facts == [blocks.facts_of(m) for m in messages]
    assert all(map(gc.is_tracked, walked.facts))  # the request's own, before it is remembered
    memo.remember(walked)
    gc.collect()
    assert [gc.is_tracked(f) for f in walked.facts] == [NATIVE is None] * len(messages)
    # Its lists too, from the walk on (items, digests, facts: never a container of its own).
    lists = (walked.encoded, walked.digests, walked.facts)
    assert [gc.is_tracked(held) for held in lists] == [NATIVE is None] * 3
    again = memo.walk(SCOPE, copy.deepcopy(messages) + _claude_code(21)[-3:])
    assert again.facts[: len(messages)] == walked.facts
    assert again.digests == blocks.prefix_digests(copy.deepcopy(messages) + _claude_code(21)[-3:])


def test_the_keys_of_a_continued_conversation_are_made_once_per_system_prompt() -> None:
    memo = ChainDigests(blocks.next_digest, blocks.EMPTY, blocks.facts_of)
    system = blocks.system_digest("You are Claude Code.")
    first = _claude_code(20)
    walked = memo.walk(SCOPE, first, system)
    missing, _ = blocks.wanted(
        SCOPE, first, TurnPolicy.ALL_TURNS, 57, walked.digests, system, walked.facts, walked.keys
    )
    memo.remember(walked)
    assert len(missing) == 20 and walked.keys == missing
    second = copy.deepcopy(first) + _claude_code(21)[-3:]
    walked = memo.walk(SCOPE, second, system)
    assert walked.keys == missing  # the 20 made by the first request, before it is extended
    assert memo.walk(SCOPE, second, blocks.system_digest("Another prompt.")).keys == {}


def test_moved_cache_markers_step_only_the_messages_that_moved() -> None:
    """Claude Code marks the newest messages for its prompt cache and moves the markers every
    request: the marked and unmarked messages differ as values, not in identity, and the rest
    of the conversation is not hashed again."""
    counted = CountedSteps()
    memo = ChainDigests(counted, blocks.EMPTY)
    first = _claude_code(20)
    first[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    memo.digests(SCOPE, first)
    second = copy.deepcopy(first) + _claude_code(21)[-3:]
    del second[59]["content"][0]["cache_control"]
    second[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    before = counted.steps
    assert memo.digests(SCOPE, second) == blocks.prefix_digests(second)
    assert counted.steps - before == 1 + 3  # the unmarked message and the three new ones


def test_values_equal_in_python_but_not_in_json_are_told_apart() -> None:
    memo = ChainDigests(blocks.next_digest, blocks.EMPTY)
    first = _claude_code(3)
    memo.digests(SCOPE, first)
    second = copy.deepcopy(first)
    second[4]["content"][0]["input"] = {"n": True}  # == {"n": 1}, another JSON
    assert second == first
    assert memo.digests(SCOPE, second) == blocks.prefix_digests(second)
    assert blocks.prefix_digests(second)[5] != blocks.prefix_digests(first)[5]


def test_bounds() -> None:
    memo = ChainDigests(blocks.next_digest, blocks.EMPTY, max_bytes=50_000, per_scope=2)
    for scope in range(40):
        for conversation in range(3):
            history = _claude_code(10)
            history[0]["content"][0]["text"] = f"conversation {conversation}"
            memo.digests(f"ns={scope}", history)
        assert memo.held_bytes <= 50_000
    assert 0 < memo.conversations <= 2 * 40


def test_many_short_conversations_are_capped_by_count() -> None:
    """A gateway's many end users, each a short conversation: the byte estimate would let
    millions in; the count caps them."""
    memo = ChainDigests(blocks.next_digest, blocks.EMPTY, max_conversations=50)
    for user in range(300):
        memo.digests(f"ns=user-{user}", [{"role": "user", "content": f"hi {user}"}])
        assert memo.conversations <= 50
    assert memo.conversations == 50
    # the most recent ones are kept
    counted = CountedSteps()
    memo.step = counted
    memo.digests("ns=user-299", [{"role": "user", "content": "hi 299"}])
    assert counted.steps == 0


def _session(seed: int, turns: int) -> list[dict[str, Any]]:
    """One Claude Code session of a team key: every session starts alike, their tool results
    differ."""
    out = _claude_code(turns)
    for message in out[2::3]:
        message["content"][0]["content"] = f"ok {seed}"
    return out


def test_every_session_of_a_busy_key_continues_its_own() -> None:
    """64 sessions on one key, their requests interleaved: each steps only its new messages
    (with a few conversations per scope kept, each of these requests stepped them all)."""
    counted = CountedSteps()
    memo = ChainDigests(counted, blocks.EMPTY)
    sessions = range(64)
    for session in sessions:
        memo.digests(SCOPE, _session(session, 5))
    before = counted.steps
    for session in sessions:
        second = _session(session, 6)
        assert memo.digests(SCOPE, second) == blocks.prefix_digests(second)
    assert counted.steps - before == 64 * 3


def test_over_a_cap_the_oldest_conversation_goes_whatever_its_scope() -> None:
    """A busy key does not push another key's newer conversation out before its own older
    ones."""
    counted = CountedSteps()
    memo = ChainDigests(counted, blocks.EMPTY, max_conversations=3)
    for scope, session in (("ns=busy", 1), ("ns=busy", 2), ("ns=quiet", 3), ("ns=busy", 4)):
        memo.digests(scope, _session(session, 2))
    assert memo.conversations == 3
    before = counted.steps
    memo.digests("ns=quiet", _session(3, 3))  # remembered: only its new turn is stepped
    assert counted.steps - before == 3
    # The oldest, forgotten: all of it but the two messages every session starts with.
    memo.digests("ns=busy", _session(1, 3))
    assert counted.steps - before == 3 + 9 - 2


reasoning_block = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": text, "signature": st.just("s1")}
    ),
    st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": st.just("d")}),
)


@settings(max_examples=300, deadline=None)
@given(
    sent=st.one_of(
        message,
        st.fixed_dictionaries(  # blocks of its own too (a client that kept some)
            {"role": st.sampled_from(["assistant", "user"])},
            optional={"content": st.lists(st.one_of(reasoning_block, block), max_size=4)},
        ),
    ),
    leading=st.lists(reasoning_block, min_size=1, max_size=3),
)
def test_facts_of_blocks_put_in_front_follow_from_the_messages_own(
    sent: Any, leading: list[dict[str, Any]]
) -> None:
    """What a restore makes (an assistant message's reasoning blocks in front of its content)
    has the facts `with_leading_reasoning` derives, as reading it again finds them; of any
    other message it derives none (a user message's facts depend on its role)."""
    restored = {**sent, "content": [*leading, *blocks.content_blocks(sent.get("content"))]}
    derived = blocks.with_leading_reasoning(blocks.facts_of(sent), len(leading))
    if sent.get("role") != "assistant":
        assert derived is None
        return
    assert derived == blocks.facts_of(restored)
    assert type(derived) is blocks.BlockFacts


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "assistant"]),
                "content": st.lists(st.one_of(reasoning_block, block), max_size=3),
            }
        ),
        max_size=8,
    ),
    policy=st.sampled_from(list(TurnPolicy)),
    data=st.data(),
)
def test_the_blocks_a_policy_keeps_are_its_rule(
    messages: list[Any], policy: TurnPolicy, data: st.DataObject
) -> None:
    """`wanted` asks for, and `limit` leaves alone, the assistant messages `keeps` names: the
    policy's turns, the current turn always; `limit` strips the blocks of the others (beside
    other content)."""
    start = data.draw(st.integers(-1, max(len(messages) - 1, -1)), label="turn start")
    facts = blocks.all_facts(messages)
    digests = blocks.prefix_digests(messages)
    kept = {
        i for i, fact in enumerate(facts) if fact.assistant and blocks.keeps(policy, i, start, fact)
    }
    missing, reorderable = blocks.wanted(SCOPE, messages, policy, start, digests, facts=facts)
    assert {*missing, *reorderable} <= kept
    assert {i for i in kept if not facts[i].reasoning_at} == set(missing)
    limited = blocks.limit(
        messages, policy, start, leading_run=False, max_tokens=None, count=_no_tokens, facts=facts
    )
    assert set(limited.stripped) == {
        i
        for i, fact in enumerate(facts)
        if fact.assistant and i not in kept and 0 < len(fact.reasoning_at) < fact.blocks
    }


def _no_tokens(record: Any) -> int:
    return 0


@settings(max_examples=300, deadline=None)
@given(
    sent=st.lists(
        st.one_of(
            message,
            st.fixed_dictionaries(
                {"role": st.just("user")},
                optional={
                    "content": st.one_of(text, st.lists(block, max_size=3), equal_but_not_same),
                    "turn": st.sampled_from([True, False, 0, "false"]),
                    "type": st.sampled_from(["message", "other"]),
                },
            ),
        ),
        max_size=8,
    )
)
def test_the_turn_starts_among_the_messages_that_ask(sent: list[Any]) -> None:
    """Only a message that holds more than tool results (`asking`) can start a turn: asked of
    those alone, the turn rule finds the start it finds reading every message."""
    cleaned = without_turn(sent)
    among = (blocks.asking(blocks.all_facts(cleaned)),)
    assert current_turn_start(sent, among) == current_turn_start(sent)
