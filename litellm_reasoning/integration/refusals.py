"""A provider refused reasoning the callback sent: the refused records are never sent again
(this process's refused set at once, the store's delete for every replica), or the target
moves to the policy the provider asked for (`core.healing` decides which)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core import healing
from ..core.reasoning import Reasoning
from ..core.shared_keys import mark_left_by
from .calls import CallState, state_in
from .fallback import Contained
from .flows import Delete, Flow, Write, adrive, drive

if TYPE_CHECKING:
    from .engine import Engine


def failed(engine: Engine, details: Any) -> Flow[None]:
    """A failed call (LiteLLM's failure event): nothing to wait for any more, and what its
    refusal evicts leaves the store."""
    with Contained(engine.report.fail, "evicting refused reasoning from the store"):
        state = state_in(details)
        if state is None or not state.owned_by(engine):
            return  # no call of ours (another instance's is healed by it)
        engine.pending.close(state.id)
        evict = heal(engine, state, details)
        if evict:
            yield from evicting(evict)


@dataclasses.dataclass(frozen=True, slots=True)
class Eviction:
    """What a refusal takes out of the store: `keys` deleted; `marks` written over the records
    that were the first writers of a tool-call key two conversations share (an empty record
    keeping the shared mark, `shared_keys.mark_left_by`), so the other conversation's read
    still finds its own copy."""

    scope: str
    keys: list[str]
    marks: dict[str, Reasoning]


def eviction(scope: str, evicted: Mapping[str, Reasoning]) -> Eviction:
    """The `Eviction` of the refused records `evicted` (store key -> the record restored)."""
    marks: dict[str, Reasoning] = {}
    keys: list[str] = []
    for key, record in evicted.items():
        mark = mark_left_by(record.conversation)
        if mark is None:
            keys.append(key)
        else:
            marks[key] = Reasoning(provider=record.provider, model=record.model, conversation=mark)
    return Eviction(scope, keys, marks)


def evicting(evict: Eviction) -> Flow[None]:
    """The store steps of `evict`."""
    if evict.keys:
        yield Delete(evict.scope, evict.keys)
    if evict.marks:
        yield Write(evict.scope, evict.marks)


def heal_before_retry(
    engine: Engine, state: CallState, failure: BaseException | None, tasks: set[Any]
) -> None:
    """LiteLLM retries a call from inside its `except` block, before any failure event: the
    attempt that failed is the exception being handled. The refused set keeps the records out
    of the retry at once; the store (every replica) follows without blocking the event loop
    (`tasks` holds the eviction while it runs)."""
    if failure is None:
        return
    evict = heal(engine, state, {"exception": failure})
    if not evict:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        drive(engine.store, evicting(evict))
        return
    task = loop.create_task(adrive(engine.store, evicting(evict)))
    tasks.add(task)

    def evicted(done: asyncio.Task[None]) -> None:
        tasks.discard(done)
        if not done.cancelled() and done.exception() is not None:
            engine.report.fail("evicting refused reasoning from the store", done.exception())  # type: ignore[arg-type]

    task.add_done_callback(evicted)


def heal(engine: Engine, state: CallState, details: Mapping[str, Any]) -> Eviction | None:
    """A refusal of reasoning this call's request carried because of the callback: the
    records restored into it are never restored again, or the target moves to the policy the
    provider asked for. Returns what the store must take out (`Eviction`). Runs before
    LiteLLM's own retry of the call (its failure handler is awaited first) and before the
    client can resend it."""
    target, capture = state.rendered_for, state.capture
    exception = details.get("exception")
    if target is None or capture is None or exception is None:
        return None
    if not state.sent:
        # The request never went out (LiteLLM refused it itself, and may echo what the client
        # wrote): no provider refused anything, whatever the text says.
        return None
    refusal = healing.classify(str(exception))
    if refusal is None:
        return None
    restored = state.restored_records()
    state.forget_restored()  # one healing per refused request
    healed = healing.heal(refusal, restored, target.policy)
    if healed is None:
        return None
    widening = healed.policy is not None and healing.widens(healed.policy, target.policy)
    if widening and target.operator_policy:
        healed = dataclasses.replace(healed, policy=None)  # the operator's choice holds
        if not healed.evict:
            return None
    evicted = {key: restored[key] for key in healed.evict}
    if evicted:
        engine.refused.add(capture.scope, evicted)
    if healed.policy is not None:
        key = (capture.scope, target.provider, target.model, target.dialect.name)
        engine.healed_policies.put(key, healed.policy)
    if isinstance(state.reported, dict):
        state.reported["refused"] = {
            "kind": refusal.value,
            "evicted": len(evicted),
            **({"policy": healed.policy.value} if healed.policy is not None else {}),
        }
    engine.report.refusal(target, refusal, len(evicted), healed.policy)
    return eviction(capture.scope, evicted) if evicted else None
