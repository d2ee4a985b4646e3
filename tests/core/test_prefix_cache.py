"""The prefix cache changes nothing but the time: whatever the history did between requests,
a request gets exactly what the uncached path computes (digests, store keys, own reasoning,
the rendered messages byte for byte), and the cache stays within its bounds.

The property test plays random conversations into one scope: growing, edited, truncated,
interleaved, resent as new dicts or as the same dicts mutated in place, with values Python calls
equal but JSON does not (1, 1.0, True; dicts in another key order). The last test plays a tool
loop built from the recorded DeepSeek replies through real `litellm.acompletion` twice, with and
without the cache, and compares what reached the local server.
"""

from __future__ import annotations

import copy
import gc
import json
import uuid
from collections.abc import Sequence
from importlib import resources
from typing import Any

import litellm
import pytest
from conftest import register
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core import identity
from litellm_reasoning.core.extract import carries_nothing
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import Rendered, assistant_indices, own_reasonings, render
from litellm_reasoning.core.turns import carries_turn, current_turn_start
from litellm_reasoning.memo import prefix_cache
from litellm_reasoning.memo.continuation import longest_continued
from litellm_reasoning.memo.prefix_cache import History, PrefixCache, _equal_prefix
from litellm_reasoning.testing.upstream import Reply, Upstream
from litellm_reasoning.wire import dialect_names, get_dialect

SCOPE = "ns=test"

# ------------------------------------------------------------------ random histories

equal_but_not_same = st.sampled_from([1, 1.0, True, 0, 0.0, False, None, "1"])
"""Values `==` mixes up (1 == 1.0 == True) while their JSON differs."""
text = st.sampled_from(["", "a", "b", "ok", "call_1", "call_2", "x" * 40])
part = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("text"), "text": text}, optional={"turn": st.just(False)}
    ),
    st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": text, "signature": st.sampled_from(["s1", "s2"])}
    ),
    st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": st.just("d1")}),
    st.fixed_dictionaries(
        {
            "type": st.just("image_url"),
            "image_url": st.just({"url": "u"}),
            "detail": equal_but_not_same,
        }
    ),
    st.dictionaries(st.sampled_from(["type", "a", "b"]), equal_but_not_same, max_size=3),
    text,
)
tool_call = st.fixed_dictionaries(
    {
        "id": st.one_of(
            st.sampled_from(["call_1", "call_2", "call_3__thought__c2ln"]), equal_but_not_same
        ),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.sampled_from(["read", "run"]), "arguments": st.just("{}")},
            # stray `turn` and provider extras where a tool call can carry them
            optional={
                "turn": st.just(True),
                "provider_specific_fields": st.just({"thought_signature": "c2ln"}),
            },
        ),
    },
    optional={
        "provider_specific_fields": st.just({"thought_signature": "c2ln"}),
        "turn": st.just(False),
    },
)
message = st.fixed_dictionaries(
    {
        "role": st.one_of(
            st.sampled_from(["user", "assistant", "tool", "system"]), equal_but_not_same
        )
    },
    optional={
        "content": st.one_of(st.none(), text, st.lists(part, max_size=3), equal_but_not_same),
        "tool_calls": st.one_of(st.lists(tool_call, max_size=2), equal_but_not_same),
        "tool_call_id": st.one_of(text, equal_but_not_same),
        "reasoning_content": st.one_of(text, equal_but_not_same),
        "thinking_blocks": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("thinking"), "thinking": text, "signature": st.just("s1")}
            ),
            max_size=1,
        ),
        "reasoning_details": st.lists(
            st.fixed_dictionaries({"type": st.just("reasoning.text"), "text": text}), max_size=1
        ),
        "turn": st.sampled_from([True, False, 0, "false"]),
    },
)
assistant = st.fixed_dictionaries(
    {"role": st.just("assistant")},
    optional={
        "content": st.one_of(text, st.lists(part, max_size=2)),
        "tool_calls": st.lists(tool_call, min_size=1, max_size=2),
    },
)
messages_strategy = st.lists(st.one_of(message, assistant), max_size=8)

