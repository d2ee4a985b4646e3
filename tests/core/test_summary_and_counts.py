"""The per-request bookkeeping's shortcuts for an agent loop's request (every kept message
restored from the store): the decisions summary, the token sums and the records by index give
what the general rule gives, and the general rule still decides every other case."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from litellm_reasoning.core.decisions import summarize
from litellm_reasoning.core.limits import Limited, RecordCounts
from litellm_reasoning.core.policy import TurnPolicy
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.core.render import Rendered
from litellm_reasoning.core.targets import Target
from litellm_reasoning.integration.format_flow import stored_records
from litellm_reasoning.wire import get_dialect

TARGET = Target(get_dialect("openai_chat_required"), TurnPolicy.ALL_TURNS, "test")

indices = st.lists(st.integers(0, 3000), unique=True).map(sorted)


@given(kept=indices)
def test_a_request_whose_every_kept_message_was_restored(kept: list[int]) -> None:
    rendered = Rendered(messages=[], turn_start=0, kept=list(kept), restored=list(kept))
    summary = summarize(rendered, TARGET, Limited(sent=7, saved=0))
    # Every message named in index order, as the JSON in the spend logs shows it.
    assert list(summary["messages"].items()) == [(str(i), "restored") for i in kept]
    assert summary["counts"] == {
        "kept": 0,
        "restored": len(kept),
        "reordered": 0,
        "stripped": 0,
        "dropped_foreign": 0,
        "missing": 0,
        "over_budget": 0,
    }
    assert summary["reasoning_tokens"] == {"sent": 7, "saved": 0}
    assert summary["policy"] == "all_turns"
    assert summary["dialect"] == "openai_chat_required"
    json.dumps(summary)


def test_any_other_decision_is_summarised_per_message() -> None:
    rendered = Rendered(
        messages=[], turn_start=0, kept=[1, 3, 5], restored=[1, 3, 5], missing=[7], stripped=[9]
    )
    summary = summarize(rendered, TARGET, Limited(over_budget=[1]))
    assert summary["messages"] == {
        "1": "over_budget",
        "3": "restored",
        "5": "restored",
        "7": "missing",
        "9": "stripped",
    }
    counts = summary["counts"]
    # Later decisions override earlier ones: index 1 counts as over the budget only.
    assert (counts["restored"], counts["missing"], counts["stripped"]) == (2, 1, 1)
    assert counts["over_budget"] == 1
    kept_by_client = Rendered(messages=[], turn_start=0, kept=[1, 3], restored=[3])
    summary = summarize(kept_by_client, TARGET, Limited())
    assert summary["messages"] == {"1": "kept", "3": "restored"}


def _record(text: str) -> Reasoning:
    return Reasoning.from_text(text, provider="deepseek")


def test_token_sums_with_records_counted_before_or_not_and_missing_ones() -> None:
    texts = ["a" * 40, "b" * 400, "c" * 4000, "d" * 12]
    expected = [_record(t).estimated_tokens for t in texts]  # counted on other copies
    stored = {i: _record(t) for i, t in enumerate(texts)}
    owns: list[Reasoning | None] = [None] * 6
    restored = [0, 1, 2, 3]
    # None of the records counted yet: the sum in C cannot be taken, the fallback counts them.
    assert RecordCounts(stored, owns, restored).total(restored) == sum(expected)
    # Now every record knows its count: the same sum from the C path.
    assert RecordCounts(stored, owns, restored).total(restored) == sum(expected)
    assert RecordCounts(stored, owns, restored).counts([2, 0]) == [expected[2], expected[0]]
    # A kept index with neither a stored record nor the client's own counts nothing.
    assert RecordCounts(stored, owns, restored).total([0, 5]) == expected[0]
    assert RecordCounts(stored, owns, restored).total([]) == 0
    # A kept index the client sent itself counts its own reasoning, not the store's.
    own = _record("e" * 80)
    owns_kept: list[Reasoning | None] = [None, own, None, None, None, None]
    counted = RecordCounts(stored, owns_kept, [0, 2])
    assert counted.total([0, 1, 2]) == expected[0] + own.estimated_tokens + expected[2]
    assert counted.counts([1]) == [own.estimated_tokens]


def test_records_by_index_with_every_key_found_or_some_missing() -> None:
    first, second = _record("one"), _record("two")
    keys = {1: "k1", 3: "k3", 5: "k5"}
    found = {"k1": first, "k3": second, "k5": first}
    assert stored_records(keys, {}, found) == {1: first, 3: second, 5: first}
    assert stored_records(keys, {}, {"k3": second}) == {3: second}
    superseded = Reasoning.from_text("old", provider="deepseek")
    older = {"old1": Reasoning(parts=superseded.parts, superseded=True), "old5": second}
    # A missing record found under an earlier release's key, never a superseded copy.
    assert stored_records(keys, {1: ("old1",), 5: ("old5",)}, {"k3": second, **older}) == {
        3: second,
        5: second,
    }
