"""One body for the sync and the async path: a flow is a generator that yields what it needs
done (a store read, write or delete, a wait for open captures) and gets the result back; a sync
and an async driver carry the yields out (as httpx drives its auth flows). A failure of a step
is thrown back into the flow, where it is handled like any exception at that `yield`."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from ..core.reasoning import Reasoning
from ..memo.pending import Closing, await_any, wait_any
from ..stores import ReasoningStore

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Read:
    """The stored records of `keys` (`store.get_many`; `get_required` when the request is
    refused without them, so the store may wait longer for them)."""

    scope: str
    keys: Sequence[str]
    required: bool = False


@dataclass(frozen=True, slots=True)
class Sizes:
    """The sizes of the stored records of `keys`, without reading them (`store.sizes_many`;
    None when the store cannot tell)."""

    scope: str
    keys: Sequence[str]


@dataclass(frozen=True, slots=True)
class Write:
    """Keep `records` (`store.put_many`; `put_required` when the next request is refused
    without them, so the store may wait longer for the write)."""

    scope: str
    records: Mapping[str, Reasoning]
    required: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    scope: str
    keys: Sequence[str]


@dataclass(frozen=True, slots=True)
class WaitAny:
    """Until one of `events` is set or `deadline` (monotonic) passes: True when one was set."""

    events: list[Closing]
    deadline: float


Step = Union[Read, Sizes, Write, Delete, WaitAny]  # noqa: UP007  (Python 3.10: a runtime alias)
Flow = Generator[Step, Any, T]


def _run(store: ReasoningStore, step: Step) -> Any:
    if isinstance(step, Read):
        if step.required:
            return store.get_required(step.scope, list(step.keys))
        return store.get_many(step.scope, list(step.keys))
    if isinstance(step, Sizes):
        return store.sizes_many(step.scope, list(step.keys))
    if isinstance(step, Write):
        if step.required:
            store.put_required(step.scope, dict(step.records))
        else:
            store.put_many(step.scope, dict(step.records))
        return None
    if isinstance(step, Delete):
        store.delete_many(step.scope, list(step.keys))
        return None
    return wait_any(step.events, step.deadline)


async def _arun(store: ReasoningStore, step: Step) -> Any:
    if isinstance(step, Read):
        if step.required:
            return await store.aget_required(step.scope, list(step.keys))
        return await store.aget_many(step.scope, list(step.keys))
    if isinstance(step, Sizes):
        return await store.asizes_many(step.scope, list(step.keys))
    if isinstance(step, Write):
        if step.required:
            await store.aput_required(step.scope, dict(step.records))
        else:
            await store.aput_many(step.scope, dict(step.records))
        return None
    if isinstance(step, Delete):
        await store.adelete_many(step.scope, list(step.keys))
        return None
    return await await_any(step.events, step.deadline)


def drive(store: ReasoningStore, flow: Flow[T]) -> T:
    """Run `flow` to its end on this thread."""
    try:
        step = next(flow)
        while True:
            try:
                result = _run(store, step)
            except Exception as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def adrive(store: ReasoningStore, flow: Flow[T]) -> T:
    """Run `flow` to its end on the event loop."""
    try:
        step = next(flow)
        while True:
            try:
                result = await _arun(store, step)
            except Exception as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
