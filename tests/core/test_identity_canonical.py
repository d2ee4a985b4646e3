"""`identity.canonical`'s fast path (plain strings written with C quoting) writes exactly the
bytes of the general encoding, for every message: stored keys depend on them
(tests/core/test_golden_keys.py pins the values release 0.1.0 wrote). `canonical_decided` also
says exactly what `equality_decides` says (what the prefix cache trusts `==` for)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litellm_reasoning.core import extract, identity, turns

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

# Unicode of every kind JSON must escape or keep: quotes, backslashes, control characters,
# non-ASCII, and LiteLLM's Gemini signature separator inside ids.
text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", '"', "\\", "\n\t\x00\x1f", "é€😀", "call_1__thought__c2ln", "__thought__"]
    ),
)
odd = st.sampled_from([1, 1.0, True, False, 0, None, ["x"], {"a": 1}])
part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(text, odd)}),
    st.fixed_dictionaries({"type": st.just("text")}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["thinking", "redacted_thinking"]), "thinking": text}
    ),
    st.fixed_dictionaries(
        {"type": st.just("image_url"), "image_url": st.just({"url": "u"})},
        optional={"cache_control": st.just({"type": "ephemeral"})},
    ),
    text,
    odd,
)
call = st.one_of(
    st.fixed_dictionaries(
        {
            "id": st.one_of(text, odd),
            "type": st.just("function"),
            "function": st.one_of(
                st.fixed_dictionaries({"name": st.one_of(text, odd), "arguments": text}),
                odd,
            ),
        }
    ),
    odd,
)
message = st.fixed_dictionaries(
    {},
    optional={
        "role": st.one_of(st.sampled_from(["user", "assistant", "tool", "system", ""]), odd),
        "content": st.one_of(st.none(), text, st.lists(part, max_size=4), odd),
        "tool_calls": st.one_of(st.lists(call, max_size=3), odd),
        "tool_call_id": st.one_of(text, odd),
        "reasoning_content": text,
        "turn": st.booleans(),
    },
)


def _outcome(encode: Any, value: Any) -> bytes | str:
    try:
        out: bytes = encode(value)
    except Exception as exc:  # both paths must fail alike too
        return type(exc).__name__
    return out


@settings(max_examples=1500, deadline=None)
@given(st.one_of(message, odd, text))
def test_fast_path_writes_the_general_bytes(value: Any) -> None:
    assert _outcome(identity.canonical, value) == _outcome(identity._general, value)
    shape = _outcome(identity._general, value)
    if isinstance(shape, bytes):
        assert identity.canonical_decided(value) == (shape, identity.equality_decides(value))


def test_plain_messages_take_the_fast_path() -> None:
    """The messages of an agent loop are written without the general encoder (what makes a
    cold request cheap); the pinned bytes are those of release 0.1.0."""
    calls = 0
    general = identity._general

    def counting(value: Any) -> bytes:
        nonlocal calls
        calls += 1
        return general(value)

    messages = [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "é"}],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "r",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    identity._general = counting  # type: ignore[assignment]
    try:
        shapes = [identity.canonical(m) for m in messages]
    finally:
        identity._general = general  # type: ignore[assignment]
    assert calls == 0
    assert shapes == [
        b'["system",["sys"],[],""]',
        '["user",["hi é"],[],""]'.encode(),
        b'["assistant",[],[["c1","f"]],""]',
        b'["tool",["ok"],[],"c1"]',
    ]


def _shapes_of(content: str, pieces: list[str]) -> list[Any]:
    """Every shape LiteLLM's translations give one text content: the string, one text part,
    the text cut into several text parts, with a cache_control or reasoning blocks beside
    it; for empty text also None, no parts and an empty text part (the Responses bridge)."""
    cut = [{"type": "text", "text": piece} for piece in pieces]
    shapes: list[Any] = [
        content,
        [{"type": "text", "text": content}],
        [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}],
        cut,
        [{"type": "thinking", "thinking": "t", "signature": "s"}, *cut],
        [*cut, {"type": "redacted_thinking", "data": "d"}],
    ]
    if not content:
        shapes += [None, [], [{"type": "text", "text": ""}], [{"type": "text"}]]
    return shapes


@given(pieces=st.lists(text, max_size=4), calls=st.lists(text, max_size=2), role=text)
@settings(max_examples=300, deadline=None)
def test_every_shape_of_one_message_has_one_identity(
    pieces: list[str], calls: list[str], role: str
) -> None:
    content = "".join(pieces)
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in calls
    ]
    extra = {"tool_calls": tool_calls} if tool_calls else {}
    identities = {
        identity.canonical({"role": role, "content": shape, **extra})
        for shape in _shapes_of(content, pieces)
    }
    assert len(identities) == 1, identities


nested = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["assistant", "user"]),
        "content": st.one_of(
            st.none(),
            text,
            st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "thinking"]), "text": text},
                    optional={"turn": st.booleans()},
                ),
                max_size=3,
            ),
        ),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": text,
                    "function": st.fixed_dictionaries(
                        {"name": text},
                        optional={
                            "turn": st.booleans(),
                            "provider_specific_fields": st.just({"x": 1}),
                        },
                    ),
                },
                optional={"turn": st.booleans(), "provider_specific_fields": st.just({"x": 1})},
            ),
            max_size=3,
        ),
    },
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(nested, message))
def test_read_reports_what_the_turn_rule_and_the_reasoning_reader_see(value: Any) -> None:
    """`read`'s facts are what `carries_turn` and `carries_nothing` find in a message's
    content blocks and tool calls (the walk trusts them instead of asking again)."""
    fast = identity.read(value)
    if fast is None:
        return
    shape, decided, facts = fast
    assert (shape, decided) == (identity._general(value), identity.equality_decides(value))
    assert bool(facts & identity.FACT_TURN) == turns._nested_turn(value)
    without_own_keys = {k: v for k, v in value.items() if k in ("role", "tool_calls")}
    assert bool(facts & identity.FACT_CALL_EXTRAS) == (
        not extract.carries_nothing(without_own_keys)
    )


@settings(max_examples=1500, deadline=None)
@given(st.one_of(nested, message))
def test_has_tool_call_ids_is_what_the_tool_call_reader_says(value: Any) -> None:
    """The key's choice between tool-call and position keys: every tool call has a non-empty
    id once LiteLLM's embedded signature is split off."""
    calls = value.get("tool_calls")
    expected = (
        isinstance(calls, list)
        and any(isinstance(c, dict) for c in calls)
        and all(extract.split_tool_call_id(c.get("id"))[0] for c in calls if isinstance(c, dict))
    )
    assert identity.has_tool_call_ids(value) == expected
