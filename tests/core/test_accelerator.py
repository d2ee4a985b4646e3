"""The native accelerator (`litellm_reasoning._accel`, optional) computes exactly what the pure
Python path computes: canonical bytes, chained digests, store keys and what the walk notes of
each message (users, assistant messages, whose reasoning is read, `turn`, where equality does
not decide), for any message, with the pure path as the contract. Stored keys depend on it
(tests/core/test_golden_keys.py pins them; the other tests run the accelerated path where it
is built, and `scripts/test.sh` runs one LiteLLM line without it)."""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
import itertools
import json
import os
import struct
import subprocess
import sys
import weakref
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_identity_canonical import message as any_message
from test_prefix_cache import message as prefix_messages
from test_prefix_cache import render_walked

from litellm_reasoning import accelerator
from litellm_reasoning.core import identity, turns
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.core.render import How, Outcome, Rendered
from litellm_reasoning.memo import prefix_cache
from litellm_reasoning.memo.prefix_cache import History, PrefixCache
from litellm_reasoning.wire import get_dialect

pytestmark = pytest.mark.once
needs_native = pytest.mark.skipif(
    accelerator.NATIVE is None, reason="the accelerator is not built here"
)

SCOPE = "ns=acme|user=bob"


def test_ci_builds_the_accelerator() -> None:
    """CI has a C compiler: these tests, and every test taking the accelerated path, really
    ran it (a silent fall back to pure Python would leave the accelerator untested)."""
    if os.environ.get("CI") and not os.environ.get(accelerator.PURE_PYTHON_ENV):
        assert accelerator.NATIVE is not None


