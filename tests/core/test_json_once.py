"""`json_once.made_once` writes the bytes of the `json` encoder it stands for: `blocks.shape`
those of `json.dumps(sort_keys=True, separators=(",", ":"), default=str)`, a tool-use key's uses
those of `json.dumps(uses)`, `identity`'s general shapes those of its `_ENCODER`. Every stored
key and digest depends on them (tests/core/test_golden_keys.py pins the values earlier
releases wrote)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litellm_reasoning.core import identity
from litellm_reasoning.core.formats import blocks

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", '"', "\\", "\n\t\x00\x1f", "é€😀", "\u2028", "\ud800"]),
)
leaf = st.one_of(
    text,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from([b"bytes", (1, 2), {1, 2}, 1 + 2j]),  # not JSON: written by `default=str`
)
value = st.recursive(
    leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=20,
)
block = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use", "tool_result"])}).flatmap(
        lambda b: st.dictionaries(text, value, max_size=4).map(lambda extra: {**extra, **b})
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["thinking", "redacted_thinking"]), "thinking": text}
    ),
    value,
)
message = st.fixed_dictionaries(
    {
        "role": st.one_of(st.sampled_from(["user", "assistant"]), value),
        "content": st.one_of(text, st.lists(block, max_size=4), value),
    },
    optional={"cache_control": value},
)


def _reference(message: Any) -> bytes:
    """`shape` as written with `json.JSONEncoder.encode` (what releases up to 0.4.0 ran)."""
    content = [
        blocks._plain(b)
        for b in blocks.content_blocks(message.get("content"))
        if not (isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking"))
    ]
    body = {"role": message.get("role"), "content": content}
    return blocks._SHAPE_ENCODER.encode(body).encode()


def _writes_as(reference: Callable[[Any], Any], made: Callable[[Any], Any], value: Any) -> None:
    """`made(value)` is `reference(value)`, or fails as it does (keys JSON cannot sort, a value
    `default` refuses)."""
    try:
        expected = reference(value)
    except Exception as exc:
        with pytest.raises(type(exc)):
            made(value)
        return
    assert made(value) == expected


@settings(max_examples=400, deadline=None)
@given(message)
def test_shape_is_the_json_encoders_bytes(message: dict[str, Any]) -> None:
    _writes_as(_reference, blocks.shape, message)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.lists(text, max_size=3), value), max_size=4))
def test_tool_uses_are_written_as_json_dumps_writes_them(uses: list[Any]) -> None:
    _writes_as(json.dumps, blocks._encode_uses, uses)


@settings(max_examples=300, deadline=None)
@given(value)
def test_identitys_general_shapes_are_its_encoders_bytes(shape: Any) -> None:
    _writes_as(identity._ENCODER.encode, identity._encode, shape)


def test_the_shared_encoder_is_safe_across_threads() -> None:
    """The encoder made once keeps no state between calls: threads encoding at once each get
    their own message's bytes (no circular-reference memo shared between them)."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"m{i} " * 50, "n": [i] * 20}]}
        for i in range(8)
    ]
    expected = [_reference(m) for m in messages]
    wrong: list[int] = []

    def encode(i: int) -> None:
        for _ in range(300):
            if blocks.shape(messages[i]) != expected[i]:
                wrong.append(i)

    threads = [threading.Thread(target=encode, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_message_holding_itself_fails_without_hanging() -> None:
    """No circular-reference check: a cycle (never in parsed JSON) ends in an error, which the
    callback's fail-open boundary turns into a request let through as sent."""
    looped: dict[str, Any] = {"type": "text"}
    looped["self"] = looped
    with pytest.raises((RecursionError, ValueError)):
        blocks.shape({"role": "user", "content": [looped]})
