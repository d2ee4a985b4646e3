"""The store interface: a mapping from (tenant scope, message key) to a reasoning record.

The sync methods are the contract; the async twins default to a thread hop so a blocking
backend never stalls the event loop, and backends with native async override them.

Every record belongs to a tenant scope (`ns=…|key=<hashed virtual key>|team=…|user=…`). Keys
already embed a hash of the scope, and every backend also files records under `scope_id(scope)`
so a lookup can only ever match its own tenant's records, and operators can list and purge a
tenant (`litellm-reasoning store`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..accelerator import NATIVE
from ..core.reasoning import Reasoning
from ._threads import off_loop

DEFAULT_TTL_SECONDS = 24 * 3600
"""Long enough for a working day's agent session, short enough that nothing lingers."""
DEFAULT_MAX_RECORD_BYTES = 2 * 1024 * 1024
"""A record larger than this (reasoning text plus opaque data) is not kept."""


logger = logging.getLogger("litellm_reasoning")

FAIR_EVICTION = (
    "fair: when a cap is reached, the tenant holding the most loses its oldest records first"
)
"""How the embedded stores share their caps between tenants (`store stats`, the README)."""


def fair_caps(max_records: int, max_bytes: int | None, ttl_seconds: float) -> dict[str, Any]:
    """`ReasoningStore.caps` of a store that shares its caps fairly (memory, SQLite)."""
    return {
        "max_records": max_records,
        "max_bytes": max_bytes,
        "ttl_seconds": ttl_seconds,
        "per_tenant": FAIR_EVICTION,
    }


class Evictions:
    """Records a store's caps pushed out, per tenant: counted, and one warning per tenant and
    ten minutes (a tenant at the store's limit is worth knowing about; every eviction is not)."""

    WARN_EVERY = 600.0

    def __init__(self) -> None:
        self.by_scope_id: Counter[str] = Counter()
        self._warned: dict[str, float] = {}
        self._lock = threading.Lock()

    def count(self, sid: str, n: int = 1) -> None:
        """`n` records of the tenant `sid` (its `scope_id`) evicted."""
        now = time.monotonic()
        with self._lock:
            self.by_scope_id[sid] += n
            warn = now - self._warned.get(sid, -1e18) >= self.WARN_EVERY
            if warn:
                self._warned[sid] = now
                if len(self._warned) > 10_000:  # bounded: forget the oldest warnings
                    for old in sorted(self._warned, key=self._warned.__getitem__)[:5_000]:
                        del self._warned[old]
        if warn:
            logger.warning(
                "litellm-reasoning: the store is full and tenant %s holds the most: its oldest "
                "records are evicted first (%d so far); other tenants keep theirs. Raise the "
                "store's max_records / max_bytes if this tenant's conversations need them",
                sid,
                self.by_scope_id[sid],
            )


def record_size(record: Reasoning) -> int:
    """Approximate bytes a record holds (what the caps count)."""
    return sum(
        len(part.text) + len(part.signature or "") + len(part.data or "") for part in record.parts
    )