def test_the_environment_switch_selects_the_pure_path() -> None:
    probe = "from litellm_reasoning import accelerator; print(accelerator.NATIVE is None)"
    env = {**os.environ, accelerator.PURE_PYTHON_ENV: "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@needs_native
@pytest.mark.parametrize("size", [16, 20, 64])
def test_blake2b_is_hashlibs(size: int) -> None:
    assert accelerator.NATIVE is not None
    for length in [*range(300), 1023, 1024, 1025, 100_000]:
        data = bytes((i * 7 + length) % 256 for i in range(length))
        assert accelerator.NATIVE.digests([data], size, b"") == [
            hashlib.blake2b(data, digest_size=size).digest()
        ], length


@needs_native
def test_record_digests_are_hashlibs() -> None:
    """Many datas in one call, with a personalisation (the C BLAKE2b the walk chains with)."""
    assert accelerator.NATIVE is not None
    datas = [bytes(range(n % 256)) * (1 + n // 256) for n in range(0, 700, 7)]
    for person in (b"", b"lr-decoded", b"sixteen-bytes-16"):
        expected = [hashlib.blake2b(d, digest_size=16, person=person).digest() for d in datas]
        assert accelerator.NATIVE.digests(datas, 16, person) == expected


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same_shape(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (`True == 1` would hide a changed type)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(map(_same_shape, a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(map(_same_shape, a.values(), b.values()))
    return bool(a == b)


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(), JSON_VALUES, max_size=5), max_size=6))
def test_copy_is_the_marshal_round_trip(messages: list[Any]) -> None:
    """The prefix cache's private copies: what `marshal` would give back, in the same key
    order, with new containers (the next request cannot change them) and shared leaves."""
    assert accelerator.NATIVE is not None
    import marshal

    copied = accelerator.NATIVE.copy(messages)
    assert copied is not None
    assert _same_shape(copied, marshal.loads(marshal.dumps(messages)))
    containers = []
    stack: list[Any] = [(copied, messages)]
    while stack:
        made, original = stack.pop()
        if type(original) in (list, dict):
            containers.append((made, original))
            pairs = (
                zip(made, original, strict=True)
                if type(original) is list
                else zip(made.values(), original.values(), strict=True)
            )
            stack.extend(pairs)
    assert all(made is not original for made, original in containers)
    # a tree over immutable leaves: nothing for the garbage collector to look at
    assert not any(gc.is_tracked(made) for made, _ in containers)


@needs_native
def test_copy_refuses_what_is_not_plain_data() -> None:
    """None (the caller's `marshal` round trip decides) for anything but dicts, lists and
    immutable leaves: a tuple, a set, a subclass, a non-leaf key, or nesting past 200."""
    assert accelerator.NATIVE is not None

    class Sub(dict):  # type: ignore[type-arg]
        pass

    deep: list[Any] = []
    for _ in range(250):
        deep = [deep]
    for value in ((1, 2), {1, 2}, Sub(), {(1,): 2}, deep, object()):
        assert accelerator.NATIVE.copy([{"content": value}]) is None, value
    assert accelerator.NATIVE.copy([{1: b"x", "a": [None, True, 1.5]}]) == [
        {1: b"x", "a": [None, True, 1.5]}
    ]


class _Text(str):
    """A str of another type (equal to its value, not the same data)."""


def _changed(messages: list[Any], data: st.DataObject, hows: list[str]) -> list[Any]:
    """A copy of `messages` with, maybe, one message changed in one of the ways `hows` names:
    a value, its keys' order, an int made a bool or a float, a zero's sign, its strings made
    `_Text`, a key dropped or added."""
    changed = copy.deepcopy(messages)
    if changed and data.draw(st.booleans(), label="change one message"):
        at = data.draw(st.integers(0, len(changed) - 1), label="at")
        how = data.draw(st.sampled_from(hows))
        target = changed[at]
        if how == "value":
            target[data.draw(st.text(max_size=3), label="key")] = data.draw(JSON_VALUES)
        elif how == "reorder":
            changed[at] = _reordered(target)
        elif how == "bool":
            changed[at] = {k: (True if v == 1 else v) for k, v in target.items()}
        elif how == "float":
            changed[at] = {k: (float(v) if type(v) is int else v) for k, v in target.items()}
        elif how == "zero":
            changed[at] = {k: (-v if type(v) is float and v == 0 else v) for k, v in target.items()}
        elif how == "sub":
            changed[at] = {k: (_Text(v) if type(v) is str else v) for k, v in target.items()}
        elif how == "drop" and target:
            del target[next(iter(target))]
        elif how == "add":
            target["added"] = data.draw(JSON_VALUES)
    return changed


def _python_equal_prefix(messages: list[Any], copies: list[Any], limit: int) -> int:
    """What `==` says: the index of the first unequal pair, else `limit`."""
    return next((i for i in range(limit) if messages[i] != copies[i]), limit)


def _reordered(value: Any) -> Any:
    """`value` with every dict's keys in reverse order (equal, walked otherwise)."""
    if type(value) is list:
        return [_reordered(v) for v in value]
    if type(value) is dict:
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    return value


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=4), max_size=6),
    st.data(),
)
def test_equal_prefix_is_what_equality_says(messages: list[Any], data: st.DataObject) -> None:
    """The memo's comparison of a request with the copies of the earlier one (`_equal_prefix`):
    side by side in C, the answer `==` gives, whatever changed (a value, a type, a key order,
    a message added or dropped)."""
    native = accelerator.NATIVE
    assert native is not None
    copies = native.copy(messages)
    assert copies is not None
    changed = _changed(messages, data, ["value", "reorder", "bool", "float", "drop", "add"])
    limit = data.draw(st.integers(0, len(messages)), label="limit")
    assert native.equal_prefix(changed, copies, limit) == _python_equal_prefix(
        changed, copies, limit
    )
    assert native.equal_prefix(changed, copies, limit) == prefix_cache._equal_prefix(
        changed[:limit], copies
    )


