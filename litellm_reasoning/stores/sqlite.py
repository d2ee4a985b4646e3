"""The embedded persistent store: one SQLite file, shared by every worker process of a proxy.

* WAL journal, so readers never wait for the writer and several processes can use one file;
  `timeout` bounds how long a call waits for another process's write lock (then it raises, and
  `ResilientStore` keeps the record locally until the file is writable again).
* Every write is one `BEGIN IMMEDIATE` transaction: expired rows go, the records are upserted
  (a concurrent writer of the same key replaces the whole row, never part of it), and the oldest
  records of the tenant holding the most are evicted while the file holds more than
  `max_records` or `max_bytes` (fair eviction: `_evict`).
* `PRAGMA user_version` carries the table layout's version (`STORE_SCHEMA`); a file written by a
  newer layout is refused rather than altered. Each row's JSON carries the record's own version.
* Totals are kept by triggers, so the caps cost no table scan.
"""

from __future__ import annotations

import heapq
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.reasoning import Reasoning
from ..core.shared_keys import Placement, exact_key, placement, to_place
from . import _codec
from ._base import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_TTL_SECONDS,
    Evictions,
    ReasoningStore,
    StoredRecord,
    TenantStats,
    fair_caps,
    scope_id,
)

logger = logging.getLogger("litellm_reasoning")

STORE_SCHEMA = 1
"""Version of the table layout below (`PRAGMA user_version`)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    scope_id TEXT NOT NULL,
    key TEXT NOT NULL,
    scope TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    size INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (scope_id, key)
);
CREATE INDEX IF NOT EXISTS records_by_created ON records (created);
CREATE INDEX IF NOT EXISTS records_by_expires ON records (expires);
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    records INTEGER NOT NULL,
    bytes INTEGER NOT NULL
);
INSERT OR IGNORE INTO totals VALUES (0, 0, 0);
CREATE TRIGGER IF NOT EXISTS records_added AFTER INSERT ON records BEGIN
    UPDATE totals SET records = records + 1, bytes = bytes + NEW.size WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS records_changed AFTER UPDATE OF size ON records BEGIN
    UPDATE totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS records_removed AFTER DELETE ON records BEGIN
    UPDATE totals SET records = records - 1, bytes = bytes - OLD.size WHERE id = 0;
END;
"""

_UPSERT = """
INSERT INTO records (scope_id, key, scope, created, expires, size, body)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (scope_id, key) DO UPDATE SET
    scope = excluded.scope, created = excluded.created, expires = excluded.expires,
    size = excluded.size, body = excluded.body
"""

Row = tuple[str, str, str, float, float, int, bytes]
"""(scope_id, key, scope, created, expires, size, body): one row of `records`."""

_CHUNK = 500
"""Keys per `IN (…)` (SQLite limits bound parameters)."""


