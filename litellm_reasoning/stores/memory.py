"""The in-process store: a bounded LRU with a TTL. Nothing survives the process."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from ..types import Reasoning
from ._base import DEFAULT_MAX_RECORD_BYTES, DEFAULT_TTL_SECONDS, ReasoningStore, record_size


class MemoryStore(ReasoningStore):
    """Records in a dict, least recently used evicted first once `max_records` is reached."""

    def __init__(
        self,
        *,
        max_records: int = 50_000,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_records = max_records
        self.ttl_seconds = ttl_seconds
        self.max_record_bytes = max_record_bytes
        self._clock = clock
        self._records: OrderedDict[tuple[str, str], tuple[float, Reasoning]] = OrderedDict()
        # Sync LiteLLM calls capture on its logging thread pool while requests read.
        self._lock = threading.Lock()

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        now = self._clock()
        found: dict[str, Reasoning] = {}
        with self._lock:
            for key in keys:
                entry = self._records.get((scope, key))
                if entry is None:
                    continue
                expires_at, record = entry
                if expires_at <= now:
                    del self._records[(scope, key)]
                    continue
                self._records.move_to_end((scope, key))
                found[key] = record
        return found

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        expires_at = self._clock() + self.ttl_seconds
        with self._lock:
            for key, record in records.items():
                if record_size(record) > self.max_record_bytes:
                    continue
                self._records[(scope, key)] = (expires_at, record)
                self._records.move_to_end((scope, key))
            while len(self._records) > self.max_records:
                self._records.popitem(last=False)

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return self.get_many(scope, keys)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self.put_many(scope, records)

    def __len__(self) -> int:
        return len(self._records)