def _same_data(a: Any, b: Any) -> bool:
    """The same plain data: the same types all the way down, a float bit for bit, dict keys in
    the same order (what `exact_prefix` promises; `b` is a copy)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    if type(a) is list:
        return len(a) == len(b) and all(map(_same_data, a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            _same_data(ka, kb) and _same_data(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    return type(a) in (str, int, bytes) and bool(a == b)


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.dictionaries(
            st.text(max_size=3), JSON_VALUES | st.floats() | st.binary(max_size=3), max_size=4
        ),
        max_size=6,
    ),
    st.data(),
)
def test_exact_prefix_is_the_same_plain_data(messages: list[Any], data: st.DataObject) -> None:
    """The block and item memo's comparison (`exact_prefix`): stricter than `==` (a bool for an
    int, a float for an int, -0.0 for 0.0, another key order, a str or dict subclass all
    differ), whatever changed."""
    native = accelerator.NATIVE
    assert native is not None
    copies = native.copy(messages)
    assert copies is not None
    changed = _changed(
        messages, data, ["value", "reorder", "bool", "float", "zero", "sub", "drop", "add"]
    )
    limit = data.draw(st.integers(0, len(messages)), label="limit")
    expected = next(
        (i for i in range(min(limit, len(changed))) if not _same_data(changed[i], copies[i])),
        min(limit, len(changed)),
    )
    assert native.exact_prefix(changed, copies, limit) == expected


class _Mapping(dict):  # type: ignore[type-arg]
    """A message as a dict of another type (Python decides for it)."""


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            prefix_messages,
            prefix_messages.map(_Mapping),
            st.fixed_dictionaries({"role": st.just("user")}).map(lambda m: {**m, "turn": False}),
            JSON_VALUES,
        ),
        max_size=8,
    )
)
@example(
    [
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "turn": 1}}]},
        {"role": "assistant", "tool_calls": [{"id": "c", "turn": True, "function": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "t", "turn": False}]},
        {"role": "user", "content": "plain"},
        _Mapping(role="user", turn=False),
    ]
)
def test_without_turn_is_the_turn_rules(items: list[Any]) -> None:
    """`accelerator.without_turn`: what `turns.without_turn` makes, each item that carries no
    `turn` the very object the client sent."""
    made = accelerator.without_turn(items)
    assert made == turns.without_turn(items)
    for item, out in zip(items, made, strict=True):
        if isinstance(item, dict):
            assert (out is item) == (not turns.carries_turn(item))
        else:
            assert out is item


@needs_native
def test_exact_prefix_tells_apart_what_equality_mixes_up() -> None:
    """Each value `==` calls equal to the copy's, and `exact_prefix` does not."""
    native = accelerator.NATIVE
    assert native is not None
    base = {"a": 1, "b": 0.0, "c": "x", "d": [True, None], "e": 10**30, "f": b"y"}
    copies = native.copy([base])
    assert copies is not None
    assert native.exact_prefix([copy.deepcopy(base)], copies, 1) == 1
    for changed in (
        {**base, "a": True},
        {**base, "a": 1.0},
        {**base, "b": -0.0},
        {**base, "b": 0},
        {**base, "c": _Text("x")},
        {**base, "d": [1, None]},
        {**base, "f": bytearray(b"y")},
        dict(reversed(list(base.items()))),
    ):
        assert changed == base
        assert native.exact_prefix([changed], copies, 1) == 0, changed


@needs_native
def test_equal_prefix_compares_what_is_not_plain_data_by_equality() -> None:
    """A str or dict subclass, a tuple, a value whose `==` says equal to anything: `==` decides
    for them; an `==` that raises reaches the caller (`_equal_prefix` then reuses nothing)."""
    native = accelerator.NATIVE
    assert native is not None

    class Text(str):
        pass

    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    class Raises:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing")

        __hash__ = object.__hash__

    copies = native.copy([{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}])
    assert copies is not None
    assert native.equal_prefix([{"role": Text("user"), "content": "hi"}], copies, 1) == 1
    assert native.equal_prefix([{"role": "user", "content": Anything()}], copies, 1) == 1
    assert native.equal_prefix([{"role": "user", "content": ("hi",)}], copies, 1) == 0
    assert native.equal_prefix([{"content": "hi", "role": "user"}], copies, 1) == 1
    assert native.equal_prefix([{"role": "user", "content": "hi"}, {}], copies, 2) == 1
    nan = float("nan")
    assert native.equal_prefix([{"x": [nan]}], native.copy([{"x": [nan]}]) or [], 1) == 1
    with pytest.raises(RuntimeError, match="no comparing"):
        native.equal_prefix([{"role": "user", "content": Raises()}], copies, 1)
    assert prefix_cache._equal_prefix([{"role": "user", "content": Raises()}], copies) == 0