def scope_id(scope: str) -> str:
    """A short, stable id of a tenant scope (16 hex digits), what backends file records under."""
    return hashlib.blake2b(scope.encode(), digest_size=8, person=b"lr-scope").hexdigest()


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record as an operator sees it (`litellm-reasoning store show`)."""

    scope: str
    key: str
    created_at: float
    """Unix time it was written."""
    expires_at: float
    """Unix time it stops being served."""
    size: int
    """`record_size` of the record (what the caps count)."""
    record: Reasoning | None
    """None when the stored bytes could not be read back (another schema version, damage)."""


@dataclass(frozen=True, slots=True)
class TenantStats:
    """What a backend holds for one tenant (`litellm-reasoning store stats`)."""

    scope: str
    scope_id: str
    records: int
    bytes: int
    oldest: float | None
    newest: float | None


class LocalAnswer(dict[str, Reasoning]):
    """A read the backend did not answer (down, or late): only what the process holds itself.
    A caller does not ask again for more (another key, the previous release's) in vain."""


class StoreUnsupported(NotImplementedError):
    """The backend cannot do this (e.g. inspect a `memory://` store from another process)."""


class NotReplicated(Exception):
    """A write the backend took but could not confirm on a replica in time (Redis Sentinel's
    `WAIT`): a failover now would lose it, so the caller keeps the records to write again."""

    def __init__(self, message: str, primary: Any) -> None:
        super().__init__(message)
        self.primary = primary
        """Where the write went (`ReasoningStore.primary`)."""


class ReasoningStore(ABC):
    """Where captured reasoning waits for the next request of its conversation."""

    persistent: bool = False
    """Outlives the process and may be shared with other processes, maybe of another release
    (which then also needs records under the keys it knows: `identity.previous_tool_call_keys`)."""

    knows_sizes: bool = False
    """`sizes_many` answers without reading the records (what a reasoning budget decides
    from before it reads: the records it leaves out are never fetched)."""

    report_unreplicated: bool = False
    """Raise `NotReplicated` after a write no replica confirmed (the records are stored): set
    by a caller that keeps such records to write them again (`ResilientStore`); a bare store's
    writes keep the plain contract."""

    @abstractmethod
    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        """The records of `scope` found under `keys` (missing and expired keys are absent)."""

    @abstractmethod
    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        """Keep `records` under `scope`, replacing any record under the same key."""

    def get_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        """`get_many` for records the request cannot go without (the provider refuses it): a
        backend with a short I/O deadline may wait longer for these (Redis'
        `required_timeout`)."""
        return self.get_many(scope, keys)

    def put_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        """`put_many` for records the next request cannot go without: a backend may wait
        longer for this write (Redis' `required_timeout`, SQLite's lock wait)."""
        self.put_many(scope, records)

    def primary(self) -> Any:
        """Where writes go now, for a backend whose primary can change under it (Redis
        Sentinel: the primary's address); None otherwise. A write `NotReplicated` on one
        primary is written again once this names another."""
        return None

    def is_slow(self, exc: BaseException) -> bool:
        """Whether `exc` only says that the backend answered too late (its own I/O deadline,
        a lock held by another process), not that it is unreachable or broken."""
        return isinstance(exc, TimeoutError)

    def sizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        """`record_size` of the live records of `scope` under `keys`, without reading them
        (absent: no record; None: a record whose size this store does not keep, written by an
        earlier release); None when the store cannot tell (it keeps no sizes, or is down)."""
        return None

    async def asizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        if not self.knows_sizes:
            return None
        return await off_loop(lambda: self.sizes_many(scope, keys))

    def delete_many(self, scope: str, keys: Sequence[str]) -> None:
        """Remove the records of `scope` under `keys` (absent keys are ignored): what a
        provider refused is never restored again, by any process sharing the store."""
        raise StoreUnsupported(f"{type(self).__name__} cannot delete records")

    async def aget_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        return await off_loop(lambda: self.get_many(scope, keys))

    async def aget_required(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        if type(self).get_required is ReasoningStore.get_required:  # nothing to wait longer for
            return await self.aget_many(scope, keys)
        return await off_loop(lambda: self.get_required(scope, keys))

    async def aput_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        if type(self).put_required is ReasoningStore.put_required:  # nothing to wait longer for
            await self.aput_many(scope, records)
        else:
            await off_loop(lambda: self.put_required(scope, records))

    async def adelete_many(self, scope: str, keys: Sequence[str]) -> None:
        await off_loop(lambda: self.delete_many(scope, keys))

    async def aput_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        await off_loop(lambda: self.put_many(scope, records))

    # ------------------------------------------------------------------ operator side

    def tenants(self) -> list[TenantStats]:
        """Record counts, bytes and age per tenant (live records only)."""
        raise StoreUnsupported(f"{type(self).__name__} cannot list its tenants")

    def list_records(self, scope: str, *, limit: int = 100) -> list[StoredRecord]:
        """The newest `limit` live records of `scope` (a scope string or its `scope_id`)."""
        raise StoreUnsupported(f"{type(self).__name__} cannot list records")

    def purge(self, *, scope: str | None = None, older_than: float | None = None) -> int:
        """Remove the records of `scope` (a scope string or its `scope_id`; None: every tenant)
        written more than `older_than` seconds ago (None: any age). Returns how many went."""
        raise StoreUnsupported(f"{type(self).__name__} cannot purge")

    def caps(self) -> dict[str, Any]:
        """The bounds the backend enforces and how tenants share them (`store stats`)."""
        return {}

    def open_now(self) -> None:  # noqa: B027 - optional for backends that connect lazily
        """Connect (create files, tables) before the first request; never raises."""

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release connections and files."""

    async def aclose(self) -> None:
        """`close` from an event loop: also this loop's async connections (where a backend has
        any). The default runs `close` off the loop, since it may block (a last write-through)."""
        await off_loop(self.close)

    def __bool__(self) -> bool:
        # A store with a `__len__` of 0 must not read as "no store" (`store or MemoryStore()`).
        return True

    def __enter__(self) -> ReasoningStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def matches_scope(scope: str, wanted: str | None) -> bool:
    """`wanted` names `scope` by its text or its `scope_id` (None matches every scope)."""
    return wanted is None or wanted in (scope, scope_id(scope))


def off_the_collector(held: Iterable[tuple[Reasoning, object]]) -> None:
    """Take each record a store keeps (its parts, their tuple) and what holds it (`held`:
    record and holder pairs, one read's in one call) off the garbage collector's lists, with
    the accelerator (without it nothing changes).

    A kept record is long-lived and in no cycle (frozen, made of text and parsed JSON):
    tracked, the thousands a store holds make every full collection of the process longer (a
    LiteLLM proxy worker's are ~0.3 s already). Reference counting still frees them; a part's
    provider dict stays tracked, so a cycle a caller built inside it is still found."""
    if NATIVE is not None:
        objects: list[object] = []
        for record, holder in held:
            objects += (holder, record, record.parts, *record.parts)
        NATIVE.untrack(objects)