step = st.one_of(
    st.tuples(st.just("append"), messages_strategy),
    st.tuples(st.just("edit"), st.integers(0, 20), st.one_of(message, assistant)),
    st.tuples(st.just("retype"), st.integers(0, 20), equal_but_not_same),
    st.tuples(st.just("reorder"), st.integers(0, 20)),
    st.tuples(st.just("truncate"), st.integers(0, 20)),
    st.tuples(st.just("mutate_in_place"), st.integers(0, 20), text),
    st.tuples(st.just("switch"), messages_strategy),
    st.tuples(st.just("subclass"), st.integers(0, 20)),
)


class _MessageDict(dict):  # type: ignore[type-arg]
    """A message as a dict of another type (an SDK's own mapping class)."""


def _apply(history: list[Any], change: tuple[Any, ...]) -> list[Any]:
    """The next request's history; new dicts except for `mutate_in_place` (the client reuses
    and changes its own dicts, as an SDK caller may)."""
    kind = change[0]
    if kind == "mutate_in_place":
        if history:
            target = history[change[1] % len(history)]
            if isinstance(target, dict):
                target["content"] = change[2]
        return history
    history = copy.deepcopy(history)
    if kind in ("append", "switch"):
        base = [] if kind == "switch" else history
        return base + copy.deepcopy(change[1])
    if not history:
        return history
    index = change[1] % len(history)
    if kind == "edit":
        history[index] = copy.deepcopy(change[2])
    elif kind == "retype":
        # A value equal under `==` but not in JSON, where identity reads it.
        target = history[index]
        calls = target.get("tool_calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], dict):
            calls[0]["id"] = change[2]
        elif isinstance(target.get("content"), list) and target["content"]:
            first = target["content"][0]
            if isinstance(first, dict):
                first[next(iter(first), "a")] = change[2]
        else:
            target["tool_call_id"] = change[2]
    elif kind == "reorder":
        # The same dicts, keys in reverse order (equal under `==`, not in JSON).
        def reverse(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: reverse(value[k]) for k in reversed(list(value))}
            if isinstance(value, list):
                return [reverse(v) for v in value]
            return value

        history[index] = reverse(history[index])
    elif kind == "truncate":
        history = history[:index]
    elif kind == "subclass":
        history[index] = _MessageDict(history[index])
    return history


def _records(messages: list[Any], seed: int) -> dict[int, Reasoning]:
    """Stored reasoning for some assistant messages: the same objects for the same index and
    seed, so the recipes of earlier requests apply; a new seed gives equal-valued new ones."""
    out: dict[int, Reasoning] = {}
    for index in assistant_indices(messages):
        if (index + seed) % 3 == 0:
            continue
        parts: tuple[ReasoningPart, ...] = (ReasoningPart(text=f"r{index}"),)
        if index % 2:
            parts = (ReasoningPart(text=f"r{index}", signature="sig"),)
        out[index] = Reasoning(parts=parts, provider="anthropic" if index % 4 == 1 else None)
    return out


def _dump(rendered: Rendered) -> str:
    """Everything render decided, in wire form: key order counts."""
    return json.dumps(
        {
            "messages": rendered.messages,
            "lists": [
                rendered.kept,
                rendered.restored,
                rendered.stripped,
                rendered.missing,
                rendered.dropped,
            ],
        },
        default=repr,
    )


def _check(
    cache: PrefixCache,
    messages: list[Any],
    stored: dict[int, Reasoning],
    target: tuple[str, TurnPolicy],
) -> History:
    before = copy.deepcopy(messages)
    history = cache.walk(SCOPE, messages)
    assert history.digests == identity.prefix_digests(messages)
    assert history.digest == identity.conversation_digest(messages)
    assert history.owns == own_reasonings(messages)
    assert history.assistant == assistant_indices(messages)
    assert history.flagged == [
        i for i, m in enumerate(messages) if isinstance(m, dict) and carries_turn(m)
    ]
    # where the walk says user messages stand is where the turn rule finds its start
    assert current_turn_start(messages, (history.users,)) == current_turn_start(messages)
    for index in history.assistant:
        expected = identity.key_at(SCOPE, messages, index)
        assert history.key(index) == expected
    # what the walk knows of an assistant message's fields is true (render trusts it)
    assert len(history.bare) == len(messages)
    assert all(carries_nothing(messages[i]) for i, bare in enumerate(history.bare) if bare)
    dialect, policy = get_dialect(target[0]), target[1]
    plain = render(messages, dialect, policy, stored)
    memo = render_walked(history, messages, dialect, policy, stored)
    assert _dump(memo) == _dump(plain)
    assert messages == before  # never mutated
    return history


def render_walked(
    history: History,
    messages: list[Any],
    dialect: Any,
    policy: TurnPolicy,
    stored: dict[int, Reasoning],
    *,
    native: bool = True,
) -> Rendered:
    """`render` as the engine runs it on a walked history: with what the walk noted, the
    history's recipes (read, and filled in) and, where it is built and `native`, the
    accelerator's loop for the recipes that hold as they are."""
    return render(
        messages,
        dialect,
        policy,
        stored,
        history.owns,
        assistant=history.assistant,
        flagged=history.flagged,
        recipes=history.recipes,
        bare=history.bare,
        replay=prefix_cache.REPLAY if native else None,
    )


targets = st.tuples(st.sampled_from(dialect_names()), st.sampled_from(list(TurnPolicy)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=messages_strategy,
    steps=st.lists(st.one_of(step, st.tuples(st.just("target"), targets)), max_size=8),
    seed=st.integers(0, 2),
    target=targets,
)
# Found by the search: a message whose provider dicts come back in another key order (equal as
# values) was sent in the order of the first request's copy.
@example(
    start=[
        {"role": "user"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_details": [{"type": "reasoning.text", "text": ""}],
        },
    ],
    steps=[("target", ("minimax", TurnPolicy.CURRENT_TURN)), ("reorder", 1)],
    seed=0,
    target=("anthropic", TurnPolicy.CURRENT_TURN),
)
def test_cached_equals_uncached_on_random_histories(
    start: list[Any], steps: list[tuple[Any, ...]], seed: int, target: tuple[str, TurnPolicy]
) -> None:
    cache = PrefixCache()
    history = copy.deepcopy(start)
    records: dict[int, Reasoning] = _records(history, seed)
    for number, change in enumerate([("append", []), *steps]):
        if change[0] == "target":  # a fallback to another deployment
            target = change[1]
        else:
            history = _apply(history, change)
        if number % 3 == 2:
            records = _records(history, seed + number)  # new objects, equal values
        stored = {i: r for i, r in records.items() if i < len(history)}
        stored.update({i: r for i, r in _records(history, seed).items() if i not in records})
        records = stored
        cache.remember(_check(cache, history, stored, target))


def _loop(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for i in range(n):
        out.append({"role": "user", "content": f"u{i}"})
        out.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"t{i}"})
        out.append({"role": "assistant", "content": f"a{i}"})
    return out


def test_a_continued_conversation_is_hashed_once() -> None:
    """The next request of a conversation reuses everything before its new messages."""
    cache = PrefixCache()
    first = _loop(20)
    cache.remember(cache.walk(SCOPE, first))
    second = copy.deepcopy(first) + _loop(21)[-4:]
    history = cache.walk(SCOPE, second)
    assert history.reused == len(first)
    assert history.digests == identity.prefix_digests(second)
    # another scope never sees this scope's conversations
    assert cache.walk("ns=other", copy.deepcopy(second)).reused == 0


def test_another_conversation_sharing_only_its_head_is_walked_as_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many conversations of one key share their system prompt: a request of another one
    matches a remembered history only there, and its messages are walked as new messages are
    (the batched fast path), not one by one beside a conversation they do not repeat.
    Counted: the general canonical encoding, which the one-by-one path took for every message
    (measured in a 4-worker proxy: 21 ms of every 1 000-message request)."""
    cache = PrefixCache()
    first = _loop(30)
    cache.remember(cache.walk(SCOPE, first))
    other = copy.deepcopy(first)
    for message in other[1:]:
        if message.get("content"):
            message["content"] += " (another conversation)"
    slow: list[Any] = []
    general = identity.canonical_decided
    monkeypatch.setattr(
        identity, "canonical_decided", lambda message: slow.append(message) or general(message)
    )
    history = cache.walk(SCOPE, other)
    assert history.reused == 1  # the system prompt
    assert history.digests == identity.prefix_digests(other)
    assert history.shapes == [identity.canonical(m) for m in other]
    assert slow == []
    for index in history.assistant:
        assert history.key(index) == identity.key_at(SCOPE, other, index)
    # an edit of an earlier turn (everything else equal) still reuses the messages beside it
    edited = copy.deepcopy(first)
    edited[4]["content"] = "a0, edited"
    assert cache.walk(SCOPE, edited).shapes == [identity.canonical(m) for m in edited]
    assert slow == [edited[4]]  # the edited message alone, walked beside the others


def _walk_edited(
    index: int, content: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], History]:
    """A remembered loop, a copy with message `index`'s content edited, and the copy's walk."""
    cache = PrefixCache()
    first = _loop(5)
    cache.remember(cache.walk(SCOPE, first))
    second = copy.deepcopy(first)
    second[index]["content"] = content
    return first, second, cache.walk(SCOPE, second)


def test_a_changed_system_prompt_changes_the_tool_call_keys() -> None:
    """An edit at the start breaks every chained digest after it; equal messages keep their
    canonical bytes, but no key of the earlier system prompt is reused: the system prompt is
    part of a tool-call key (two customers of one key are two conversations)."""
    first, second, history = _walk_edited(0, "s, refreshed")
    assert history.reused == 0
    assert history.shapes[1:] == [identity.canonical(m) for m in first[1:]]
    assert history.digests == identity.prefix_digests(second)
    for index in history.assistant:
        assert history.key(index) == identity.key_at(SCOPE, second, index)
        assert history.key(index) != identity.key_at(SCOPE, first, index)


def test_an_edit_of_an_earlier_turn_keeps_the_later_tool_call_keys() -> None:
    """An edited earlier answer re-chains the digests after it; a tool-call message of a later
    turn keeps its key (its system prompt, user message and place are unchanged)."""
    first, second, history = _walk_edited(4, "a0, edited")
    assert history.reused == 4
    assert history.digests == identity.prefix_digests(second)
    for index in history.assistant:
        assert history.key(index) == identity.key_at(SCOPE, second, index)
        if index > 4 and second[index].get("tool_calls"):
            assert history.key(index) == identity.key_at(SCOPE, first, index)


def test_dicts_mutated_in_place_after_the_request_are_hashed_again() -> None:
    """The cache compares against its own copies: a client changing the dicts it sent before
    and sending them again gets the digests of what it sends now."""
    cache = PrefixCache()
    history = _loop(3)
    cache.remember(cache.walk(SCOPE, history))
    history[2]["tool_calls"][0]["id"] = "call_changed"
    walked = cache.walk(SCOPE, history)
    assert walked.reused == 2
    assert walked.digests == identity.prefix_digests(history)
    assert walked.key(2) == identity.key_at(SCOPE, history, 2)


@pytest.mark.parametrize("other", [1.0, True])
def test_values_equal_in_python_but_not_in_json_are_told_apart(other: Any) -> None:
    """`1 == 1.0 == True`, but canonical JSON differs: such a message is compared by its bytes."""
    cache = PrefixCache()
    part = {"type": "image_url", "image_url": {"url": "u"}, "detail": 1}
    first = [{"role": "user", "content": [part]}, {"role": "assistant", "content": "a"}]
    cache.remember(cache.walk(SCOPE, first))
    second = copy.deepcopy(first)
    second[0]["content"][0]["detail"] = other
    assert second == first
    walked = cache.walk(SCOPE, second)
    assert walked.digests == identity.prefix_digests(second) != identity.prefix_digests(first)


def test_bounds() -> None:
    """Per scope a few conversations; in all, about `max_bytes`; a superseded request is
    dropped when the one continuing it is remembered."""
    cache = PrefixCache(max_bytes=200_000, per_scope=3)
    history = _loop(3)
    for _ in range(5):
        cache.remember(cache.walk(SCOPE, history))
        history = copy.deepcopy(history) + _loop(1)
    assert len(cache) == 1
    for n in range(10):
        cache.remember(cache.walk(SCOPE, [{"role": "user", "content": f"q{n}"}]))
    assert len(cache) == 3
    for n in range(400):
        cache.remember(cache.walk(f"ns={n}", _loop(5)))
    assert 0 < cache.size <= 200_000
    nothing = PrefixCache(max_bytes=0)
    nothing.remember(nothing.walk(SCOPE, history))
    assert len(nothing) == 0 and nothing.size == 0


def test_records_decoded_again_are_decided_for_once() -> None:
    """Records equal to the ones a history's recipes hold but other objects (a shared store's
    bytes decoded once more after the decode cache let them go): decided for once, so the
    recipes hold these very records and each carries its decision (the next request takes them
    by identity, in C), not compared by value on every request."""
    messages = _loop(10)
    dialect = get_dialect("openai_chat_required")

    def records() -> dict[int, Reasoning]:
        return {i: Reasoning.from_text(f"r{i}") for i in assistant_indices(messages)}

    cache = PrefixCache()
    rendered = []
    for stored in (records(), records()):
        history = cache.walk(SCOPE, copy.deepcopy(messages))
        rendered.append(
            render_walked(history, history.messages, dialect, TurnPolicy.ALL_TURNS, stored)
        )
        cache.remember(history)
    assert history.reused == len(messages)
    assert rendered[0] == rendered[1] and len(rendered[1].restored) == len(stored)
    assert all(history.recipes[i].from_store is stored[i] for i in stored)  # type: ignore[union-attr]
    assert all(record._plain is not None for record in stored.values())
    # What a record keeps leaves the collector's lists (a worker holds tens of thousands of
    # records off them, which every full collection would otherwise look at again).
    for _ in range(3):
        gc.collect()
    assert not any(gc.is_tracked(record._plain) for record in stored.values())


def test_a_walked_historys_lists_are_off_the_collector_with_the_accelerator() -> None:
    """Every list of a walked history's facts (each list field but the caller's own messages)
    leaves the garbage collector's lists as the walk makes it, cold or reusing an earlier
    history, and stays off while the walk extends it and the history is remembered (young
    collections during a request would otherwise walk ~10,000 references of them at 1,000
    messages); without the accelerator nothing changes. What is rendered is unchanged
    (`test_cached_equals_uncached_on_random_histories`)."""
    messages = _loop(10)
    dialect = get_dialect("openai_chat_required")
    stored = {i: Reasoning.from_text(f"r{i}") for i in assistant_indices(messages)}
    cache = PrefixCache()
    cold = cache.walk(SCOPE, copy.deepcopy(messages))
    render_walked(cold, cold.messages, dialect, TurnPolicy.ALL_TURNS, stored)
    cache.remember(cold)
    longer = [*messages, {"role": "user", "content": "one more"}]
    reused = cache.walk(SCOPE, copy.deepcopy(longer))
    assert reused.reused == len(messages) and len(reused.shapes) == len(longer)
    for history in (cold, reused):
        lists = {
            name: value
            for name in History.__slots__
            if isinstance(value := getattr(history, name), list) and name != "messages"
        }
        assert len(lists) == 15
        assert sorted(map(id, history.lists())) == sorted(map(id, lists.values()))
        tracked = {name: gc.is_tracked(value) for name, value in lists.items()}
        assert tracked == dict.fromkeys(lists, prefix_cache.NATIVE is None)
    assert gc.is_tracked(reused.messages)  # the caller's list is left as it is


def test_restored_records_the_recipes_hold_count_against_the_cap() -> None:
    """A remembered history's recipes hold the records restored into it: their bytes count
    against `max_bytes` (held-out run: 429 MB of restored records held while the cache counted
    0.4 MB against its 64 MiB)."""
    messages = _loop(10)

    def remembered(cache: PrefixCache) -> PrefixCache:
        # Records never rendered before: a recipe of the history's own holds each (one decided
        # for before needs none: `test_records_decided_before_are_held_by_no_recipe`).
        stored = {
            index: Reasoning(parts=(ReasoningPart(text="x" * 100_000),), provider="deepseek")
            for index in assistant_indices(messages)
        }
        history = cache.walk(SCOPE, messages)
        render_walked(history, messages, get_dialect("openai_chat"), TurnPolicy.ALL_TURNS, stored)
        cache.remember(history)
        return cache

    held = remembered(PrefixCache())
    assert len(held) == 1 and held.size >= 10 * 100_000
    assert len(remembered(PrefixCache(max_bytes=500_000))) == 0  # over the cap: not kept
    once = held.size
    for _ in range(3):  # a request repeating it supersedes it: what it counted is given back
        remembered(held)
    assert held.size == once and len(held) == 1


def test_many_short_conversations_are_capped_by_count() -> None:
    """Many tenants with one short conversation each (a gateway's end users): the count cap
    holds even while the byte estimate is far below `max_bytes`, oldest scopes out first."""
    cache = PrefixCache(max_histories=50)
    for n in range(500):
        cache.remember(cache.walk(f"user={n}", [{"role": "user", "content": f"q{n}"}]))
    assert len(cache) == 50
    assert cache.size < cache.max_bytes
    remembered = cache.walk("user=499", [{"role": "user", "content": "q499"}, {"role": "user"}])
    forgotten = cache.walk("user=0", [{"role": "user", "content": "q0"}, {"role": "user"}])
    assert remembered.reused == 1 and forgotten.reused == 0


def _agent(seed: int, steps: int) -> list[dict[str, Any]]:
    """One agent's tool loop of `steps` calls; every agent shares the system prompt and its
    first user message (one product's agents on one key)."""
    return [
        {**message, "content": f"{message['content']}@{seed}"}
        if message["role"] in ("tool", "assistant") and message.get("content")
        else message
        for message in _loop(steps)
    ]


def test_every_agent_of_a_busy_key_continues_its_own_conversation() -> None:
    """64 agents on one key, their requests interleaved (a proxy worker behind a busy key):
    each request reuses its own agent's previous one (with a few conversations per scope
    kept, every one of these requests was walked cold)."""
    cache = PrefixCache()
    agents = range(64)
    for agent in agents:
        cache.remember(cache.walk(SCOPE, _agent(agent, 3)))
    for steps in (4, 5):
        for agent in agents:
            messages = _agent(agent, steps)
            history = cache.walk(SCOPE, messages)
            assert history.reused == len(_agent(agent, steps - 1)), agent
            assert history.digests == identity.prefix_digests(messages)
            cache.remember(history)
    assert len(cache) == 64


def test_the_longest_conversation_a_request_continues_is_reused() -> None:
    """Two remembered requests a new one both continues (a conversation's earlier request
    remembered after a later one, as a retry does): the longer one is reused."""
    cache = PrefixCache()
    longer, shorter = _loop(6), _loop(3)
    cache.remember(cache.walk(SCOPE, longer))
    cache.remember(cache.walk(SCOPE, copy.deepcopy(shorter)))
    assert cache.walk(SCOPE, _loop(7)).reused == len(longer)


def test_a_request_repeating_two_remembered_ones_is_compared_whole_once() -> None:
    """A retried request is remembered beside the shorter one before it: the next request
    continues both, and its history is compared with one of them, the longer, not both."""
    compared: list[int] = []

    def counted(items: Sequence[Any], held: Sequence[Any]) -> int:
        compared.append(len(held))
        return _equal_prefix(items, list(held))

    shorter, longer = _loop(3), _loop(6)
    found, reused = longest_continued(_loop(7), [shorter, longer], lambda held: held, counted)
    assert found is longer and reused == len(longer)
    assert compared == [len(longer)]


def test_over_a_cap_the_oldest_conversation_goes_whatever_its_scope() -> None:
    """A busy key does not push another key's newer conversation out before its own older
    ones."""
    cache = PrefixCache(max_histories=3)
    busy, quiet = "ns=busy", "ns=quiet"
    cache.remember(cache.walk(busy, _agent(1, 2)))
    cache.remember(cache.walk(busy, _agent(2, 2)))
    cache.remember(cache.walk(quiet, _agent(3, 2)))
    cache.remember(cache.walk(busy, _agent(4, 2)))  # over the cap: agent 1's goes
    assert len(cache) == 3
    assert cache.walk(quiet, _agent(3, 3)).reused == len(_agent(3, 2))
    assert cache.walk(busy, _agent(2, 3)).reused == len(_agent(2, 2))
    assert cache.walk(busy, _agent(1, 3)).reused < len(_agent(1, 2))


# ------------------------------------------------------------------ through real LiteLLM


def _recorded_replies() -> list[dict[str, Any]]:
    """The three replies of the recorded DeepSeek tool loop (two tool calls, an answer)."""
    data = json.loads(
        (resources.files("litellm_reasoning") / "data" / "deepseek_tool_loop.json").read_text()
    )
    return [json.loads(raw)["choices"][0]["message"] for raw in data["responses"]]


async def _play(upstream: Upstream, callback: ReasoningCallback, model: str) -> list[Any]:
    """The recorded tool loop twice over, from a client that drops reasoning, with an edited
    system prompt and a dict reused and changed in place; the bodies the server received."""
    register(callback)
    replies = _recorded_replies()
    upstream.script(model, *[Reply(message=m) for m in replies * 2])
    messages: list[Any] = [
        {"role": "system", "content": "You roll dice."},
        {"role": "user", "content": "My guess is 4."},
    ]
    for number, reply in enumerate(replies * 2):
        if number == 3:
            messages[0] = {"role": "system", "content": "You roll dice. Be brief."}
            messages.append({"role": "user", "content": "Again, guess 2."})
        if number == 4:
            messages[1]["content"] = "My guess is 5."  # the caller's own dict, changed in place
        response = await litellm.acompletion(
            model=f"deepseek/{model}",
            messages=messages,
            api_base=upstream.base_url,
            api_key="k",
            tools=[{"type": "function", "function": {"name": "roll_dice", "parameters": {}}}],
        )
        sent = response.choices[0].message
        assert sent.content == reply.get("content")
        dropped: dict[str, Any] = {"role": "assistant", "content": sent.content}
        if sent.tool_calls:
            dropped["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in sent.tool_calls
            ]
        messages = [*messages, dropped]
        for call in dropped.get("tool_calls") or ():
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "3"})
    litellm.logging_callback_manager._reset_all_callbacks()
    return [body["messages"] for body in upstream.bodies(model)]