def _walked(messages: list[Any], native: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Everything a cold walk of `messages` records but the memo's size estimates (see
    `test_a_real_conversation_walks_the_same`), and every message's key (or the exception both
    paths must raise alike)."""
    with monkeypatch.context() as patched:
        if not native:
            patched.setattr(prefix_cache, "NATIVE", None)
        try:
            history = PrefixCache().walk(SCOPE, messages)
            indices = [i for i, m in enumerate(messages) if type(m) is dict]
            keys = history.keys_for(indices)
        except Exception as exc:
            return type(exc).__name__
    fields = ("shapes", "digests", "users", "assistant", "flagged", "unsure", "detailed", "bare")
    return (
        {name: getattr(history, name) for name in fields},
        history.owns,
        history.copies,
        keys,
    )


def _sample_conversation(length: int) -> list[Any]:
    out: list[Any] = [{"role": "system", "content": "You are an agent. Use the tools."}]
    for i in range(length):
        out.append({"role": "user", "content": f'task {i} \u00e9\n"quoted" \\ \x01'})
        call = f"call_{i}__thought__c2ln" if i % 3 == 0 else f"functions.read:{i}"
        out.append(
            {
                "role": "assistant",
                "content": "" if i % 2 else [{"type": "text", "text": "\u00fcber \U0001f600"}],
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "read", "arguments": "{}"},
                    }
                ],
                **({"reasoning_content": "kept"} if i % 4 == 0 else {}),
            }
        )
        out.append({"role": "tool", "tool_call_id": call, "content": "x" * (i * 37 % 300)})
        out.append({"role": "assistant", "content": f"done {i}", "turn": i % 2 == 0})
    return out


@needs_native
def test_a_real_conversation_walks_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = _sample_conversation(60)
    native = _walked(messages, True, monkeypatch)
    assert not isinstance(native, str)
    assert native == _walked(messages, False, monkeypatch)
    # The memo's size estimates: marshal's bytes in Python; the accelerator writes none and
    # takes the canonical bytes for them (within a tenth here), the estimate growing alike.
    native_sizes = PrefixCache().walk(SCOPE, messages).sizes
    with monkeypatch.context() as patched:
        patched.setattr(prefix_cache, "NATIVE", None)
        pure_sizes = PrefixCache().walk(SCOPE, messages).sizes
    assert len(native_sizes) == len(pure_sizes) == len(messages)
    assert all(b > a for a, b in itertools.pairwise(native_sizes))
    assert 0.9 < native_sizes[-1] / pure_sizes[-1] < 1.1
    # and the keys are what `identity` makes of the messages alone (the golden keys' function)
    keys = native[-1]
    for index in (2, 3, 4, 5, 100, 240):
        assert keys[index] == identity.key_at(SCOPE, messages, index)


@needs_native
def test_shapes_it_leaves_to_python_are_still_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """An image part, a non-dict message, an int id and a lone surrogate in between: Python
    takes those messages (or raises as it does without the accelerator), the rest stay native."""
    messages = _sample_conversation(6)
    messages[3] = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}
    messages[6]["tool_calls"][0]["id"] = 7
    messages.insert(9, "not a message")
    assert _walked(messages, True, monkeypatch) == _walked(messages, False, monkeypatch)
    broken = copy.deepcopy(messages)
    broken[5]["content"] = "\ud800"
    assert _walked(broken, True, monkeypatch) == _walked(broken, False, monkeypatch)


@needs_native
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(max_size=3000), max_size=40),
    st.integers(min_value=0, max_value=45),
    st.lists(st.integers(min_value=0, max_value=10**12), max_size=2),
)
def test_size_estimates_are_pythons(shapes: list[bytes], start: int, earlier: list[int]) -> None:
    """The memo's size estimates of natively copied messages (`_spread_sizes` with no
    marshalled bytes): the accelerator's one call gives what Python's iterators give."""
    native: list[int] = list(earlier)
    prefix_cache._spread_sizes(native, shapes, start, -1)
    pure: list[int] = list(earlier)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(prefix_cache, "NATIVE", None)
        prefix_cache._spread_sizes(pure, shapes, start, -1)
    assert native == pure
    assert len(native) == len(earlier) + len(shapes[start:])


conversation = st.lists(st.one_of(any_message, st.just("odd")), max_size=10)


@needs_native
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation)
def test_any_conversation_walks_the_same(messages: list[Any]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _walked(messages, True, monkeypatch) == _walked(messages, False, monkeypatch)


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation, st.lists(st.one_of(any_message, st.just("odd")), max_size=4))
def test_a_continued_conversation_walks_the_same(messages: list[Any], more: list[Any]) -> None:
    """A remembered history, then new messages after it: the native walk starts mid-way from
    the remembered digest."""

    def run(native: bool) -> Any:
        with pytest.MonkeyPatch.context() as monkeypatch:
            if not native:
                monkeypatch.setattr(prefix_cache, "NATIVE", None)
            cache = PrefixCache()
            try:
                cache.remember(cache.walk(SCOPE, copy.deepcopy(messages)))
                history: History = cache.walk(SCOPE, copy.deepcopy(messages + more))
                keys = history.keys_for(
                    [i for i, m in enumerate(history.messages) if type(m) is dict]
                )
            except Exception as exc:
                return type(exc).__name__
            return history.reused, history.digests, history.shapes, history.owns, keys

    assert run(True) == run(False)


@needs_native
def test_untracked_objects_are_still_freed() -> None:
    """`untrack` takes objects off the garbage collector's lists (None skipped); reference
    counting still frees them."""
    assert accelerator.NATIVE is not None

    class Node:
        pass

    nodes: list[object] = [Node(), None, Node()]
    assert gc.is_tracked(nodes[0])
    accelerator.NATIVE.untrack(nodes)
    assert not any(gc.is_tracked(node) for node in nodes)
    first = weakref.ref(nodes[0])
    nodes.clear()
    assert first() is None


def _containers(value: Any) -> list[Any]:
    """Every dict and list in `value`, itself included."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if type(item) in (dict, list):
            found.append(item)
            stack.extend(item.values() if type(item) is dict else item)
    return found


