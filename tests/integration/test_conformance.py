"""Every conformance case, through real LiteLLM in every call shape, compared on the wire.

The same runner backs `litellm-reasoning conformance`; here each case is its own test.
"""

from __future__ import annotations

import litellm
import pytest
from paths import REPO

from litellm_reasoning.cli.conformance import (
    CALLS,
    CLIENTS,
    STREAMS,
    Case,
    Runner,
    compare,
    load_cases,
    table,
)
from litellm_reasoning.testing.upstream import Upstream

CASES = load_cases([REPO / "conformance"])


def test_cases_were_found() -> None:
    """The seed's six cases and ours are all loaded."""
    assert sum(c.source.endswith("seed-reasoning.json") for c in CASES) == 6
    assert len(CASES) > 6


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_case(case: Case, upstream: Upstream) -> None:
    """The wire matches `expect` for every call shape, streamed or not, kept or dropped."""
    runner = Runner(upstream)
    outcomes = [
        await runner.run_one(case, call, stream, client)
        for call in CALLS
        for stream in STREAMS
        for client in case.raw.get("clients") or CLIENTS
    ]
    litellm.logging_callback_manager._reset_all_callbacks()
    failures = [
        line for line, o in zip(list(table(outcomes))[1:-1], outcomes, strict=True) if not o.ok
    ]
    assert not failures, "\n".join(failures)


def test_compare_reports_the_difference() -> None:
    """The comparison names what differs, so a failing case explains itself."""
    expect = [{"role": "assistant", "content": "", "reasoning_content": "r"}]
    assert compare([{"role": "assistant", "content": "", "reasoning_content": "r"}], expect) == ""
    assert "reasoning_content=None" in compare([{"role": "assistant", "content": ""}], expect)
    assert "unexpected turn" in compare(
        [{"role": "user", "content": "x", "turn": False}], [{"role": "user", "content": "x"}]
    )
    assert "2 messages on the wire" in compare([{}, {}], expect)


async def test_a_failing_run_names_the_callbacks_counters(upstream: Upstream) -> None:
    """A run whose wire differs from `expect` says what the callback counted (captured, waited,
    restored, missing…), so a failure seen once in CI tells which path missed a record."""
    import copy
    import dataclasses

    (seed,) = [c for c in CASES if c.name == "seed-reasoning#1"]
    raw = copy.deepcopy(seed.raw)
    raw["expect"] = [{"role": "user", "content": "not what is sent"}]
    outcome = await Runner(upstream).run_one(
        dataclasses.replace(seed, raw=raw), "acompletion", False, "drops"
    )
    litellm.logging_callback_manager._reset_all_callbacks()
    assert not outcome.ok
    assert "[callback: captured=" in outcome.detail and "missing=" in outcome.detail
