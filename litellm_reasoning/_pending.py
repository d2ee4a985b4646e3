"""Captures a next request may have to wait for.

LiteLLM hands the assembled reply of a stream (and every sync reply) to callbacks only after
the caller already has it, so a client that sends its next request at once can arrive before
the capture is stored. Every call opens an entry under (scope, conversation digest); its capture
or failure closes it. A later request that misses a record waits, briefly and only when an
entry for exactly the conversation state that reply answered is still open.
"""

from __future__ import annotations

import asyncio
import threading
import time


class PendingCaptures:
    def __init__(self, *, max_age_seconds: float = 600.0) -> None:
        self.max_age_seconds = max_age_seconds
        self._by_call: dict[str, tuple[tuple[str, str], threading.Event, float]] = {}
        self._by_state: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()

    def open(self, call_id: str, scope: str, digest: str) -> None:
        now = time.monotonic()
        event = threading.Event()
        with self._lock:
            self._expire(now)
            self._by_call[call_id] = ((scope, digest), event, now)
            self._by_state[(scope, digest)] = event

    def close(self, call_id: str) -> None:
        with self._lock:
            entry = self._by_call.pop(call_id, None)
            if entry is None:
                return
            state, event, _ = entry
            if self._by_state.get(state) is event:
                del self._by_state[state]
        event.set()

    def pending(self, scope: str, digest: str) -> threading.Event | None:
        with self._lock:
            return self._by_state.get((scope, digest))

    def _expire(self, now: float) -> None:
        stale = [cid for cid, (_, _, at) in self._by_call.items() if now - at > self.max_age_seconds]
        for call_id in stale:
            state, event, _ = self._by_call.pop(call_id)
            if self._by_state.get(state) is event:
                del self._by_state[state]
            event.set()

    def __len__(self) -> int:
        return len(self._by_call)


def wait_all(events: list[threading.Event], timeout: float) -> bool:
    """Block until every event is set or `timeout` passes; True when all were set."""
    deadline = time.monotonic() + timeout
    return all(event.wait(max(0.0, deadline - time.monotonic())) for event in events)


async def await_all(events: list[threading.Event], timeout: float) -> bool:
    """`wait_all` for the event loop: polls so the capture task on this same loop can run."""
    deadline = time.monotonic() + timeout
    while not all(event.is_set() for event in events):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.002)
    return True