@needs_native
def test_what_the_memo_keeps_is_off_the_garbage_collectors_lists() -> None:
    """A remembered history's private copies and render recipes live long and hold no cycle:
    the garbage collector does not track them (thousands per history, each collection of a
    process as large as LiteLLM's proxy walked them all, and more often)."""
    messages: list[Any] = [{"role": "user", "content": "go"}]
    for i in range(20):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": str(i)},
        ]
    cache = PrefixCache()
    history = cache.walk(SCOPE, messages)
    stored = {i: Reasoning.from_text(f"think {i}") for i in history.assistant}
    render_walked(
        history, messages, get_dialect("openai_chat_required"), TurnPolicy.ALL_TURNS, stored
    )
    cache.remember(history)
    copies = [c for copy in history.copies for c in _containers(copy)]
    recipes = [recipe for recipe in history.recipes if recipe is not None]
    assert len(copies) > len(messages) and len(recipes) == 20
    assert not any(map(gc.is_tracked, copies))
    assert not any(map(gc.is_tracked, recipes))


def test_replay_knows_renders_outcomes_and_hows() -> None:
    """`_accel.c` names `How.SAME`, `How.MERGE`, `Outcome.RESTORED` and `Outcome.NOTHING` by
    number, and appends to `lists[outcome]` (the `Rendered` lists in that order)."""
    assert (How.SAME, How.MERGE, Outcome.RESTORED, Outcome.NOTHING) == (0, 1, 1, 5)
    assert list(Outcome)[:5] == [Outcome.KEPT, Outcome.RESTORED, *list(Outcome)[2:5]]
    order = [f.name for f in dataclasses.fields(Rendered)][2:7]
    assert order == ["kept", "restored", "stripped", "missing", "dropped"]
    assert [o.name.lower() for o in list(Outcome)[:5]] == order


def _agent_turns(turns: int) -> list[Any]:
    """Turns of a user message, two tool calls and an answer; the second turn's first tool
    call message carries its own reasoning, one answer carries `turn`-free provider fields."""
    messages: list[Any] = [{"role": "system", "content": "s"}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"task {turn}"})
        for step in range(2):
            call = {
                "id": f"call_{turn}_{step}",
                "type": "function",
                "function": {"name": "read", "arguments": "{}"},
            }
            own = {"reasoning_content": "sent by the client"} if (turn, step) == (1, 0) else {}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call], **own})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "ok"})
        messages.append({"role": "assistant", "content": f"done {turn}"})
    return messages


def on_replay_targets(test: Any) -> Any:
    """`test` with the accelerator, for each policy and three dialects (`policy`,
    `dialect_name`)."""
    dialects = ["openai_chat_required", "openai_chat", "anthropic"]
    test = pytest.mark.parametrize("dialect_name", dialects)(test)
    return needs_native(pytest.mark.parametrize("policy", list(TurnPolicy))(test))