async def test_wire_is_the_same_with_and_without_the_cache(upstream: Upstream) -> None:
    cached = ReasoningCallback()
    uncached = ReasoningCallback()
    uncached.prefix_cache = PrefixCache(max_bytes=0)  # remembers nothing
    model = f"prefix-{uuid.uuid4().hex[:8]}"
    with_cache = await _play(upstream, cached, model + "-a")
    without = await _play(upstream, uncached, model + "-b")
    assert json.dumps(with_cache) == json.dumps(without)
    assert len(with_cache) == 6
    # the replies' reasoning went back on the wire (restored from the store) ...
    recorded = [m.get("reasoning_content") for m in _recorded_replies()]
    assert with_cache[1][2]["reasoning_content"] == recorded[0]
    assert cached.stats["restored"] == uncached.stats["restored"] > 0
    assert cached.stats["errors"] == uncached.stats["errors"] == 0
    # ... and the cached run reused earlier requests' work
    assert len(cached.prefix_cache) > 0 and len(uncached.prefix_cache) == 0


reasoning_values = st.one_of(
    st.none(),
    st.builds(
        lambda texts: Reasoning(parts=tuple(ReasoningPart(text=t) for t in texts)),
        st.lists(text, max_size=2),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    message=st.one_of(message, assistant),
    reasoning=reasoning_values,
    name=st.sampled_from(dialect_names()),
)
def test_plain_fields_are_what_render_appends(
    message: dict[str, Any], reasoning: Reasoning | None, name: str
) -> None:
    """A dialect's `plain_fields` (the hot path of a client that drops reasoning) appends to a
    message carrying nothing exactly what its `render` would, in the same key order."""
    dialect = get_dialect(name)
    fields = dialect.plain_fields(reasoning)
    if fields is None or not carries_nothing(message):
        return
    rendered = dialect.render(message, reasoning)
    merged = {**message, **fields}
    assert list(merged.items()) == list(rendered.items())


def test_text_dialects_take_the_plain_path() -> None:
    """The dialects of a client that drops reasoning on DeepSeek, Kimi, Qwen, vLLM and Ollama
    say what they append (the test above is not vacuous)."""
    record = Reasoning(parts=(ReasoningPart(text="why"),))
    for name in ("openai_chat", "openai_chat_required", "openai_chat_reasoning", "ollama_chat"):
        assert get_dialect(name).plain_fields(record), name
    assert get_dialect("openai_chat_required").plain_fields(None) == {"reasoning_content": ""}


_PLANNED_MODELS = (
    "deepseek/deepseek-v4-flash",  # every turn looked up, refused without (openai_chat_required)
    "anthropic/claude-sonnet-4-5",  # the current turn, block order kept (anthropic)
    "openrouter/openai/gpt-5",  # another dialect and policy
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["call", "call", "user", "edit", "cut", "model"]),
            st.integers(0, 1_000),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_continued_plan_is_the_plan_made_anew(steps: list[tuple[str, int]]) -> None:
    """A request continuing a remembered one extends its plan (`prefix_cache.Planned`): which
    messages are looked up, their keys, the digest before each, whether the target refuses
    without them: all as a process that never saw the conversation plans them, whatever
    came between (a tool call, a new turn, an edit, a cut, another model)."""
    remembering = ReasoningCallback().engine
    messages = _loop(2)
    model = _PLANNED_MODELS[0]
    for step, number in steps:
        if step == "call":
            messages += _loop(number % 5 + 3)[-3:-1]  # an assistant tool call and its result
            messages[-2] = copy.deepcopy(messages[-2])
            messages[-2]["tool_calls"][0]["id"] = f"call_{len(messages)}_{number}"
            messages[-1] = {**messages[-1], "tool_call_id": f"call_{len(messages)}_{number}"}
        elif step == "user":
            messages.append({"role": "user", "content": f"next {number}"})
        elif step == "edit":
            at = number % len(messages)
            messages[at] = {**messages[at], "content": f"edited {number}"}
        elif step == "cut":
            messages = messages[: max(1, number % len(messages))]
        else:
            model = _PLANNED_MODELS[number % len(_PLANNED_MODELS)]
        kwargs = {"model": model, "api_key": "k", "tools": [{"type": "function"}]}
        request = remembering.prepare(remembering.facts_of(kwargs), copy.deepcopy(messages))
        assert request.history is not None
        remembering.histories.remember(request.history)
        anew = ReasoningCallback().engine
        expected = anew.prepare(anew.facts_of(kwargs), copy.deepcopy(messages))
        assert request.keys == expected.keys
        assert list(request.keys) == list(expected.keys)  # the plan's order
        assert request.before == expected.before
        assert request.required == expected.required
        assert request.turn_start == expected.turn_start
