"""The in-process store: a bounded LRU with a TTL. Nothing survives the process."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.reasoning import Reasoning
from ..core.shared_keys import Placement, exact_key, marked, placement, to_place
from ._base import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_TTL_SECONDS,
    Evictions,
    ReasoningStore,
    StoredRecord,
    TenantStats,
    fair_caps,
    matches_scope,
    off_the_collector,
    record_size,
    scope_id,
)


@dataclass(slots=True)
class _Tenant:
    keys: OrderedDict[str, Reasoning] = field(default_factory=OrderedDict)
    """Key -> its record (the one `_records` holds), least recently used first: a read finds
    its records here in C, without a tuple per key."""
    bytes: int = 0


@dataclass(slots=True)
class _Entry:
    created_at: float
    expires_at: float
    size: int
    record: Reasoning


DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""What an in-process store holds at most by default (reasoning text and opaque data)."""

_SWEEP_EVERY = 1000
"""Writes between two sweeps of expired records (reads drop the expired ones they meet)."""


class MemoryStore(ReasoningStore):
    """Records in a dict. Once `max_records` or `max_bytes` is reached, the tenant holding the
    most (records, or bytes) loses its least recently used record first (fair eviction: one
    tenant's volume never pushes out another's records while it holds more than they do);
    expired records go as they are met and in a sweep every `_SWEEP_EVERY` writes. `clock` is
    the wall clock (injectable for tests)."""

    def __init__(
        self,
        *,
        max_records: int = 50_000,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        clock: Callable[[], float] = time.time,
        separate_conversations: bool = True,
    ) -> None:
        self.separate_conversations = separate_conversations
        """Place records with a conversation digest by `shared_keys.placement` (off in a
        `ResilientStore`'s local layer: the backend places them)."""
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.ttl_seconds = ttl_seconds
        self.max_record_bytes = max_record_bytes
        self._clock = clock
        self._records: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        """Every record, in the order written (a rewrite moves it to the end)."""
        self._by_scope: dict[str, _Tenant] = {}
        """Each tenant's keys, least recently used first, and its bytes."""
        self._bytes = 0
        self._expiry_floor = math.inf
        """No record held expires before this (a lower bound): until then a read needs no
        per-record expiry check."""
        self._last_expiry = -math.inf
        self._in_order = True
        """Whether every record expires no earlier than those written before it (a clock that
        never went back and one TTL): then the oldest written is the next to expire."""
        self.evictions = Evictions()
        self._writes = 0
        # Sync LiteLLM calls capture on its logging thread pool while requests read; the lock
        # guards `_records` and `_bytes` (no I/O ever happens under it).
        self._lock = threading.Lock()

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        now = self._clock()
        with self._lock:
            if now >= self._expiry_floor:
                self._expire_oldest(now)
            tenant = self._by_scope.get(scope)
            if tenant is None:
                return {}
            held = tenant.keys
            if now < self._expiry_floor:  # nothing has expired: an agent loop's common read
                found = {
                    key: record
                    for key, record in zip(keys, map(held.get, keys), strict=True)
                    if record is not None
                }
            else:  # expiries out of write order: each record checked
                found = {}
                for key in keys:
                    entry = self._records.get((scope, key))
                    if entry is None:
                        continue
                    if entry.expires_at <= now:
                        self._drop((scope, key))
                        continue
                    found[key] = entry.record
            # Each found key becomes the tenant's most recently used (in C).
            deque(map(held.move_to_end, found), maxlen=0)
        return found

    def _expire_oldest(self, now: float) -> None:
        """Drop the expired records from the oldest written on and move the floor to the next
        expiry, where expiries follow the write order (a long-running process reads past the
        first records' TTL all the time). Under the lock."""
        if not self._in_order:
            return
        records = self._records
        expired = []
        for where, entry in records.items():
            if entry.expires_at > now:
                self._expiry_floor = entry.expires_at
                break
            expired.append(where)
        else:
            self._expiry_floor = math.inf
        for where in expired:
            self._drop(where)

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        now = self._clock()
        with self._lock:
            for key, record in records.items():
                size = record_size(record)
                if size > self.max_record_bytes:
                    continue
                writing = to_place(record.conversation) if self.separate_conversations else None
                if writing is not None:
                    key, record = self._placed(scope, key, record, writing, now)
                self._set(scope, key, record, size, now)
            self._writes += 1
            if self._writes % _SWEEP_EVERY == 0:
                for where in [w for w, e in self._records.items() if e.expires_at <= now]:
                    self._drop(where)
                self._expiry_floor = min(
                    (e.expires_at for e in self._records.values()), default=math.inf
                )
            self._evict()

    def _set(self, scope: str, key: str, record: Reasoning, size: int, now: float) -> None:
        self._drop((scope, key))
        expires_at = now + self.ttl_seconds
        entry = self._records[(scope, key)] = _Entry(now, expires_at, size, record)
        off_the_collector([(record, entry)])
        self._expiry_floor = min(self._expiry_floor, expires_at)
        if expires_at < self._last_expiry:
            self._in_order = False  # from now on only the sweep moves the floor
        self._last_expiry = max(self._last_expiry, expires_at)
        tenant = self._by_scope.setdefault(scope, _Tenant())
        tenant.keys[key] = record
        tenant.bytes += size
        self._bytes += size

    def _placed(
        self, scope: str, key: str, record: Reasoning, writing: str, now: float
    ) -> tuple[str, Reasoning]:
        """Where `record` of conversation `writing` goes (`shared_keys.placement`), marking the
        record under `key` shared when a second conversation writes it. Under the lock."""
        entry = self._records.get((scope, key))
        held = entry.record if entry is not None and entry.expires_at > now else None
        first = held.conversation if held is not None else None
        how = placement(first, writing)
        if how is Placement.KEY:
            return key, record
        if how is Placement.KEY_MARKED:
            return key, dataclasses.replace(record, conversation=marked(writing))
        if entry is not None and held is not None and first is not None:
            # Marked (SPLIT), or kept as new as the newest copy (EXACT): the mark never expires
            # or is evicted before a copy, which would let the key look single-writer again.
            shared = dataclasses.replace(held, conversation=marked(first))
            self._set(scope, key, shared, entry.size, now)
        return exact_key(key, writing), record

    def _evict(self) -> None:
        """While a cap is exceeded: the oldest record of the tenant holding the most of what is
        over (records, or bytes) goes."""
        while len(self._records) > self.max_records or (
            self.max_bytes is not None and self._bytes > self.max_bytes and self._records
        ):
            if len(self._records) > self.max_records:
                scope = max(self._by_scope, key=lambda s: len(self._by_scope[s].keys))
            else:
                scope = max(self._by_scope, key=lambda s: self._by_scope[s].bytes)
            key = next(iter(self._by_scope[scope].keys))
            self._drop((scope, key))
            self.evictions.count(scope_id(scope))

    def delete_many(self, scope: str, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._drop((scope, key))

    async def adelete_many(self, scope: str, keys: Sequence[str]) -> None:
        self.delete_many(scope, keys)

    def _drop(self, where: tuple[str, str]) -> None:
        entry = self._records.pop(where, None)
        if entry is not None:
            self._bytes -= entry.size
            tenant = self._by_scope[where[0]]
            del tenant.keys[where[1]]
            tenant.bytes -= entry.size
            if not tenant.keys:
                del self._by_scope[where[0]]

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return self.get_many(scope, keys)

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self.put_many(scope, records)

    # ------------------------------------------------------------------ operator side

    def _live(self) -> list[tuple[str, str, _Entry]]:
        now = self._clock()
        with self._lock:
            return [(s, k, e) for (s, k), e in self._records.items() if e.expires_at > now]

    def caps(self) -> dict[str, Any]:
        return fair_caps(self.max_records, self.max_bytes, self.ttl_seconds)

    def tenants(self) -> list[TenantStats]:
        by_scope: dict[str, list[_Entry]] = {}
        for scope, _, entry in self._live():
            by_scope.setdefault(scope, []).append(entry)
        return [
            TenantStats(
                scope=scope,
                scope_id=scope_id(scope),
                records=len(entries),
                bytes=sum(e.size for e in entries),
                oldest=min(e.created_at for e in entries),
                newest=max(e.created_at for e in entries),
            )
            for scope, entries in sorted(by_scope.items())
        ]

    def list_records(self, scope: str, *, limit: int = 100) -> list[StoredRecord]:
        rows = [
            StoredRecord(s, k, e.created_at, e.expires_at, e.size, e.record)
            for s, k, e in self._live()
            if matches_scope(s, scope)
        ]
        return sorted(rows, key=lambda r: r.created_at, reverse=True)[:limit]

    def purge(self, *, scope: str | None = None, older_than: float | None = None) -> int:
        cutoff = None if older_than is None else self._clock() - older_than
        with self._lock:
            doomed = [
                where
                for where, entry in self._records.items()
                if matches_scope(where[0], scope) and (cutoff is None or entry.created_at < cutoff)
            ]
            for where in doomed:
                self._drop(where)
        return len(doomed)

    def __len__(self) -> int:
        return len(self._records)

    @property
    def size(self) -> int:
        """Bytes held (`record_size` summed)."""
        return self._bytes