def _texts(messages: list[Any]) -> dict[int, str]:
    """The reasoning stored for four in five assistant messages of `_agent_turns`."""
    return {
        i: f"think {i}" for i, m in enumerate(messages) if m.get("role") == "assistant" and i % 5
    }


def _noting(left: list[int]) -> Any:
    """The accelerator's loop, noting in `left` the indices it hands back to Python."""
    original = prefix_cache.REPLAY
    assert original is not None

    def noted(*args: Any) -> list[int]:
        handed_back = original(*args)
        left.extend(handed_back)
        return handed_back

    return noted


@on_replay_targets
def test_replay_renders_what_the_general_path_renders(
    policy: TurnPolicy, dialect_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next request of a conversation, rendered with the recipes of the first: the
    accelerator's loop (which takes the recipes that hold as they are) and `render`'s general
    path give the same wire and the same lists, and the loop did take most messages."""
    dialect = get_dialect(dialect_name)
    first = _agent_turns(4)
    stored = {i: Reasoning.from_text(text) for i, text in _texts(first).items()}
    left: list[int] = []
    counted = _noting(left)

    def second_request(native: bool) -> tuple[Rendered, list[int]]:
        cache = PrefixCache()
        history = cache.walk(SCOPE, copy.deepcopy(first))
        render_walked(history, history.messages, dialect, policy, stored)
        cache.remember(history)
        later = cache.walk(SCOPE, [*copy.deepcopy(first), {"role": "user", "content": "more"}])
        assert later.reused == len(first)
        left.clear()
        with monkeypatch.context() as patched:
            patched.setattr(prefix_cache, "REPLAY", counted)
            rendered = render_walked(later, later.messages, dialect, policy, stored, native=native)
        return rendered, list(left)

    native, left_native = second_request(True)
    pure, left_pure = second_request(False)
    assert native == pure
    assert json.dumps(native.messages) == json.dumps(pure.messages)  # key order too
    assert left_pure == []  # the accelerator's loop not asked
    # Left to Python: the message that carries the client's own reasoning (its recipe asks the
    # dialect again where the policy strips it), and, where the new user message moved the
    # current turn (the policy keeps by turn), the last turn's messages (their keep decision
    # changed). Every other assistant message was taken in C.
    own_reasoning = 8
    last_turn = [20, 22, 24]
    assert first[own_reasoning]["reasoning_content"]
    assert first[last_turn[0] - 1]["role"] == "user"
    by_turn = policy not in (TurnPolicy.ALL_TURNS, TurnPolicy.NONE)
    assert set(left_native) <= {own_reasoning, *(last_turn if by_turn else ())}, left_native
    if policy in (TurnPolicy.ALL_TURNS, TurnPolicy.TOOL_CALLS_ALL_TURNS):
        # earlier turns' records were decided on (restored, or refused by the dialect)
        assert native.restored or native.dropped


@on_replay_targets
def test_records_decided_before_render_as_when_first_decided(
    policy: TurnPolicy, dialect_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold request (a memo that never saw the conversation) restoring records an earlier
    request rendered: the accelerator's loop and Python's path remake each message that carries
    nothing by its record's own decision, with no recipe of the history's own
    (`Reasoning._plain`); both send what deciding afresh sends."""
    dialect = get_dialect(dialect_name)
    first = _agent_turns(4)
    texts = _texts(first)
    stored = {i: Reasoning.from_text(text) for i, text in texts.items()}
    left: list[int] = []
    counted = _noting(left)

    def cold(records: dict[int, Reasoning], native: bool) -> tuple[Rendered, History]:
        history = PrefixCache().walk(SCOPE, copy.deepcopy(first))
        left.clear()
        with monkeypatch.context() as patched:
            patched.setattr(prefix_cache, "REPLAY", counted)
            rendered = render_walked(
                history, history.messages, dialect, policy, records, native=native
            )
        return rendered, history

    decided, decided_history = cold(stored, True)  # the records' first render
    again, history = cold(stored, True)
    left_again = list(left)
    pure, pure_history = cold(stored, False)
    # equal records never rendered: decided afresh, in Python
    afresh, _ = cold({i: Reasoning.from_text(text) for i, text in texts.items()}, False)
    assert again == decided == pure == afresh
    assert json.dumps(again.messages) == json.dumps(afresh.messages)  # key order too
    plain_fields = dialect.plain_fields(None) is not None
    if policy is TurnPolicy.ALL_TURNS and plain_fields:
        own_reasoning = 8  # carries the client's own: decided by the general path
        by_record = sorted(set(stored) - {own_reasoning})
        assert by_record and set(again.restored) >= set(by_record)
        assert all(decided_history.recipes[i] is not None for i in by_record)
        assert [i for i in by_record if history.recipes[i] is not None] == []
        # what the memo counts against its cap: the records are the store's, not its own
        assert history.held_bytes() < decided_history.held_bytes()
        assert not set(left_again) & set(by_record)
        assert [i for i in by_record if pure_history.recipes[i] is not None] == []
    if not plain_fields:  # a dialect that changes more than fields: decided each time
        assert all(record._plain is None for record in stored.values())


@pytest.mark.parametrize("policy", list(TurnPolicy))
def test_keep_bounds_say_what_keeps_at_says(policy: TurnPolicy) -> None:
    """What the loop is given for the keep decision, against the policy's own rule, at every
    place of a 12-message history, with and without tool calls, for each turn start."""
    for turn_start in range(12):
        after, tools = policy.keep_bounds(turn_start, 12)
        for index in range(12):
            for calls_tools in (False, True):
                expected = policy.keeps_at(index, turn_start, calls_tools=calls_tools)
                assert (index > after or (tools and calls_tools)) is expected


_DIGESTS = st.sampled_from(["d1", "d2", "*d1", ""])


@needs_native
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.integers(0, 8), st.sampled_from("abcde"), max_size=8),
    st.dictionaries(st.integers(0, 8), st.one_of(st.none(), _DIGESTS), max_size=8),
    st.dictionaries(st.sampled_from("abcdef"), st.one_of(st.none(), _DIGESTS), max_size=6),
)
@example(keys={0: "a", 1: "b"}, before={0: "d1", 1: "d2"}, held={"a": None, "b": "d2"})
@example(keys={0: "a", 1: "b"}, before={0: "d1", 1: "d2"}, held={"a": None, "b": "d1"})
def test_filed_for_is_the_loops_common_case(
    keys: dict[int, str], before: dict[int, str | None], held: dict[str, str | None]
) -> None:
    """`_accel.filed_for` answers what the engine's loop over the read would find: no record
    filed for another conversation than its message's (a miss, a record or a message of no
    conversation passes), with the digests as strings of any content (the empty one too)."""
    found = {key: Reasoning(conversation=conversation) for key, conversation in held.items()}
    expected = all(
        found[key].conversation is None
        or before.get(i) is None
        or found[key].conversation == before.get(i)
        for i, key in keys.items()
        if key in found
    )
    assert accelerator.filed_for(keys, before, found) is expected  # type: ignore[arg-type]


