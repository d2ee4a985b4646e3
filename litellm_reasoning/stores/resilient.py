"""`ResilientStore`: a persistent backend behind a local in-memory layer, failing open.

The backend (SQLite, Redis) may be down, slow, locked, read-only or full. Through this wrapper
every call still returns, within the backend's own timeout, and never raises:

* every record written also goes to a local `MemoryStore` bounded in records and bytes (64 MiB
  by default), so the records of a conversation written just before an outage still restore;
* a *slow* answer (the backend's own I/O deadline passed: a socket timeout, a file lock held
  by a sibling) fails only its own call: a read is answered from the local layer, a write is
  kept there and written through later. Slowness is measured by the backend on its own I/O,
  never on the event loop's clock, so a busy loop is never taken for a slow store;
* the store is *down* after a connection error or any other failure, or after `slow_limit`
  slow answers in a row of one kind (reads or writes): one warning is logged (not one per
  request), and until `retry_seconds` have passed calls do not touch the backend at all (no
  added delay). Reads are served from the local layer, writes are kept there as pending;
* after `retry_seconds` one call probes the backend (the others keep using the local layer);
  when it succeeds the store is *up* again: one warning says so, and the pending records are
  written through (oldest first, in chunks, stopping at the first failure);
* while up, the backend is authoritative: the local layer only answers for records that are
  still pending (so `litellm-reasoning store purge` is not undone by a replica's memory);
* a write the backend took but no replica confirmed (`NotReplicated`: Redis Sentinel's `WAIT`)
  is remembered with the primary that took it; when another primary takes over before a later
  write on the same one confirms it, it is written again (a failover loses no record);
* a *required* read (`get_required`: records the provider refuses the request without) may wait
  for the backend's longer deadline; while the store is down it is answered at once like any
  other read.

What can be lost: records beyond the local layer's bound (`local_records`, oldest first) while
the backend is down, and pending records when the process ends before the backend returns
(`close` tries one last write-through).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.reasoning import Reasoning
from ._base import (
    LocalAnswer,
    NotReplicated,
    ReasoningStore,
    StoredRecord,
    TenantStats,
    record_size,
)
from .memory import MemoryStore

logger = logging.getLogger("litellm_reasoning")

_FLUSH_CHUNK = 200


class ResilientStore(ReasoningStore):
    """`backend` with a local in-memory layer and an outage breaker; never raises."""

    def __init__(
        self,
        backend: ReasoningStore,
        *,
        local: MemoryStore | None = None,
        retry_seconds: float = 2.0,
        slow_limit: int = 2,
        name: str | None = None,
    ) -> None:
        self.backend = backend
        backend.report_unreplicated = True  # this layer writes such records again
        self.persistent = backend.persistent
        self.knows_sizes = backend.knows_sizes
        self.local = local if local is not None else MemoryStore(max_records=10_000)
        # Records are kept here under the keys they were written with, to be written through
        # as they are: the backend places a conversation's record (`shared_keys`).
        self.local.separate_conversations = False
        self.retry_seconds = retry_seconds
        self.name = name or type(backend).__name__
        self.slow_limit = slow_limit
        self.stats: Counter[str] = Counter()
        """outages, recoveries, failures, slow (answers past the backend's deadline), held (kept
        locally), written_through, lost, required_reads, records_read (found in the backend)."""
        # `_lock` guards the breaker state and `_pending`; no I/O ever happens under it.
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._pending: OrderedDict[tuple[str, str], int] = OrderedDict()
        """(scope, key) -> generation of records kept only locally, oldest first."""
        self._deletes: OrderedDict[tuple[str, str], int] = OrderedDict()
        """(scope, key) -> generation of deletes (refused records) the backend has not had yet:
        made with the write-through, so another worker never restores a refused record."""
        self._generation = 0
        self._flushing = False
        self._slow_in_a_row: Counter[str] = Counter()
        """"read"/"write" -> slow answers since that kind's last success."""
        self._flush_at = 0.0
        """While up: when pending records (kept after a slow write) may next be written."""
        self._unconfirmed: dict[Any, OrderedDict[tuple[str, str], None]] = {}
        """Primary -> the (scope, key) of writes it took that no replica confirmed
        (`NotReplicated`), oldest first; bounded by the local layer's size in all."""

    @property
    def available(self) -> bool:
        """False while the backend is considered down."""
        return self._down_since is None

    @property
    def pending(self) -> int:
        """Records kept only in the local layer, waiting for the backend."""
        return len(self._pending)

    # ------------------------------------------------------------------ breaker

    def _route(self) -> bool:
        """True when this call should use the backend (it is up, or this call is the probe)."""
        with self._lock:
            if self._down_since is None:
                return True
            now = time.monotonic()
            if now < self._retry_at:
                return False
            self._retry_at = now + self.retry_seconds
            return True

    def _failed(self, exc: Exception, doing: str, kind: str = "write") -> None:
        self.stats["failures"] += 1
        if self.backend.is_slow(exc):
            self.stats["slow"] += 1
            with self._lock:
                self._slow_in_a_row[kind] += 1
                late = self._slow_in_a_row[kind] < self.slow_limit
                self._flush_at = time.monotonic() + self.retry_seconds
            if late:
                # One late answer: this call goes on without the backend, the store stays up.
                logger.debug(
                    "litellm-reasoning: store %s answered too late while %s (%r)",
                    self.name,
                    doing,
                    exc,
                )
                return
        now = time.monotonic()
        with self._lock:
            first = self._down_since is None
            if first:
                self._down_since = now
            self._retry_at = now + self.retry_seconds
        if not first:
            logger.debug("litellm-reasoning: store %s still unavailable (%r)", self.name, exc)
            return
        self.stats["outages"] += 1
        logger.warning(
            "litellm-reasoning: reasoning store %s unavailable while %s (%s: %s); requests go on "
            "with a local in-memory layer of up to %d records, written through when it returns "
            "(retrying every %.1f s)",
            self.name,
            doing,
            type(exc).__name__,
            exc,
            self.local.max_records,
            self.retry_seconds,
        )

    def _succeeded(self, kind: str) -> bool:
        """After a backend call worked. True when this call must write the pending records
        through: the store only counts as available again once they are all written (while
        up, records kept after a slow write are tried again once per `retry_seconds`; records
        a former primary held unconfirmed, at once)."""
        self._after_failover()
        with self._lock:
            self._slow_in_a_row[kind] = 0
            if self._flushing:
                return False
            owed = self._pending or self._deletes
            if self._down_since is None:
                if not owed or time.monotonic() < self._flush_at:
                    return False
                self._flushing = True
                return True
            if owed:
                self._flushing = True
                return True
            down_since, self._down_since = self._down_since, None
        self._recovered(down_since, 0)
        return False

    def _recovered(self, down_since: float, written: int) -> None:
        self.stats["recoveries"] += 1
        logger.warning(
            "litellm-reasoning: reasoning store %s is available again after %.1f s; %d record(s) "
            "kept locally were written through",
            self.name,
            time.monotonic() - down_since,
            written,
        )

    def _owe(
        self,
        owed: OrderedDict[tuple[str, str], int],
        superseded: OrderedDict[tuple[str, str], int],
        scope: str,
        keys: Sequence[str],
    ) -> int:
        """Enter `keys` in `owed` (pending writes or deletes) with a new generation, out of
        `superseded` (the other kind); the oldest beyond the local layer's size are dropped:
        how many."""
        dropped = 0
        with self._lock:
            for key in keys:
                self._generation += 1
                owed[(scope, key)] = self._generation
                owed.move_to_end((scope, key))
                superseded.pop((scope, key), None)
            while len(owed) > self.local.max_records:
                owed.popitem(last=False)
                dropped += 1
        return dropped

    def _hold(self, scope: str, keys: Sequence[str]) -> None:
        """`keys` are only in the local layer: remember to write them through (a newer write
        supersedes a delete not made yet)."""
        self.stats["lost"] += self._owe(self._pending, self._deletes, scope, keys)
        self.stats["held"] += len(keys)

    def _release(self, scope: str, keys: Sequence[str], marks: Mapping[str, int] | None) -> None:
        """`keys` reached the backend (`marks`: only if not held again since)."""
        with self._lock:
            for key in keys:
                mark = self._pending.get((scope, key))
                if mark is not None and (marks is None or marks.get(key) == mark):
                    del self._pending[(scope, key)]

    def _hold_delete(self, scope: str, keys: Sequence[str]) -> None:
        """`keys` are gone locally but maybe not from the backend: delete them there later."""
        self._owe(self._deletes, self._pending, scope, keys)

    def _delete_batches(self) -> list[tuple[str, list[str], dict[str, int]]]:
        """Deletes the backend has not had, by scope: (scope, keys, generation marks)."""
        with self._lock:
            by_scope: defaultdict[str, dict[str, int]] = defaultdict(dict)
            for (scope, key), mark in self._deletes.items():
                by_scope[scope][key] = mark
        return [(scope, list(marks), marks) for scope, marks in by_scope.items()]

    def _deleted(self, scope: str, marks: Mapping[str, int]) -> None:
        with self._lock:
            for key, mark in marks.items():
                if self._deletes.get((scope, key)) == mark:
                    del self._deletes[(scope, key)]

    def _batches(self) -> Iterator[tuple[str, dict[str, Reasoning], dict[str, int]]]:
        """Pending records by scope, in chunks: (scope, records, generation marks)."""
        with self._lock:
            by_scope: defaultdict[str, dict[str, int]] = defaultdict(dict)
            for (scope, key), mark in self._pending.items():
                by_scope[scope][key] = mark
        for scope, marks in by_scope.items():
            keys = list(marks)
            for start in range(0, len(keys), _FLUSH_CHUNK):
                chunk = keys[start : start + _FLUSH_CHUNK]
                records = self.local.get_many(scope, chunk)
                self._release(scope, [k for k in chunk if k not in records], marks)  # expired
                if records:
                    yield scope, records, marks

    def _flushed(self, scope: str, records: Mapping[str, Reasoning], marks: dict[str, int]) -> int:
        self._release(scope, list(records), marks)
        self.stats["written_through"] += len(records)
        return len(records)

    def _flush_ended(self, written: int, exc: Exception | None) -> None:
        with self._lock:
            self._flushing = False
            down_since = self._down_since
            if exc is None and not self._pending and not self._deletes:
                self._down_since = None
            if exc is None:
                self._slow_in_a_row["write"] = 0
        if exc is not None:
            self._failed(exc, "writing records kept locally through")
        elif down_since is not None and not self._pending and not self._deletes:
            self._recovered(down_since, written)

    def _merge(
        self, scope: str, keys: Sequence[str], found: dict[str, Reasoning] | None
    ) -> dict[str, Reasoning]:
        """The backend's answer, completed from the local layer (all of it when down)."""
        if found is None:
            return LocalAnswer(self.local.get_many(scope, keys))
        with self._lock:
            local = [k for k in keys if k not in found and (scope, k) in self._pending]
        if local:
            found.update(self.local.get_many(scope, local))
        return found

    # ------------------------------------------------------------------ sync

    def _flush(self) -> None:
        written = 0
        try:
            for scope, keys, marks in self._delete_batches():
                self.backend.delete_many(scope, keys)
                self._deleted(scope, marks)
            for scope, records, marks in self._batches():
                try:
                    self.backend.put_many(scope, records)
                except NotReplicated as exc:
                    self._unconfirmed_write(scope, records, exc)
                written += self._flushed(scope, records, marks)
        except Exception as exc:
            self._flush_ended(written, exc)
        else:
            self._flush_ended(written, None)

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return self._get(scope, keys, required=False)

    def get_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return self._get(scope, keys, required=True)

    def _get(self, scope: str, keys: Sequence[str], *, required: bool) -> dict[str, Reasoning]:
        found: dict[str, Reasoning] | None = None
        flush = False
        if keys and self._route():
            try:
                if required:
                    self.stats["required_reads"] += 1
                    found = self.backend.get_required(scope, keys)
                else:
                    found = self.backend.get_many(scope, keys)
            except Exception as exc:
                self._failed(exc, "reading", "read")
            else:
                self.stats["records_read"] += len(found)
                flush = self._succeeded("read")
        # Merged before the write-through: it clears the pending marks the merge goes by, and
        # the backend's answer predates it.
        merged = self._merge(scope, keys, found)
        if flush:
            self._flush()
        return merged

    def sizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        # `asizes_many`: this on a thread (the base class's): one small answer, no second path
        if not self._route():  # down: the records are read from the local layer
            return None
        try:
            sizes = self.backend.sizes_many(scope, keys)
        except Exception as exc:
            self._failed(exc, "reading record sizes", "read")
            return None
        if sizes is None:
            return None
        # Records not written through yet: sized from the local layer a read would merge.
        held = self._merge(scope, keys, {})
        sizes.update((key, record_size(record)) for key, record in held.items())
        if self._succeeded("read"):
            self._flush()
        return sizes

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self._put(scope, records, required=False)

    def put_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self._put(scope, records, required=True)

    def _put(self, scope: str, records: Mapping[str, Reasoning], *, required: bool) -> None:
        self.local.put_many(scope, records)
        if not records:
            return
        if not self._route():
            self._hold(scope, list(records))
            return
        try:
            if required:
                self.backend.put_required(scope, records)
            else:
                self.backend.put_many(scope, records)
        except NotReplicated as exc:
            self._unconfirmed_write(scope, records, exc)
        except Exception as exc:
            # Held before the outage is declared: a read on another thread that succeeds in
            # between must find them pending (and write them through), not call the store
            # recovered while this write is still lost.
            self._hold(scope, list(records))
            self._failed(exc, "writing")
            return
        else:
            self._replicas_caught_up()
        self._release(scope, list(records), None)
        if self._succeeded("write"):
            self._flush()

    # ------------------------------------------------------------------ replicas

    def _unconfirmed_write(
        self, scope: str, records: Mapping[str, Reasoning], exc: NotReplicated
    ) -> None:
        """The backend took the write but no replica confirmed it in time: the records are
        remembered with the primary that holds them (kept in the local layer), so they are
        written again if another primary takes over before a later write confirms them."""
        self.stats["unreplicated"] += len(records)
        with self._lock:
            entries = self._unconfirmed.setdefault(exc.primary, OrderedDict())
            for key in records:
                entries[(scope, key)] = None
                entries.move_to_end((scope, key))
            while sum(map(len, self._unconfirmed.values())) > self.local.max_records:
                oldest = next(iter(self._unconfirmed))
                self._unconfirmed[oldest].popitem(last=False)
                if not self._unconfirmed[oldest]:
                    del self._unconfirmed[oldest]

    def _replicas_caught_up(self) -> None:
        """A write on the current primary was confirmed: replication is one ordered stream,
        so every earlier write to it was too."""
        if self._unconfirmed:
            primary = self.backend.primary()
            with self._lock:
                self._unconfirmed.pop(primary, None)

    def _after_failover(self) -> bool:
        """Records written unconfirmed to a primary that is not the primary any more: owed
        again (written through with the pending records, now). True when there are any."""
        if not self._unconfirmed:
            return False
        primary = self.backend.primary()
        with self._lock:
            gone = [p for p in self._unconfirmed if p != primary]
            lost = [entry for p in gone for entry in self._unconfirmed.pop(p)]
        if not lost:
            return False
        self.stats["rewritten_after_failover"] += len(lost)
        by_scope: defaultdict[str, list[str]] = defaultdict(list)
        for scope, key in lost:
            by_scope[scope].append(key)
        for scope, keys in by_scope.items():
            self._owe(self._pending, self._deletes, scope, keys)
        with self._lock:
            self._flush_at = 0.0
        logger.warning(
            "litellm-reasoning: the store %s has a new primary; %d record(s) no replica had "
            "confirmed are written again",
            self.name,
            len(lost),
        )
        return True

    def delete_many(self, scope: str, keys: Sequence[str]) -> None:
        self.local.delete_many(scope, keys)
        self._release(scope, keys, None)
        if not keys:
            return
        if not self._route():
            self._hold_delete(scope, keys)  # made with the write-through
            return
        try:
            self.backend.delete_many(scope, keys)
        except Exception as exc:
            self._hold_delete(scope, keys)
            self._failed(exc, "deleting")
            return
        if self._succeeded("write"):
            self._flush()

    # ------------------------------------------------------------------ async

    async def _aflush(self) -> None:
        written = 0
        try:
            for scope, keys, marks in self._delete_batches():
                await self.backend.adelete_many(scope, keys)
                self._deleted(scope, marks)
            for scope, records, marks in self._batches():
                try:
                    await self.backend.aput_many(scope, records)
                except NotReplicated as exc:
                    self._unconfirmed_write(scope, records, exc)
                written += self._flushed(scope, records, marks)
        except Exception as exc:
            self._flush_ended(written, exc)
        else:
            self._flush_ended(written, None)

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await self._aget(scope, keys, required=False)

    async def aget_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await self._aget(scope, keys, required=True)

    async def _aget(
        self, scope: str, keys: Sequence[str], *, required: bool
    ) -> dict[str, Reasoning]:
        found: dict[str, Reasoning] | None = None
        flush = False
        if keys and self._route():
            try:
                if required:
                    self.stats["required_reads"] += 1
                    found = await self.backend.aget_required(scope, keys)
                else:
                    found = await self.backend.aget_many(scope, keys)
            except Exception as exc:
                self._failed(exc, "reading", "read")
            else:
                self.stats["records_read"] += len(found)
                flush = self._succeeded("read")
        merged = self._merge(scope, keys, found)  # before the write-through (see get_many)
        if flush:
            await self._aflush()
        return merged

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await self._aput(scope, records, required=False)

    async def aput_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await self._aput(scope, records, required=True)

    async def _aput(self, scope: str, records: Mapping[str, Reasoning], *, required: bool) -> None:
        self.local.put_many(scope, records)
        if not records:
            return
        if not self._route():
            self._hold(scope, list(records))
            return
        started = time.monotonic()
        try:
            if required:
                await self.backend.aput_required(scope, records)
            else:
                await self.backend.aput_many(scope, records)
        except NotReplicated as exc:
            self._unconfirmed_write(scope, records, exc)
        except Exception as exc:
            # Held before the outage is declared: a read on another thread that succeeds in
            # between must find them pending (and write them through), not call the store
            # recovered while this write is still lost.
            self._hold(scope, list(records))
            self._failed(
                exc,
                f"writing{' (required)' if required else ''} for "
                f"{time.monotonic() - started:.2f} s",
            )
            return
        else:
            self._replicas_caught_up()
        self._release(scope, list(records), None)
        if self._succeeded("write"):
            await self._aflush()

    async def adelete_many(self, scope: str, keys: Sequence[str]) -> None:
        self.local.delete_many(scope, keys)
        self._release(scope, keys, None)
        if not keys:
            return
        if not self._route():
            self._hold_delete(scope, keys)  # made with the write-through
            return
        try:
            await self.backend.adelete_many(scope, keys)
        except Exception as exc:
            self._hold_delete(scope, keys)
            self._failed(exc, "deleting")
            return
        if self._succeeded("write"):
            await self._aflush()

    # ------------------------------------------------------------------ lifecycle, operator side

    def close(self) -> None:
        """One last write-through of pending records (stops at the first failure), then close.

        Tried whatever the retry window says: records kept after one slow write would otherwise
        be lost with the process."""
        if self._pending or self._deletes:
            with self._lock:
                flush = not self._flushing
                self._flushing = True
            if flush:
                self._flush()
        try:
            self.backend.close()
        except Exception as exc:
            logger.debug("litellm-reasoning: closing store %s failed (%r)", self.name, exc)

    async def aclose(self) -> None:
        """`close`, with the backend's own `aclose` (its async connections on this loop)."""
        flush = False
        if self._pending or self._deletes:
            with self._lock:
                flush = not self._flushing
                self._flushing = True
        if flush:
            await self._aflush()
        try:
            await self.backend.aclose()
        except Exception as exc:
            logger.debug("litellm-reasoning: closing store %s failed (%r)", self.name, exc)

    def tenants(self) -> list[TenantStats]:
        return self.backend.tenants()

    def caps(self) -> dict[str, Any]:
        return self.backend.caps()

    def list_records(self, scope: str, *, limit: int = 100) -> list[StoredRecord]:
        return self.backend.list_records(scope, limit=limit)

    def purge(self, *, scope: str | None = None, older_than: float | None = None) -> int:
        removed = self.backend.purge(scope=scope, older_than=older_than)
        self.local.purge(scope=scope, older_than=older_than)
        return removed
