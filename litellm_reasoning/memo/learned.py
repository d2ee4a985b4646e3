"""Policies a provider's refusal asked for (DeepSeek's and Kimi's "must be passed back"), as this
process learned them: per tenant scope and deployment, bounded, and forgotten after a while.

Per scope, because what one tenant's request provoked must never change what another tenant's
requests carry; bounded in entries (oldest first out) so client-chosen model names cannot grow
it; expiring, so a provider that changes its mind (or a refusal that was not what it seemed) is
not followed forever."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from ..core.policy import TurnPolicy

Key = tuple[str, str | None, str | None, str]
"""(scope, provider, model, dialect)."""


class LearnedPolicies:
    def __init__(
        self,
        *,
        max_entries: int = 4096,
        ttl_seconds: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._learned: OrderedDict[Key, tuple[TurnPolicy, float]] = OrderedDict()
        self._lock = threading.Lock()  # guards `_learned`; no I/O under it

    def __len__(self) -> int:
        return len(self._learned)

    def get(self, key: Key) -> TurnPolicy | None:
        if not self._learned:  # the common case: nothing learned, no lock
            return None
        with self._lock:
            entry = self._learned.get(key)
            if entry is None:
                return None
            if entry[1] <= self._clock():
                del self._learned[key]
                return None
            return entry[0]

    def put(self, key: Key, policy: TurnPolicy) -> None:
        with self._lock:
            self._learned.pop(key, None)
            self._learned[key] = (policy, self._clock() + self.ttl_seconds)
            while len(self._learned) > self.max_entries:
                self._learned.popitem(last=False)
