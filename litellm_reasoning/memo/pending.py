"""Captures a next request may have to wait for.

LiteLLM hands the assembled reply of a stream (and every sync reply) to callbacks only after
the caller already has it, so a client that sends its next request at once can arrive before
the capture is stored. Every call opens an entry under (scope, conversation digest); its capture
or failure closes it. A later request that misses a record waits, briefly and only when an
entry for exactly the conversation state that reply answered is still open. A call also files
its entry under the reply's place in its turn (`identity.place_of`): a request whose history lost
its head shares no conversation state with that call, but its tool-call message stands at the
same place, and waits there.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any

_RECENT_CLOSES = 4096
"""How many closed places are remembered (`closed_since`)."""


class Closing:
    """Set once, when an entry closes: what a waiting request polls. Not a `threading.Event`
    (a lock and a condition made on every call): waiters poll every 2 ms anyway, and a flag
    written under the GIL is seen by every thread."""

    __slots__ = ("_closed",)

    def __init__(self) -> None:
        self._closed = False

    def is_set(self) -> bool:
        return self._closed

    def set(self) -> None:
        self._closed = True


class PendingCaptures:
    def __init__(self, *, max_age_seconds: float = 600.0, max_open: int = 10_000) -> None:
        self.max_age_seconds = max_age_seconds
        self.max_open = max_open
        self._by_call: dict[str, tuple[tuple[tuple[str, str], ...], Closing, float]] = {}
        # Several calls can answer the same state (identical first prompts under one key).
        self._by_state: dict[tuple[str, str], list[Closing]] = {}
        self.closes = 0
        """How many entries were closed so far (`closed_since` counts from one of its values)."""
        self._closed_places: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._owners: dict[Closing, Any] = {}
        """Entry -> what the caller filed with it (the call's state)."""
        self._lock = threading.Lock()

    def open(
        self, call_id: str, scope: str, digest: str, owner: Any = None, place: str | None = None
    ) -> None:
        """`digest`: the conversation state the reply answers; `place`: where the reply stands
        in its turn (`identity.place_of`), also waited on."""
        now = time.monotonic()
        event = Closing()
        states = ((scope, digest),) if place is None else ((scope, digest), (scope, place))
        with self._lock:
            self._expire(now)
            previous = self._by_call.pop(call_id, None)
            if previous is not None:  # a retry of the same call: its first attempt is over
                self._forget(previous[0], previous[1])
                previous[1].set()
            self._by_call[call_id] = (states, event, now)
            for state in states:
                self._by_state.setdefault(state, []).append(event)
            if owner is not None:
                self._owners[event] = owner

    def open_ids(self, call_ids: set[str]) -> set[str]:
        """Those of `call_ids` whose capture is still open."""
        with self._lock:
            return {c for c in call_ids if c in self._by_call}

    def close(self, call_id: str) -> None:
        with self._lock:
            entry = self._by_call.pop(call_id, None)
            if entry is None:
                return
            states, event, _ = entry
            self._forget(states, event)
        event.set()

    def closed_since(self, scope: str, place: str, closes: int) -> bool:
        """Whether a capture filed under `place` closed after `self.closes` was `closes`."""
        with self._lock:
            return self._closed_places.get((scope, place), -1) > closes

    def pending(self, scope: str, digest: str) -> list[Closing]:
        """Open captures of replies to the conversation state `digest`."""
        with self._lock:
            return list(self._by_state.get((scope, digest), ()))

    def open_among(self, scope: str, digests: Any) -> set[str]:
        """The `digests` (conversation states) with a capture open now, in one look."""
        if not self._by_call:  # the common case: nothing open, no lock
            return set()
        with self._lock:
            return {d for d in digests if (scope, d) in self._by_state}

    def owners(self, scope: str, digest: str) -> list[tuple[Closing, Any]]:
        """`pending`, each with what was filed with it."""
        with self._lock:
            return [(e, self._owners.get(e)) for e in self._by_state.get((scope, digest), ())]

    def _forget(self, states: tuple[tuple[str, str], ...], event: Closing) -> None:
        self._owners.pop(event, None)
        self.closes += 1
        for state in states:
            events = self._by_state.get(state)
            if events is not None:
                events[:] = [e for e in events if e is not event]
                if not events:
                    del self._by_state[state]
        if len(states) > 1:
            recent = self._closed_places
            recent[states[1]] = self.closes
            recent.move_to_end(states[1])
            if len(recent) > _RECENT_CLOSES:
                recent.popitem(last=False)

    def _expire(self, now: float) -> None:
        # Insertion order is age order: the oldest entries come first.
        stale: list[str] = []
        for cid, (_, _, at) in self._by_call.items():
            if now - at <= self.max_age_seconds and len(self._by_call) - len(stale) < self.max_open:
                break
            stale.append(cid)
        for call_id in stale:
            states, event, _ = self._by_call.pop(call_id)
            self._forget(states, event)
            event.set()

    def __len__(self) -> int:
        return len(self._by_call)


def wait_any(events: list[Closing], deadline: float) -> bool:
    """Block until one of `events` is set (True) or the monotonic `deadline` passes (False)."""
    while not any(event.is_set() for event in events):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(remaining, 0.002))
    return True


async def await_any(events: list[Closing], deadline: float) -> bool:
    """`wait_any` for the event loop: polls, so the capture task on this same loop can run."""
    while not any(event.is_set() for event in events):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.002)
    return True
