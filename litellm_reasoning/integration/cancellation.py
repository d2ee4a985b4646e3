"""Captures of cancelled calls: an asyncio task cancelled while its call is under way (a client
that went away, a timeout around `acompletion`) never reaches a reply hook, so its capture would
stay open and the conversation's next request would wait `capture_wait_seconds` for a reply that
never comes. Each task gets one done-callback that closes the captures its calls left open when
it ends cancelled."""

from __future__ import annotations

import asyncio
import weakref

from ..memo.pending import PendingCaptures

_PRUNE_AT = 64
"""Call ids a task may collect before the closed ones are forgotten (a long agent loop in one
task makes many calls)."""


class CancellationWatch:
    def __init__(self, pending: PendingCaptures) -> None:
        self._pending = pending
        self._calls: weakref.WeakKeyDictionary[asyncio.Task[object], set[str]] = (
            weakref.WeakKeyDictionary()
        )

    def watch(self, call_id: str) -> None:
        """Close `call_id`'s capture if the running task ends cancelled (outside a task, as in
        sync calls, nothing to watch)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return
        if task is None:
            return
        calls = self._calls.get(task)
        if calls is None:
            calls = self._calls[task] = set()
            task.add_done_callback(self._done)
        elif len(calls) >= _PRUNE_AT:
            calls.intersection_update(self._pending.open_ids(calls))
        calls.add(call_id)

    def _done(self, task: asyncio.Task[object]) -> None:
        calls = self._calls.pop(task, set())
        if task.cancelled():
            for call_id in calls:
                self._pending.close(call_id)