class SqliteStore(ReasoningStore):
    """Records in one SQLite file (`sqlite:///path/to/file.db`)."""

    persistent = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_records: int = 200_000,
        max_bytes: int | None = 1024**3,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        timeout: float = 0.5,
        required_timeout: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path).expanduser()
        self.ttl_seconds = ttl_seconds
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.evictions = Evictions()
        self.max_record_bytes = max_record_bytes
        self.timeout = timeout
        self.required_timeout = max(required_timeout, timeout)
        """How long a write the next request cannot go without waits for the file's lock."""
        self._clock = clock
        # One connection per process, opened on first use (a forked worker opens its own).
        # `_lock` guards it: an sqlite3 connection must not be used by two threads at once.
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0

    # ------------------------------------------------------------------ connection

    def _connect(self) -> sqlite3.Connection:
        """Called with `_lock` held."""
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._prepare_retrying(conn)
        except BaseException:
            conn.close()
            raise
        self._connection, self._pid = conn, os.getpid()
        return conn

    def _prepare_retrying(self, conn: sqlite3.Connection) -> None:
        """`_prepare`, again while the file answers "locked" within `required_timeout`.

        Workers opening a new file together each switch it to WAL, which upgrades a shared lock
        to an exclusive one; SQLite answers the loser of that race "locked" at once, without
        waiting (its deadlock avoidance skips the busy handler). The switch is then done by the
        winner, and the loser's next try finds the file in WAL."""
        deadline = time.monotonic() + self.required_timeout
        pause = 0.005
        while True:
            try:
                self._prepare(conn)
                return
            except sqlite3.OperationalError as exc:
                # `_prepare` leaves no transaction open when it fails
                if not self.is_slow(exc) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL journal, and the tables of `STORE_SCHEMA` (created when the file lacks them)."""
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > STORE_SCHEMA:
            raise RuntimeError(
                f"{self.path} holds reasoning store schema {version}; this version of "
                f"litellm-reasoning reads schema {STORE_SCHEMA} (upgrade it, or use another "
                "file)"
            )
        if version < STORE_SCHEMA:
            # One transaction; every statement is idempotent, so workers racing to create
            # the file all succeed (waiting for each other as long as a required write).
            short_wait = f"PRAGMA busy_timeout = {round(self.timeout * 1000)};"
            script = (
                f"PRAGMA busy_timeout = {round(self.required_timeout * 1000)};"
                f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {STORE_SCHEMA};COMMIT;"
                + short_wait
            )
            try:
                conn.executescript(script)
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                conn.execute(short_wait)
                raise

    def open_now(self) -> None:
        """Open the file (and create its tables) before the first request needs it: the
        workers of a proxy starting together then do not race for the schema under load. A
        failure here is left to the first real call (and `ResilientStore`)."""
        try:
            with self._lock:
                self._connect()
        except Exception as exc:
            logger.debug("litellm-reasoning: opening %s failed (%r)", self.path, exc)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._connect()

    @contextmanager
    def _writing(self, wait: float | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed as a whole or not at all. `wait`: how long to
        wait for another process's write lock, when not `timeout`."""
        with self._lock:
            conn = self._connect()
            if wait is not None:
                conn.execute(f"PRAGMA busy_timeout = {round(wait * 1000)}")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            finally:
                if wait is not None:
                    conn.execute(f"PRAGMA busy_timeout = {round(self.timeout * 1000)}")

    def is_slow(self, exc: BaseException) -> bool:
        # Another process held the write lock past `timeout`: the file is fine, just busy.
        return isinstance(exc, sqlite3.OperationalError) and (
            "locked" in str(exc) or "busy" in str(exc)
        )

    # ------------------------------------------------------------------ contract

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        rows = self._select("key, body", scope, keys)
        return _codec.records_of(scope, [key for key, _ in rows], [body for _, body in rows])

    knows_sizes = True  # every release's rows carry `size`

    def sizes_many(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        rows = self._select("key, size, scope", scope, keys)
        return {key: int(size) for key, size, owner in rows if owner == scope}

    def _select(self, columns: str, scope: str, keys: Sequence[str]) -> list[Any]:
        """`columns` of the live rows of `scope` under `keys`."""
        rows: list[Any] = []
        sid, now = scope_id(scope), self._clock()
        with self._reading() as conn:
            for start in range(0, len(keys), _CHUNK):
                chunk = list(keys[start : start + _CHUNK])
                rows += conn.execute(
                    f"SELECT {columns} FROM records WHERE scope_id = ? AND expires > ? "
                    f"AND key IN ({','.join('?' * len(chunk))})",
                    (sid, now, *chunk),
                ).fetchall()
        return rows

    def put_many(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self._put(scope, records, None)

    def put_required(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        self._put(scope, records, self.required_timeout)

    def _put(self, scope: str, records: Mapping[str, Reasoning], wait: float | None) -> None:
        sid, now = scope_id(scope), self._clock()
        rows: list[Row] = [
            (sid, key, scope, now, now + self.ttl_seconds, size, body)
            for key, (size, body) in _codec.encode_many(
                scope, records, now, self.max_record_bytes
            ).items()
        ]
        if not rows:
            return
        placed = {
            key: writing
            for key, record in records.items()
            if (writing := to_place(record.conversation)) is not None
        }
        with self._writing(wait) as conn:
            conn.execute("DELETE FROM records WHERE expires <= ?", (now,))
            if placed:
                rows = self._placed(conn, sid, rows, placed)
            conn.executemany(_UPSERT, rows)
            self._evict(conn)

    def _placed(
        self, conn: sqlite3.Connection, sid: str, rows: list[Row], placed: Mapping[str, str]
    ) -> list[Row]:
        """`rows` placed by `shared_keys.placement` (`placed`: key -> the conversation its
        record is placed by) against the records their keys hold, in the write transaction
        (two writers of one key never both take it); a record a second conversation meets is
        marked shared where it is."""
        keys = [row[1] for row in rows if row[1] in placed]
        marks = ",".join("?" * len(keys))
        held = dict(
            conn.execute(
                f"SELECT key, body FROM records WHERE scope_id = ? AND key IN ({marks})",
                (sid, *keys),
            ).fetchall()
        )
        out: list[Row] = []
        for row in rows:
            key, body = row[1], row[6]
            writing = placed.get(key)
            if writing is None:
                out.append(row)
                continue
            first_body = held.get(key)
            first = _codec.conversation_of(first_body) if first_body is not None else None
            how = placement(first, writing)
            if how is Placement.KEY:
                out.append(row)
            elif how is Placement.KEY_MARKED:
                out.append((*row[:6], _codec.mark_shared(body)))
            else:
                if first_body is not None:
                    # Marked (SPLIT), or kept as new as the newest copy (EXACT): the mark never
                    # expires or is evicted before a copy.
                    conn.execute(
                        "UPDATE records SET body = ?, created = ?, expires = ? "
                        "WHERE scope_id = ? AND key = ?",
                        (
                            _codec.mark_shared(_codec.as_bytes(first_body)),
                            row[3],
                            row[4],
                            sid,
                            key,
                        ),
                    )
                out.append((row[0], exact_key(key, writing), *row[2:]))
        return out

    def delete_many(self, scope: str, keys: Sequence[str]) -> None:
        sid = scope_id(scope)
        with self._writing() as conn:
            for start in range(0, len(keys), _CHUNK):
                chunk = list(keys[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                conn.execute(
                    f"DELETE FROM records WHERE scope_id = ? AND key IN ({marks})", (sid, *chunk)
                )

    def _evict(self, conn: sqlite3.Connection) -> None:
        """While a cap is exceeded (inside the write transaction): the oldest records of the
        tenant holding the most of what is over (records, or bytes) go first, so one tenant's
        volume never pushes out another's records while it holds more than they do. Once over,
        one percent below the cap is made free, so the per-tenant count is not taken again on
        every write at the limit."""
        count, total = conn.execute("SELECT records, bytes FROM totals WHERE id = 0").fetchone()
        max_bytes = self.max_bytes
        if count <= self.max_records and (max_bytes is None or total <= max_bytes):
            return
        want_count = self.max_records - self.max_records // 100
        want_bytes = None if max_bytes is None else max_bytes - max_bytes // 100
        usage = {
            sid: [n, size]
            for sid, n, size in conn.execute(
                "SELECT scope_id, COUNT(*), SUM(size) FROM records GROUP BY scope_id"
            )
        }
        while usage and (count > want_count or (want_bytes is not None and total > want_bytes)):
            by_records = count > want_count
            column = 0 if by_records else 1
            ranked = heapq.nlargest(2, usage, key=lambda s: usage[s][column])
            sid = ranked[0]
            runner_up = usage[ranked[1]][column] if len(ranked) > 1 else 0
            # Down to the runner-up (then the two share what remains), at most what is over.
            excess = count - want_count if by_records else total - (want_bytes or 0)
            budget = max(1, min(excess, usage[sid][column] - runner_up + 1))
            doomed: list[tuple[int]] = []
            freed_records = freed_bytes = 0
            for rowid, size in conn.execute(
                "SELECT rowid, size FROM records WHERE scope_id = ? ORDER BY created", (sid,)
            ):
                if (freed_records if by_records else freed_bytes) >= budget:
                    break
                doomed.append((rowid,))
                freed_records += 1
                freed_bytes += size
            conn.executemany("DELETE FROM records WHERE rowid = ?", doomed)
            self.evictions.count(sid, freed_records)
            count, total = count - freed_records, total - freed_bytes
            usage[sid][0] -= freed_records
            usage[sid][1] -= freed_bytes
            if usage[sid][0] <= 0:
                del usage[sid]

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
            self._connection = None

    # ------------------------------------------------------------------ operator side

    def caps(self) -> dict[str, Any]:
        return fair_caps(self.max_records, self.max_bytes, self.ttl_seconds)

    def tenants(self) -> list[TenantStats]:
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT scope_id, MIN(scope), COUNT(*), SUM(size), MIN(created), MAX(created) "
                "FROM records WHERE expires > ? GROUP BY scope_id ORDER BY MIN(scope)",
                (self._clock(),),
            ).fetchall()
        return [TenantStats(scope, sid, n, size, lo, hi) for sid, scope, n, size, lo, hi in rows]

    def list_records(self, scope: str, *, limit: int = 100) -> list[StoredRecord]:
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT scope, key, created, expires, size, body FROM records "
                "WHERE scope_id IN (?, ?) AND expires > ? ORDER BY created DESC LIMIT ?",
                (scope_id(scope), scope, self._clock(), limit),
            ).fetchall()
        return [
            StoredRecord(s, key, created, expires, size, _codec.decode(body).record)
            for s, key, created, expires, size, body in rows
        ]

    def purge(self, *, scope: str | None = None, older_than: float | None = None) -> int:
        where: list[str] = ["1"]
        params: list[object] = []
        if scope is not None:
            where.append("scope_id IN (?, ?)")
            params += [scope_id(scope), scope]
        if older_than is not None:
            where.append("created < ?")
            params.append(self._clock() - older_than)
        with self._writing() as conn:
            return conn.execute(f"DELETE FROM records WHERE {' AND '.join(where)}", params).rowcount
