"""The bytes a persistent backend keeps per record, shared by SQLite and Redis.

`{"s": scope, "t": created unix time, "r": Reasoning.to_json()}` as compact UTF-8 JSON, led by
`"c": Reasoning.conversation` for a record that has one (`shared_keys`): first, so a store can
read and mark it without decoding the record (`conversation_of`, `mark_shared`, Redis' write
script); earlier releases ignore it. The record carries its own schema version
(`types.SCHEMA_VERSION`); bytes that do not decode (another version, damage) read as a missing
record, never as an error.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, cast

from ..core.reasoning import Reasoning
from ..core.shared_keys import SHARED
from ._base import off_the_collector, record_size

try:  # installed with LiteLLM's proxy; the json module does everything it does, slower
    _orjson: Any = importlib.import_module("orjson")
except ImportError:  # the SDK-only install without it
    _orjson = None

logger = logging.getLogger("litellm_reasoning")


@dataclass(frozen=True, slots=True)
class Decoded:
    scope: str
    created_at: float
    record: Reasoning | None
    size: int = 0
    """The length of the stored bytes it was decoded from (what the decode cache checks)."""


_new = object.__new__
_set_scope, _set_created_at, _set_record, _set_size = (
    Decoded.__dict__[name].__set__ for name in ("scope", "created_at", "record", "size")
)


def _decoded(scope: str, created_at: float, record: Reasoning | None, size: int) -> Decoded:
    """`Decoded(scope, created_at, record, size)`, built slot by slot: a frozen dataclass's
    `__init__` costs several times more, once per record a process first reads."""
    decoded: Decoded = _new(Decoded)
    _set_scope(decoded, scope)
    _set_created_at(decoded, created_at)
    _set_record(decoded, record)
    _set_size(decoded, size)
    return decoded


CONVERSATION_LEAD = b'{"c":"'
"""How the bytes of a record with a conversation digest begin (the digest follows)."""

_CONVERSATION = re.compile(rb'\{"c":"([^"\\]*)"')


def encode(scope: str, record: Reasoning, created_at: float) -> bytes:
    payload: dict[str, object] = {}
    if record.conversation is not None:
        payload["c"] = record.conversation
    payload.update(s=scope, t=round(created_at, 3), r=record.to_json())
    if _orjson is not None and not any(part.details for part in record.parts):
        # The same bytes as `json.dumps` below (tests/stores/test_codec_bytes.py) at a twentieth
        # of its cost. Provider `details` may hold what the two write differently (1e-05, NaN,
        # integer keys): those records take json.
        try:
            return cast(bytes, _orjson.dumps(payload))
        except _orjson.JSONEncodeError:
            pass  # a lone surrogate, which orjson refuses: escaped below
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone UTF-16 surrogate (an emoji split across two stream chunks) is valid JSON but
        # not UTF-8: escaped, it reads back as the same string (0.1.0 reads it too).
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode()


def encode_many(
    scope: str, records: Mapping[str, Reasoning], created_at: float, max_size: int
) -> dict[str, tuple[int, bytes]]:
    """`{key: (record_size, bytes)}` of the records small enough to keep. A record that cannot
    be encoded at all is left out alone, with one warning: it is that record's problem, not an
    outage of the backend (which would hold every tenant's writes back)."""
    out: dict[str, tuple[int, bytes]] = {}
    for key, record in records.items():
        size = record_size(record)
        if size > max_size:
            continue
        try:
            out[key] = (size, encode(scope, record, created_at))
        except Exception as exc:
            logger.warning(
                "litellm-reasoning: a reasoning record could not be encoded (%s); it is not kept",
                type(exc).__name__,
            )
    return out


def decode(raw: bytes | str) -> Decoded:
    """The stored record; `record` is None when it cannot be read back."""
    # Anything under our keys may be junk (another program, damage): one unreadable record,
    # never an error of the store. The log names the kind of problem only, never the bytes.
    size = len(raw) if type(raw) is bytes else len(as_bytes(raw))
    try:
        payload = _loads(raw)
        # One string per tenant however many records: a read compares each record's scope
        # with the request's, and one object stays in the CPU's cache where thousands would not.
        scope = sys.intern(str(payload.get("s", "")))
        created = float(payload.get("t", 0.0))
    except Exception as exc:
        logger.debug("litellm-reasoning: unreadable stored record (%s)", type(exc).__name__)
        return _decoded("", 0.0, None, size)
    try:
        conversation = payload.get("c")
        record: Reasoning | None = Reasoning.from_json(
            payload["r"], conversation=conversation if isinstance(conversation, str) else None
        )
    except Exception as exc:
        logger.debug("litellm-reasoning: unreadable stored record (%s)", type(exc).__name__)
        record = None
    return _decoded(scope, created, record, size)


def _loads(raw: bytes | str) -> Any:
    """The JSON value of `raw`: by orjson where it reads it (a fifth of json's cost), by json
    for the rest (an escaped lone surrogate, which orjson refuses, and junk, which json names)."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def as_bytes(raw: bytes | str) -> bytes:
    return raw.encode() if isinstance(raw, str) else bytes(raw)


def conversation_of(raw: bytes | str) -> str | None:
    """The conversation digest stored bytes lead with, without decoding them (None: none)."""
    found = _CONVERSATION.match(as_bytes(raw))
    return found.group(1).decode() if found else None


def mark_shared(raw: bytes) -> bytes:
    """The stored bytes of a record with a conversation digest, that digest marked shared
    (what Redis' write script does in Lua)."""
    if not raw.startswith(CONVERSATION_LEAD) or raw[len(CONVERSATION_LEAD) :].startswith(
        SHARED.encode()
    ):
        return raw
    return CONVERSATION_LEAD + SHARED.encode() + raw[len(CONVERSATION_LEAD) :]


_SIZE_OF = attrgetter("size")
"""A decoded record's stored length."""


class DecodedRecords:
    """Records decoded before, by a keyed hash and the length of their exact stored bytes,
    bounded in bytes (the first decoded go first).

    A shared store hands every worker the same bytes for a record on every request of its
    conversation; decoding them again is most of a cold restore's cost. The bytes themselves
    are not kept (each restored byte is held once, as the decoded record), so the store is
    still read every time: a record deleted or rewritten there is never answered from here
    (other bytes, another entry). `Decoded` and `Reasoning` are frozen, so one decoded value
    may serve every request.

    The key is Python's own hash of the bytes (SipHash-1-3, 64 bits, keyed with this
    process's random secret) beside their length: a fifth of SHA-256's cost on typical
    records, and no one who does not know the secret can aim a collision. Even one would not
    cross tenants: a decoded record answers only reads of the scope it was written for
    (`records_of`).

    A hit touches as little memory as it can: in a proxy worker, which holds tens of
    thousands of records and serves other conversations between two requests of one, a read's
    cost is mostly the CPU waiting for memory (a 500-record read of cached records: ~1.0-1.1 ms
    of thread CPU in a worker against ~0.2 ms in a benchmark loop). So the entry is the decoded
    value itself (no tuple beside it), and a hit does not move its entry to the end (an LRU
    touched two more entries per hit): a record in use that reaches the front is decoded once
    more, ~5 us, where keeping the order cost ~1 us per record on every read."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[int, Decoded] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # store reads run on several threads
        self.hits = 0
        self.misses = 0

    def decode_many(self, raws: Sequence[bytes | str]) -> list[Decoded]:
        """`decode` of each of `raws`, from here where these exact bytes were decoded before
        (one read's values: the lock taken once, not per record)."""
        # `as_bytes` only where needed: most reads hand back bytes, and the call per record
        # costs ~15% of a cached read
        datas = [raw if type(raw) is bytes else as_bytes(raw) for raw in raws]
        keys = list(map(hash, datas))  # in C; kept on each bytes object too
        sizes = list(map(len, datas))
        with self._lock:
            found = list(map(self._entries.get, keys))  # in C
            # An entry answers only bytes of its length (what it was decoded from).
            # `all`: a `Decoded` is never falsy (`None in` would call its `__eq__` per entry).
            whole = all(found) and list(map(_SIZE_OF, found)) == sizes
            if whole:
                self.hits += len(keys)
        if whole:
            return found  # type: ignore[return-value]  # no None
        out: list[Decoded] = []
        new: list[tuple[int, Decoded, Reasoning]] = []
        hits = 0
        for key, data, size, entry in zip(keys, datas, sizes, found, strict=True):
            if entry is not None and entry.size == size:
                hits += 1
                out.append(entry)
            else:
                decoded = decode(data)
                out.append(decoded)
                record = decoded.record
                # junk is not worth keeping; one huge record does not flush the rest
                if record is not None and decoded.size <= self.max_bytes // 8:
                    new.append((key, decoded, record))
        if new:
            self._keep(new)
        with self._lock:
            self.hits += hits
        return out

    def _keep(self, new: list[tuple[int, Decoded, Reasoning]]) -> None:
        """Keep one read's newly decoded records (their bytes' keys and their records beside
        them): off the collector in one call and under the lock once (a worker's first read of
        a long conversation decodes hundreds)."""
        # Tens of thousands of records in a proxy worker's cache, as the prefix memo's copies.
        off_the_collector((record, decoded) for _, decoded, record in new)
        entries = self._entries
        with self._lock:
            self.misses += len(new)
            for key, decoded, _ in new:
                held = entries.pop(key, None)  # another record's of the same hash: replaced
                if held is not None:
                    self._bytes -= held.size
                entries[key] = decoded
                self._bytes += decoded.size
            while self._bytes > self.max_bytes and entries:
                _, gone = entries.popitem(last=False)
                self._bytes -= gone.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


DECODED = DecodedRecords(max_bytes=32 * 1024 * 1024)
"""The process's decoded records (32 MiB: a few thousand typical records)."""


def records_of(
    scope: str, keys: Sequence[str], raws: Sequence[bytes | str | None]
) -> dict[str, Reasoning]:
    """The records of `scope` among one read's values (`raws[i]` stored under `keys[i]`,
    None: missing), decoded through `DECODED`."""
    # No (key, value) pair per record: a new container each, towards the collector's next
    # young collection (zip's own tuple is reused).
    if None in raws:
        keys = [key for key, raw in zip(keys, raws, strict=True) if raw is not None]
        raws = [raw for raw in raws if raw is not None]
    decoded = DECODED.decode_many(raws)  # type: ignore[arg-type]  # no None left
    return {
        key: found.record
        for key, found in zip(keys, decoded, strict=True)
        if found.record is not None and found.scope == scope
    }
