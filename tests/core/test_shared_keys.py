"""`shared_keys`: where a store writes a record of one conversation under a tool-call key
another conversation may have written, and what a read does with what it finds there."""

from __future__ import annotations

import dataclasses

import pytest

from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.core.shared_keys import (
    SHARED,
    Placement,
    Reading,
    exact_key,
    marked,
    placement,
    reading,
)
from litellm_reasoning.stores import _codec


@pytest.mark.parametrize(
    ("held", "writing", "expected"),
    [
        (None, "a", Placement.KEY),  # nothing there, or an earlier release's record
        ("a", "a", Placement.KEY),  # the same conversation again
        ("*a", "a", Placement.KEY_MARKED),  # the first writer, after another came
        ("*a", "b", Placement.EXACT),  # a shared key: a third conversation, or the second again
        ("a", "b", Placement.SPLIT),  # the second conversation: the first is marked
        ("a", "*b", Placement.KEY),  # copied marked from elsewhere: as it is
    ],
)
def test_placement(held: str | None, writing: str, expected: Placement) -> None:
    assert placement(held, writing) is expected


@pytest.mark.parametrize(
    ("held", "before", "expected"),
    [
        (None, "a", Reading.RESTORE),
        ("a", "a", Reading.RESTORE),
        ("*a", "a", Reading.RESTORE),
        ("*a", "b", Reading.EXACT),
        ("a", "b", Reading.OTHER),  # one writer: a history cut or edited before the message
    ],
)
def test_reading(held: str | None, before: str, expected: Reading) -> None:
    assert reading(held, before) is expected


def test_marks_and_exact_keys() -> None:
    assert marked("a") == SHARED + "a" == marked(SHARED + "a")
    assert exact_key("k" * 40, "d" * 32) == "k" * 40 + ":" + "d" * 32


def test_the_stored_bytes_lead_with_the_digest_and_are_marked_in_place() -> None:
    """What SQLite reads and marks in Python and Redis' script in Lua, without decoding: the
    digest first; marked, the bytes decode to the same record with the marked digest."""
    record = Reasoning.from_text('a "quoted" {"c":"x"} text', provider="moonshot")
    placed = dataclasses.replace(record, conversation="ab12")
    raw = _codec.encode("ns=t", placed, 1.0)
    assert raw.startswith(b'{"c":"ab12",')
    assert _codec.conversation_of(raw) == "ab12"
    shared = _codec.mark_shared(raw)
    assert _codec.mark_shared(shared) == shared
    decoded = _codec.decode(shared)
    assert decoded.record == record and decoded.record.conversation == "*ab12"
    assert decoded.scope == "ns=t"
    # A record without a digest (every other record, and every earlier release's) is unchanged.
    plain = _codec.encode("ns=t", record, 1.0)
    assert _codec.conversation_of(plain) is None and _codec.mark_shared(plain) == plain
    assert plain.startswith(b'{"s":')
    assert _codec.decode(plain).record.conversation is None
