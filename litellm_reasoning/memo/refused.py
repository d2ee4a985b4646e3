"""Records a provider refused, remembered by this process so they are never restored again.

The store deletes them too (every replica then misses them); this set is what still holds while
the store is down or a replica's local layer has a copy, and it recognises the refused record by
its content (`healing.fingerprint`), so a later, different record under the same key restores.
Bounded by count, oldest first out; entries expire with the store's default TTL.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

from ..core.healing import fingerprint
from ..core.reasoning import Reasoning
from ..stores._base import DEFAULT_TTL_SECONDS


class RefusedRecords:
    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._refused: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()  # guards `_refused`; no I/O under it

    def add(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        expires = self._clock() + self.ttl_seconds
        with self._lock:
            for key, record in records.items():
                self._refused.pop((scope, key), None)
                self._refused[(scope, key)] = (fingerprint(record), expires)
            while len(self._refused) > self.max_entries:
                self._refused.popitem(last=False)

    def without_refused(
        self, scope: str, found: Mapping[str, Reasoning]
    ) -> Mapping[str, Reasoning]:
        """`found` without the records refused before (the same dict when none is)."""
        if not self._refused or not found:
            return found
        now = self._clock()
        with self._lock:
            hits = {key: self._refused.get((scope, key)) for key in found}
        refused = [
            key
            for key, hit in hits.items()
            if hit is not None and hit[1] > now and hit[0] == fingerprint(found[key])
        ]
        if not refused:
            return found
        return {key: record for key, record in found.items() if key not in refused}

    def any_of(self, scope: str, keys: Iterable[str]) -> bool:
        """Whether a record under one of `keys` was refused (whatever record it is now)."""
        if not self._refused:
            return False
        with self._lock:
            return any((scope, key) in self._refused for key in keys)

    def __len__(self) -> int:
        return len(self._refused)
