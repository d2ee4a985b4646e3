"""The one request pipeline (`Engine.run`) is a contract a new format can be written against: a
format that knows nothing of the engine's internals gets one store read of what it planned, its
rendered items, and what every rendered request leaves (its capture open, its counts, its
decisions summary), on the real in-memory store; a failing summary costs only the summary. A
new entry point is an `Entry` and one line in `pipeline.ENTRIES`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import litellm
import pytest

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.decisions import summary_of
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.core.render import Rendered
from litellm_reasoning.core.targets import resolve_target
from litellm_reasoning.integration import pipeline
from litellm_reasoning.integration.calls import CallState, Capture, start_attempt, state_in
from litellm_reasoning.integration.engine import Engine
from litellm_reasoning.integration.flows import Flow, adrive, drive
from litellm_reasoning.integration.format_flow import Begun, Done, Plan
from litellm_reasoning.integration.kwargs import CallFacts
from litellm_reasoning.stores import MemoryStore
from litellm_reasoning.wire import get_dialect

FACTS = CallFacts(
    scope="ns=test|key=k",
    provider="deepseek",
    model="deepseek-v4-flash",
    api_base=None,
    names=(),
    has_tools=True,
    preserved_thinking=False,
    template_kept=False,
    model_keeps_thinking=False,
    origin="o",
    deployment_id=None,
)


def note(text: str) -> Reasoning:
    return Reasoning(parts=(ReasoningPart(text=text),), provider="deepseek")


class Notes:
    """A toy format: items `{"id": ..., "reasoning": ...}`, whose reasoning is kept under
    `note:<id>` and put back where an item came without it."""

    def __init__(self, failing_summary: bool = False) -> None:
        self.failing_summary = failing_summary
        self.read: dict[str, Reasoning] | None = None

    def plan(self, engine: Engine, facts: CallFacts, items: list[Any]) -> Plan[list[Any]]:
        keys = {i: f"note:{item['id']}" for i, item in enumerate(items) if not item["reasoning"]}
        return Plan(
            facts.scope,
            keys,
            {i: f"before:{i}" for i in keys},
            len(items) - 1,
            dict,
            False,
            items,
        )

    def render(
        self,
        engine: Engine,
        plan: Plan[list[Any]],
        found: Mapping[str, Reasoning],
        unread: Mapping[int, int],
    ) -> Flow[Done]:
        yield from ()
        self.read = dict(found)
        out = list(plan.detail)
        restored, missing = [], []
        for i, key in plan.keys.items():
            record = found.get(key)
            if record is None:
                missing.append(i)
            else:
                out[i] = {**out[i], "reasoning": record.text}
                restored.append(i)
        target = resolve_target(
            FACTS.provider, FACTS.model, None, has_tools=True, dialect_of=get_dialect
        )

        def summary() -> dict[str, Any]:
            if self.failing_summary:
                raise RuntimeError("summary broke")
            per_item = {str(i): "restored" for i in restored}
            per_item.update({str(i): "missing" for i in missing})
            return summary_of(target, per_item, len(restored))

        return Done(
            out,
            target,
            Rendered(out, plan.turn_start, kept=restored, restored=restored, missing=missing),
            0,
            summary,
            {plan.keys[i]: found[plan.keys[i]] for i in restored},
            Capture(plan.scope, "digest-of-all", FACTS.provider, FACTS.model),
        )


ITEMS = [
    {"id": "a", "reasoning": None},
    {"id": "b", "reasoning": "sent by the client"},
    {"id": "c", "reasoning": None},
]


@pytest.mark.parametrize("driver", ["async", "sync"])
def test_a_new_format_gets_the_read_the_render_and_the_record(driver: str) -> None:
    callback = ReasoningCallback(MemoryStore())
    engine = callback.engine
    engine.store.put_many(FACTS.scope, {"note:a": note("from the store")})
    state = start_attempt(None, engine, engine.pending)
    notes = Notes()
    flow = engine.run(notes, FACTS, ITEMS, state)
    done = (
        asyncio.run(adrive(engine.store, flow)) if driver == "async" else drive(engine.store, flow)
    )
    assert done is not None
    # One read of what the plan asked for: a's record found, c's missing, b never looked up.
    assert notes.read == {"note:a": note("from the store")}
    assert [item["reasoning"] for item in done.items] == [
        "from the store",
        "sent by the client",
        None,
    ]
    # What every rendered request leaves, whatever its format.
    assert state.handled and state.capture is not None
    assert state.capture.digest == "digest-of-all"
    assert callback.open_captures == 1  # a later request continuing it waits for its reply
    assert state.restored == {"note:a": note("from the store")}
    assert state.summary is not None
    assert state.summary["messages"] == {"0": "restored", "2": "missing"}
    assert callback.stats["restored"] == 1 and callback.stats["missing"] == 1
    assert callback.stats["reasoning_tokens_sent"] == 1


def test_a_failing_summary_costs_only_the_summary() -> None:
    callback = ReasoningCallback(MemoryStore())
    engine = callback.engine
    engine.store.put_many(FACTS.scope, {"note:a": note("from the store")})
    state = start_attempt(None, engine, engine.pending)
    done = drive(engine.store, engine.run(Notes(failing_summary=True), FACTS, ITEMS, state))
    assert done is not None and done.items[0]["reasoning"] == "from the store"
    assert state.capture is not None and state.summary is None
    assert callback.stats["errors"] == 1 and callback.stats["restored"] == 1


class NotesEntry:
    """A toy entry point (`format_flow.Entry`) for a call type of its own: its items under
    `notes`; a call asking `skip` is not rendered here."""

    call_types = frozenset({"notes"})
    field = "notes"
    doing = "rendering the notes"
    starts_early = False
    blocks_body = False

    def __init__(self) -> None:
        self.settled: list[Done | None] = []

    def begin(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        facts: CallFacts,
        items: list[Any],
        previous: CallState | None,
        state: CallState | None,
    ) -> Begun | None:
        if kwargs.get("skip"):
            return None
        return Begun(Notes(), items)

    def after_pipeline(
        self,
        engine: Engine,
        kwargs: dict[str, Any],
        begun: Begun,
        done: Done | None,
        state: CallState,
    ) -> None:
        self.settled.append(done)


def test_a_new_entry_point_is_an_entry_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered in `pipeline.ENTRIES`, a toy entry point is dispatched by the real deployment
    hook: its state started, its items rendered by the one pipeline, its `after_pipeline` given the
    result; `turn` goes out with a call it does not render; the proxy's pre-call hook leaves
    its `turn` for the deployment hook."""
    entry = NotesEntry()
    monkeypatch.setitem(pipeline.ENTRIES, "notes", entry)
    callback = ReasoningCallback(MemoryStore())
    registered = list(litellm.callbacks)
    litellm.callbacks = [callback]
    try:
        scope = callback.engine.facts_of(_notes_call([])).scope
        callback.engine.store.put_many(scope, {"note:a": note("from the store")})

        kwargs = _notes_call([dict(item) for item in ITEMS])
        out = asyncio.run(callback.async_pre_call_deployment_hook(kwargs, "notes"))
        assert out is kwargs
        assert [item["reasoning"] for item in entry.settled[0].items] == [  # type: ignore[union-attr]
            "from the store",
            "sent by the client",
            None,
        ]
        state = state_in(kwargs["litellm_logging_obj"].model_call_details)
        assert state is not None and state.capture is not None
        assert callback.stats["restored"] == 1

        skipped = _notes_call([{"id": "a", "reasoning": None, "turn": False}], skip=True)
        asyncio.run(callback.async_pre_call_deployment_hook(skipped, "notes"))
        assert skipped["notes"] == [{"id": "a", "reasoning": None}]
        assert len(entry.settled) == 1

        data = {"notes": [{"id": "a", "turn": False}]}
        assert asyncio.run(callback.async_pre_call_hook(None, None, data, "notes")) is None
        assert data["notes"] == [{"id": "a", "turn": False}]
    finally:
        litellm.callbacks = registered


def _notes_call(items: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "deepseek/deepseek-v4-flash",
        "api_key": "k",
        "litellm_logging_obj": SimpleNamespace(model_call_details={}),
        "notes": items,
        **extra,
    }