@needs_native
def test_filed_for_leaves_to_python_what_does_not_look_up_as_a_dict() -> None:
    """A mapping whose lookups Python code answers is asked in Python (None), and what a
    record's attribute raises is raised."""

    class Answer(dict[str, Reasoning]):
        def get(self, key: str, default: Any = None) -> Any:
            return Reasoning(conversation="other")

    keys, before = {0: "a"}, {0: "d1"}
    assert accelerator.filed_for(keys, before, Answer(a=Reasoning(conversation="d1"))) is None
    assert accelerator.filed_for(keys, dict(before).items(), {}) is None  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        accelerator.filed_for(keys, before, {"a": "not a record"})  # type: ignore[dict-item]


@needs_native
@pytest.mark.parametrize("special", ['"', "\\", "\n", "\x00", "\x1f", "\u00e9", "\U0001f600", " "])
def test_text_is_escaped_as_json_wherever_the_character_stands(special: str) -> None:
    """The canonical bytes of a text that needs an escape (or a character beyond ASCII) at every
    place of its first three eight-byte words, and twice in a row, are the pure path's (the
    accelerator scans text eight bytes at a time past what needs no escape)."""
    texts = [
        "a" * before + special * times + "b" * after
        for before in range(25)
        for times in (1, 2)
        for after in (0, 1, 7, 8, 9)
    ]
    messages = [{"role": "user", "content": text} for text in texts]
    _, shapes, *_ = accelerator.NATIVE.walk(messages, 0, identity.EMPTY_DIGEST)  # type: ignore[union-attr]
    assert shapes == [identity.canonical(message) for message in messages]
