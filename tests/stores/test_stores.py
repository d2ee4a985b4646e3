"""One contract for every store: memory, SQLite, Redis, and SQLite/Redis behind `ResilientStore`,
each driven through its sync and its async methods.

Time: memory and SQLite take an injected clock; Redis expires keys itself, so its TTL tests wait
for real (a fraction of a second).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from litellm_reasoning import cli
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart, tokens_of_chars
from litellm_reasoning.core.shared_keys import SHARED, Reading, exact_key, reading
from litellm_reasoning.stores import (
    SUPPORTED,
    MemoryStore,
    ReasoningStore,
    ResilientStore,
    _codec,
    open_backend,
    scope_id,
    store_from_url,
)
from litellm_reasoning.stores._base import record_size
from litellm_reasoning.stores.redis import RedisStore
from litellm_reasoning.stores.sqlite import STORE_SCHEMA, SqliteStore

pytest_plugins = ["store_fixtures"]
pytestmark = pytest.mark.once  # see the marker in pyproject.toml

KINDS = [
    "memory",
    "sqlite",
    "redis",
    "redis-cluster",
    "redis-sentinel",
    "resilient-sqlite",
    "resilient-redis",
    "resilient-redis-cluster",
]
MODES = ["sync", "async"]
A, B = "ns=default|key=hashed-a|team=t1", "ns=default|key=hashed-b|team=t1"


def text(value: str, **kw: Any) -> Reasoning:
    return Reasoning.from_text(value, provider="deepseek", model="deepseek-chat", **kw)


RICH = Reasoning(
    parts=(
        ReasoningPart(text="Let me think.", signature="sig-" + "s" * 40),
        ReasoningPart(kind="redacted", data="opaque=="),
        ReasoningPart(kind="encrypted", data="gAAA", id="rs_1", details={"format": "x", "i": 0}),
    ),
    provider="anthropic",
    model="claude-x",
)


@dataclass
class Harness:
    """Builds stores of one kind and moves their time."""

    kind: str
    tmp: Path
    prefix: str | None
    cluster: str | None = None
    """The Redis Cluster's or Sentinel's URL (those kinds)."""
    now: list[float] = field(default_factory=lambda: [time.time()])
    stores: list[ReasoningStore] = field(default_factory=list)

    @property
    def real_time(self) -> bool:
        return "redis" in self.kind

    def clock(self) -> float:
        return time.time() if self.real_time else self.now[0]

    def advance(self, seconds: float) -> None:
        if self.real_time:
            time.sleep(seconds)
        else:
            self.now[0] += seconds

    @property
    def url(self) -> str:
        if "sqlite" in self.kind:
            return f"sqlite:///{self.tmp / 'store.db'}"
        if self.cluster is not None:
            return f"{self.cluster}?prefix={self.prefix}"
        if "redis" in self.kind:
            return f"redis://127.0.0.1:6379/0?prefix={self.prefix}"
        return "memory://"

    def make(
        self,
        *,
        ttl: float = 3600,
        max_records: int = 1000,
        max_bytes: int | None = None,
        max_record_bytes: int = 1 << 20,
    ) -> ReasoningStore:
        common: dict[str, Any] = {"ttl_seconds": ttl, "max_record_bytes": max_record_bytes}
        backend: ReasoningStore
        if self.kind == "memory":
            backend = MemoryStore(
                max_records=max_records, max_bytes=max_bytes, clock=self.clock, **common
            )
        elif "sqlite" in self.kind:
            backend = SqliteStore(
                self.tmp / "store.db",
                max_records=max_records,
                max_bytes=max_bytes,
                clock=self.clock,
                **common,
            )
        else:
            assert self.prefix is not None
            backend = RedisStore(
                self.cluster or "redis://127.0.0.1:6379/0",
                prefix=self.prefix,
                max_records=max_records,
                clock=self.clock,
                **common,
            )
        if self.kind.startswith("resilient"):
            local = MemoryStore(max_records=max_records, clock=self.clock, **common)
            backend = ResilientStore(backend, local=local)
        self.stores.append(backend)
        return backend


@pytest.fixture(params=KINDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    cluster = None
    if "cluster" in request.param or "sentinel" in request.param:
        fixture = "redis_cluster" if "cluster" in request.param else "redis_sentinel"
        cluster = request.getfixturevalue(fixture).url
        prefix: str | None = f"litellm_reasoning:test:{uuid.uuid4().hex[:12]}:"
    else:
        prefix = request.getfixturevalue("redis_prefix") if "redis" in request.param else None
    h = Harness(request.param, tmp_path, prefix, cluster)
    yield h
    for store in h.stores:
        store.close()


@dataclass
class Ops:
    """The store's sync or async methods behind one awaitable face."""

    store: ReasoningStore
    mode: str

    async def get(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        if self.mode == "sync":
            return self.store.get_many(scope, keys)
        return await self.store.aget_many(scope, keys)

    async def put(self, scope: str, records: Mapping[str, Reasoning]) -> None:
        if self.mode == "sync":
            self.store.put_many(scope, records)
        else:
            await self.store.aput_many(scope, records)

    async def sizes(self, scope: str, keys: Sequence[str]) -> dict[str, int | None] | None:
        if self.mode == "sync":
            return self.store.sizes_many(scope, keys)
        return await self.store.asizes_many(scope, keys)

    async def delete(self, scope: str, keys: Sequence[str]) -> None:
        if self.mode == "sync":
            self.store.delete_many(scope, keys)
        else:
            await self.store.adelete_many(scope, keys)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# ---------------------------------------------------------------------------------- contract


async def test_round_trip_and_missing_keys(harness: Harness, mode: str) -> None:
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"k1": RICH, "k2": text("second")})
    assert await ops.get(A, ["k1", "k2", "nope"]) == {"k1": RICH, "k2": text("second")}
    assert await ops.get(A, ["nope"]) == {}
    assert await ops.get(A, []) == {}
    await ops.put(A, {"k2": text("replaced")})
    assert await ops.get(A, ["k2"]) == {"k2": text("replaced")}


async def test_deleted_records_are_gone_for_every_reader(harness: Harness, mode: str) -> None:
    """What a provider refused is deleted: this store and a second one on the same backend
    (another replica) both miss it; other keys and other tenants keep theirs."""
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"k1": RICH, "k2": text("kept")})
    await ops.put(B, {"k1": text("tenant b")})
    await ops.delete(A, ["k1", "never-written"])
    assert await ops.get(A, ["k1", "k2"]) == {"k2": text("kept")}
    assert await ops.get(B, ["k1"]) == {"k1": text("tenant b")}
    await ops.delete(A, [])
    if harness.kind != "memory":
        other = Ops(harness.make(), mode)
        assert await other.get(A, ["k1", "k2"]) == {"k2": text("kept")}
    await ops.put(A, {"k1": text("written again")})
    assert await ops.get(A, ["k1"]) == {"k1": text("written again")}


async def test_record_sizes_without_the_records(harness: Harness, mode: str) -> None:
    """What a reasoning budget decides from before it reads: each live record's
    `record_size` (what `Reasoning.estimated_tokens` counts, times 4), none for a missing,
    deleted or other tenant's key; a rewrite shows its new size. The in-memory store holds
    its records in the process: nothing to save by not reading them, it keeps no sizes."""
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"k1": RICH, "k2": text("second")})
    await ops.put(B, {"k3": text("tenant b")})
    if harness.kind == "memory":
        assert not ops.store.knows_sizes
        assert await ops.sizes(A, ["k1"]) is None
        return
    assert ops.store.knows_sizes
    sizes = await ops.sizes(A, ["k1", "k2", "k3", "nope"])
    assert sizes == {"k1": record_size(RICH), "k2": len("second")}
    assert tokens_of_chars(record_size(RICH)) == RICH.estimated_tokens  # what the budget reads
    await ops.put(A, {"k2": text("a longer second")})
    await ops.delete(A, ["k1"])
    assert await ops.sizes(A, ["k1", "k2"]) == {"k2": len("a longer second")}
    assert await ops.sizes(A, []) == {}


def placed(value: str, conversation: str) -> Reasoning:
    """A tool-call message's record, filed for the conversation whose digest is given."""
    return dataclasses.replace(text(value), conversation=conversation)


async def test_a_key_two_conversations_write_keeps_each_ones_record(
    harness: Harness, mode: str
) -> None:
    """`shared_keys.placement`, done by the store: the first conversation's record stays under
    the key, marked shared once a second conversation writes it; each later one goes under its
    `exact_key`; each rewrites its own; a record without a digest (an earlier release's) is
    written as before; another tenant's key is its own."""
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"tc": placed("x one", "X")})
    await ops.put(A, {"tc": placed("x two", "X")})  # the same conversation: replaced in place
    got = await ops.get(A, ["tc", exact_key("tc", "X")])
    assert list(got) == ["tc"]
    assert (got["tc"].text, got["tc"].conversation) == ("x two", "X")

    await ops.put(A, {"tc": placed("y one", "Y")})
    got = await ops.get(A, ["tc", exact_key("tc", "X"), exact_key("tc", "Y")])
    assert sorted(got) == sorted(["tc", exact_key("tc", "Y")])
    assert (got["tc"].text, got["tc"].conversation) == ("x two", SHARED + "X")
    mine = got[exact_key("tc", "Y")]
    assert (mine.text, mine.conversation) == ("y one", "Y")

    await ops.put(A, {"tc": placed("z one", "Z"), "other": placed("o", "Z")})
    await ops.put(A, {"tc": placed("x three", "X")})  # the first writer, under its mark
    await ops.put(A, {"tc": placed("y two", "Y")})
    await ops.put(B, {"tc": placed("w one", "W")})
    got = await ops.get(A, ["tc", "other", *(exact_key("tc", c) for c in "XYZ")])
    assert {key: (r.text, r.conversation) for key, r in got.items()} == {
        "tc": ("x three", SHARED + "X"),
        "other": ("o", "Z"),
        exact_key("tc", "Y"): ("y two", "Y"),
        exact_key("tc", "Z"): ("z one", "Z"),
    }
    got_b = await ops.get(B, ["tc", exact_key("tc", "W")])
    assert {key: (r.text, r.conversation) for key, r in got_b.items()} == {"tc": ("w one", "W")}
    if ops.store.knows_sizes:  # the mark changed the bytes, not the size the budget reads
        assert await ops.sizes(A, ["tc", exact_key("tc", "Y")]) == {
            "tc": len("x three"),
            exact_key("tc", "Y"): len("y two"),
        }

    await ops.put(A, {"tc": text("an earlier release's")})
    got = await ops.get(A, ["tc", exact_key("tc", "Y")])
    assert (got["tc"].text, got["tc"].conversation) == ("an earlier release's", None)
    assert got[exact_key("tc", "Y")].text == "y two"


async def test_the_mark_a_refusal_leaves_under_a_shared_key_keeps_the_copies_reachable(
    harness: Harness, mode: str
) -> None:
    """A refusal of the key's first writer writes an empty record with its mark over it
    (`refusals.eviction`), where a delete would leave a miss that looks no further: the key
    still reads as shared (another conversation's read goes to its copy), nothing is left to
    restore for the first writer, and the first writer's next reply is filed under the mark."""
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"tc": placed("x", "X")})
    await ops.put(A, {"tc": placed("y", "Y")})  # X's record marked, Y's copy apart
    await ops.put(A, {"tc": Reasoning(provider="anthropic", conversation=SHARED + "X")})
    got = await ops.get(A, ["tc", exact_key("tc", "Y")])
    assert got["tc"].is_empty
    assert got["tc"].conversation == SHARED + "X"
    assert reading(got["tc"].conversation, "Y") is Reading.EXACT
    assert reading(got["tc"].conversation, "X") is Reading.RESTORE  # an empty record: nothing
    assert (got[exact_key("tc", "Y")].text, got[exact_key("tc", "Y")].conversation) == ("y", "Y")
    await ops.put(A, {"tc": placed("x again", "X")})
    got = await ops.get(A, ["tc"])
    assert (got["tc"].text, got["tc"].conversation) == ("x again", SHARED + "X")


async def test_a_shared_keys_mark_lives_as_long_as_its_newest_copy(
    harness: Harness, mode: str
) -> None:
    """Every copy written under a shared key keeps the marked record there as new as itself:
    it never expires before a copy (a key that looks written by one conversation again would
    be read as that conversation's; the engine also reads a conversation's copy first when it
    meets another conversation's record, for what a cap evicts)."""
    ttl = 0.8 if harness.real_time else 100
    ops = Ops(harness.make(ttl=ttl), mode)
    await ops.put(A, {"tc": placed("x", "X")})
    await ops.put(A, {"tc": placed("y", "Y")})  # marked, and Y's copy
    harness.advance(ttl * 0.6)
    await ops.put(A, {"tc": placed("z", "Z")})  # Z's copy: the mark is written again
    harness.advance(ttl * 0.6)  # past the first writes' TTL, not Z's
    got = await ops.get(A, ["tc", exact_key("tc", "Y"), exact_key("tc", "Z")])
    assert {key: r.conversation for key, r in got.items()} == {
        "tc": SHARED + "X",
        exact_key("tc", "Z"): "Z",
    }


def test_concurrent_conversations_writing_one_key_each_keep_their_record(
    harness: Harness,
) -> None:
    """Threads of six conversations write one tool-call key at once, round after round (a
    compare and a write that were not one step would lose a mark): afterwards each
    conversation reads its own latest record by the read rule, and no other's."""
    store = harness.make()
    errors: list[BaseException] = []
    conversations = [f"c{w}" for w in range(6)]

    def writer(conversation: str) -> None:
        try:
            for i in range(15):
                store.put_many(A, {"tc": placed(f"{conversation} round {i}", conversation)})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(c,)) for c in conversations]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    for conversation in conversations:
        held = store.get_many(A, ["tc"])["tc"]
        assert held.conversation is not None
        how = reading(held.conversation, conversation)
        if how is Reading.RESTORE:
            own = held
        else:
            assert how is Reading.EXACT
            own = store.get_many(A, [exact_key("tc", conversation)])[exact_key("tc", conversation)]
        assert own.text == f"{conversation} round 14"


async def test_ttl_expiry(harness: Harness, mode: str) -> None:
    ttl = 0.6 if harness.real_time else 100
    ops = Ops(harness.make(ttl=ttl), mode)
    await ops.put(A, {"old": text("old")})
    harness.advance(ttl * 0.6)
    await ops.put(A, {"young": text("young")})
    assert set(await ops.get(A, ["old", "young"])) == {"old", "young"}
    harness.advance(ttl * 0.6)  # `old` is past its TTL, `young` is not
    assert set(await ops.get(A, ["old", "young"])) == {"young"}
    harness.advance(ttl * 0.6)
    assert await ops.get(A, ["old", "young"]) == {}


async def test_oldest_evicted_over_record_cap(harness: Harness, mode: str) -> None:
    ops = Ops(harness.make(max_records=3), mode)
    for i in range(5):
        await ops.put(A, {f"k{i}": text(f"r{i}")})
        harness.advance(0.01)
    assert set(await ops.get(A, [f"k{i}" for i in range(5)])) == {"k2", "k3", "k4"}


async def test_oldest_evicted_over_byte_cap(harness: Harness, mode: str) -> None:
    if "redis" in harness.kind:
        pytest.skip("Redis bounds its total memory with the server's maxmemory policy")
    ops = Ops(harness.make(max_bytes=25), mode)
    for i in range(4):
        await ops.put(A, {f"k{i}": text("x" * 10)})  # 10 bytes each
        harness.advance(1)
    assert set(await ops.get(A, [f"k{i}" for i in range(4)])) == {"k2", "k3"}


def test_memory_a_read_makes_its_records_the_most_recently_used() -> None:
    """The in-process store evicts the least recently *used* record: one read since it was
    written outlives one written after it but never read; a read does not extend the TTL."""
    now = [1000.0]
    store = MemoryStore(max_records=3, ttl_seconds=100, clock=lambda: now[0])
    store.put_many(A, {"k0": text("r0"), "k1": text("r1"), "k2": text("r2")})
    assert set(store.get_many(A, ["k0", "missing"])) == {"k0"}
    store.put_many(A, {"k3": text("r3")})  # over the cap: k1, the least recently used, goes
    assert set(store.get_many(A, ["k0", "k1", "k2", "k3"])) == {"k0", "k2", "k3"}
    now[0] += 101  # every record is past its TTL, however recently read
    assert store.get_many(A, ["k0", "k2", "k3"]) == {}
    assert len(store) == 0


def test_memory_records_expire_on_time_in_a_long_steady_run() -> None:
    """Writes, rewrites and reads going on for many TTLs (a long-running process): every read
    answers exactly the records younger than the TTL, also after the wall clock was set back."""
    now = [0.0]
    ttl = 10.0
    store = MemoryStore(ttl_seconds=ttl, clock=lambda: now[0])
    written: dict[str, float] = {}
    gone: set[str] = set()  # seen expired once: gone, even if the clock is set back later
    for step in range(200):
        if step == 120:
            now[0] -= 3  # the wall clock set back: expiries no longer follow the write order
        keys = [f"k{step}"] + ([f"k{step - 5}"] if step % 7 == 0 and step >= 5 else [])
        store.put_many(A, {key: text(f"{key} at {now[0]}") for key in keys})
        written.update(dict.fromkeys(keys, now[0]))
        gone.difference_update(keys)
        young = {key for key, at in written.items() if at + ttl > now[0]} - gone
        assert set(store.get_many(A, list(written))) == young, step
        assert len(store) == len(young)
        gone.update(set(written) - young)
        now[0] += 0.5


async def test_one_tenants_volume_never_evicts_another_tenants_records(
    harness: Harness, mode: str
) -> None:
    """The caps are shared fairly: a tenant writing far past them loses its own oldest records,
    never those of a tenant holding fewer (issue: an attacker key's ordinary traffic evicted a
    victim's tool loop, and Kimi refused the victim's next step)."""
    ops = Ops(harness.make(max_records=10), mode)
    await ops.put(A, {f"a{i}": text(f"victim {i}") for i in range(3)})
    for i in range(40):
        harness.advance(0.01)
        await ops.put(B, {f"b{i}": text(f"flood {i}")})
    assert set(await ops.get(A, ["a0", "a1", "a2"])) == {"a0", "a1", "a2"}
    kept = set(await ops.get(B, [f"b{i}" for i in range(40)]))
    assert "b39" in kept and "b0" not in kept  # the flooding tenant's newest stay


async def test_one_tenants_bytes_never_evict_another_tenants_records(
    harness: Harness, mode: str
) -> None:
    if "redis" in harness.kind:
        pytest.skip("Redis bounds its total memory with the server's maxmemory policy")
    ops = Ops(harness.make(max_bytes=400), mode)
    await ops.put(A, {"a": text("v" * 50)})
    for i in range(20):
        harness.advance(0.01)
        await ops.put(B, {f"b{i}": text("f" * 100)})
    assert set(await ops.get(A, ["a"])) == {"a"}
    assert "b19" in set(await ops.get(B, [f"b{i}" for i in range(20)]))


async def test_tenants_are_isolated(harness: Harness, mode: str) -> None:
    ops = Ops(harness.make(), mode)
    await ops.put(A, {"same-key": text("tenant a")})
    assert await ops.get(B, ["same-key"]) == {}
    await ops.put(B, {"same-key": text("tenant b")})
    assert await ops.get(A, ["same-key"]) == {"same-key": text("tenant a")}
    assert await ops.get(B, ["same-key"]) == {"same-key": text("tenant b")}


async def test_oversize_record_not_kept(harness: Harness, mode: str) -> None:
    ops = Ops(harness.make(max_record_bytes=10), mode)
    await ops.put(A, {"big": text("x" * 11), "small": text("y" * 10)})
    assert await ops.get(A, ["big", "small"]) == {"small": text("y" * 10)}


def test_concurrent_threads(harness: Harness) -> None:
    """Threads write one shared key and their own keys while others read: every read is a whole
    record that some writer wrote, and every own key survives."""
    store = harness.make()
    written = {text(f"writer {w} round {i} " + "z" * (w * 50)) for w in range(6) for i in range(30)}
    seen: list[Reasoning] = []
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(30):
                record = text(f"writer {w} round {i} " + "z" * (w * 50))
                store.put_many(A, {"shared": record, f"own-{w}-{i}": record})
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(60):
                seen.extend(store.get_many(A, ["shared"]).values())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert seen and all(record in written for record in seen)
    own = [f"own-{w}-{i}" for w in range(6) for i in range(30)]
    assert set(store.get_many(A, own)) == set(own)
    assert store.get_many(A, ["shared"])["shared"] in written


async def test_concurrent_tasks(harness: Harness) -> None:
    store = harness.make()
    written = [text(f"task {t} " + "q" * random.randrange(200)) for t in range(20)]

    async def task(t: int) -> list[Reasoning]:
        await store.aput_many(A, {"shared": written[t], f"own-{t}": written[t]})
        return list((await store.aget_many(A, ["shared", f"own-{t}"])).values())

    results = await asyncio.gather(*(task(t) for t in range(20)))
    for t, got in enumerate(results):
        assert written[t] in got  # its own record
        assert all(record in written for record in got)
    assert set(await store.aget_many(A, [f"own-{t}" for t in range(20)])) == {
        f"own-{t}" for t in range(20)
    }


_READER = """
import json, sys
from litellm_reasoning.stores import store_from_url
store = store_from_url(sys.argv[1])
found = store.get_many(sys.argv[2], sys.argv[3:])
print(json.dumps({k: v.to_json() for k, v in found.items()}))
store.close()
"""


def test_second_process_reads_what_the_first_wrote(harness: Harness) -> None:
    if harness.kind == "memory":
        pytest.skip("memory:// lives and dies with its process")
    store = harness.make()
    store.put_many(A, {"k1": RICH})
    store.close()
    out = subprocess.run(
        [sys.executable, "-c", _READER, harness.url, A, "k1", "missing"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert {k: Reasoning.from_json(v) for k, v in json.loads(out.stdout).items()} == {"k1": RICH}
    other = subprocess.run(
        [sys.executable, "-c", _READER, harness.url, B, "k1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(other.stdout) == {}


async def test_aclose_after_async_use_keeps_what_was_written(harness: Harness) -> None:
    """`aclose` (the interface's async close, also through the fail-open wrapper) releases the
    store after async use on this loop; a persistent backend still has every record for the
    next store opened on it, and the closed store is not used again."""
    store = harness.make()
    await store.aput_many(A, {"k1": RICH})
    assert await store.aget_many(A, ["k1"]) == {"k1": RICH}
    await store.aclose()
    if harness.kind == "memory":
        return  # nothing outlives the process; closing it released nothing to check
    again = harness.make()
    assert await again.aget_many(A, ["k1"]) == {"k1": RICH}


def test_operator_view_and_purge(harness: Harness) -> None:
    """What `litellm-reasoning store` relies on: per-tenant stats, listing, purge by tenant/age."""
    store = harness.make()
    store.put_many(A, {"a1": text("x" * 10), "a2": RICH})
    harness.advance(1.1)
    store.put_many(B, {"b1": text("y" * 7)})
    stats = {t.scope: t for t in store.tenants()}
    assert set(stats) == {A, B}
    assert stats[A].records == 2 and stats[A].scope_id == scope_id(A)
    assert stats[A].bytes == 10 + len("Let me think.") + 44 + len("opaque==") + len("gAAA")
    assert stats[A].oldest is not None and stats[B].newest is not None
    assert stats[A].oldest < stats[B].newest
    listed = store.list_records(scope_id(A))  # by id or by scope string
    assert {r.key for r in listed} == {"a1", "a2"} == {r.key for r in store.list_records(A)}
    assert {r.key: r.record for r in listed}["a2"] == RICH
    assert store.purge(older_than=1.0) == 2  # A's records are older than 1 s, B's is not
    assert store.get_many(A, ["a1", "a2"]) == {}
    assert store.purge(scope=B) == 1
    assert store.get_many(B, ["b1"]) == {} and store.tenants() == []


# ---------------------------------------------------------------------------------- URLs


def test_unknown_scheme_names_the_supported_ones() -> None:
    with pytest.raises(ValueError, match="unsupported") as info:
        store_from_url("mongodb://x")
    for scheme in ("memory://", "sqlite:///", "redis://"):
        assert scheme in str(info.value)
    assert "redis://" in SUPPORTED


def test_url_options(tmp_path: Path) -> None:
    store = store_from_url(
        f"sqlite:///{tmp_path}/a.db?ttl=60&max_records=5&max_bytes=999&timeout=0.1"
        "&local_records=7&retry=3"
    )
    assert isinstance(store, ResilientStore) and isinstance(store.backend, SqliteStore)
    backend = store.backend
    assert (backend.ttl_seconds, backend.max_records, backend.max_bytes, backend.timeout) == (
        60,
        5,
        999,
        0.1,
    )
    assert store.local.max_records == 7 and store.retry_seconds == 3
    assert str(backend.path) == f"{tmp_path}/a.db"
    assert SqliteStore.__name__ in type(open_backend("sqlite:///rel.db")).__name__
    assert str(open_backend("sqlite:///rel.db").path) == "rel.db"  # type: ignore[attr-defined]
    memory = store_from_url("memory://?max_records=3&ttl=5")
    assert isinstance(memory, MemoryStore) and memory.max_records == 3
    redis_store = store_from_url("redis://127.0.0.1:1/2?ttl=9&max_records=4&prefix=p:&timeout=1")
    assert isinstance(redis_store, ResilientStore)
    assert isinstance(redis_store.backend, RedisStore)
    assert redis_store.backend.prefix == "p:" and redis_store.backend.max_records == 4
    assert redis_store.name == "redis://127.0.0.1:1/2"
    # Sentinel's write confirmation: one replica within 0.1 s by default, 0 turns it off.
    assert (redis_store.backend.wait_replicas, redis_store.backend.wait_ms) == (1, 100)
    waiting = open_backend("redis://127.0.0.1:1/2?wait_replicas=0&wait_seconds=0.5")
    assert (waiting.wait_replicas, waiting.wait_ms) == (0, 500)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not a count"):
        store_from_url("redis://127.0.0.1:1/2?wait_replicas=-1")
    with pytest.raises(ValueError, match="unknown option"):
        store_from_url(f"sqlite:///{tmp_path}/a.db?tll=5")
    with pytest.raises(ValueError, match="positive"):
        store_from_url("memory://?ttl=0")
    with pytest.raises(ValueError, match="names no file"):
        store_from_url("sqlite://")


def test_url_password_never_in_the_store_name() -> None:
    store = store_from_url("redis://:hunter2@127.0.0.1:1/0")
    assert isinstance(store, ResilientStore) and "hunter2" not in store.name


# ---------------------------------------------------------------------------------- SQLite


def test_sqlite_file_is_wal_and_versioned(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.put_many(A, {"k": text("x")})
    store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_SCHEMA
    conn.execute(f"PRAGMA user_version = {STORE_SCHEMA + 1}")
    conn.close()
    with pytest.raises(RuntimeError, match="schema"):
        SqliteStore(tmp_path / "s.db").get_many(A, ["k"])


def test_sqlite_unreadable_row_reads_as_missing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.put_many(A, {"k": text("x"), "j": text("y")})
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute("UPDATE records SET body = ? WHERE key = 'k'", (b'{"s":"x","r":{"v":99}}',))
    conn.commit()
    conn.close()
    assert store.get_many(A, ["k", "j"]) == {"j": text("y")}


def test_sqlite_workers_share_one_file(tmp_path: Path) -> None:
    """Several processes opening a new file at the same moment, then writing it at once (proxy
    workers starting together): every one opens it, nothing lost or torn."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    go = tmp_path / "go"
    script = (
        "import os, sys, time\nfrom litellm_reasoning.stores import open_backend\n"
        "from litellm_reasoning.core.reasoning import Reasoning\n"
        "while not os.path.exists(sys.argv[3]):\n    time.sleep(0.001)\n"
        "s = open_backend(sys.argv[1] + '?timeout=10')\nw = sys.argv[2]\n"
        "for i in range(40):\n"
        "    s.put_many('t', {f'{w}-{i}': Reasoning.from_text(w * 100), 'shared': "
        "Reasoning.from_text(w * 100)})\n"
    )
    workers = "abcdef"
    procs = [subprocess.Popen([sys.executable, "-c", script, url, w, str(go)]) for w in workers]
    time.sleep(0.5)  # let them all import, so they open the file together
    go.touch()
    assert [p.wait(120) for p in procs] == [0] * len(workers)
    store = open_backend(url)
    keys = [f"{w}-{i}" for w in workers for i in range(40)]
    assert set(store.get_many("t", keys)) == set(keys)
    assert store.get_many("t", ["shared"])["shared"].text in {w * 100 for w in workers}
    assert sum(t.records for t in store.tenants()) == len(keys) + 1


def test_sqlite_opening_waits_out_a_locked_file(tmp_path: Path) -> None:
    """Opening (WAL switch, tables) meets another process's lock: it is tried again within
    `required_timeout`, not failed after the short `timeout` of one call."""
    path = tmp_path / "s.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, holder.rollback)
    release.start()
    try:
        store = SqliteStore(path, timeout=0.02, required_timeout=30)
        store.put_many(A, {"k": text("x")})
    finally:
        release.join()
        holder.close()
    assert store.get_many(A, ["k"]) == {"k": text("x")}


def test_sqlite_opening_gives_up_after_required_timeout(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = SqliteStore(path, timeout=0.02, required_timeout=0.2)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.put_many(A, {"k": text("x")})
    finally:
        holder.rollback()
        holder.close()
    store.put_many(A, {"k": text("x")})
    assert store.get_many(A, ["k"]) == {"k": text("x")}


# ---------------------------------------------------------------------------------- Redis


def _count_commands(client: Any) -> list[str]:
    seen: list[str] = []
    original = client.execute_command

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(str(args[0]))
        return original(*args, **kwargs)

    client.execute_command = counting
    return seen


async def test_redis_one_round_trip_per_read(redis_prefix: str) -> None:
    store = RedisStore(prefix=redis_prefix)
    records = {f"k{i}": text(f"r{i}") for i in range(40)}
    store.put_many(A, records)
    store.get_many(A, ["warm"])  # the read script is loaded on first use (each client)
    await store.aget_required(A, ["warm"])
    sync_seen = _count_commands(store._sync)
    assert store.get_many(A, [*records, "missing"]) == records
    assert sync_seen == ["EVALSHA"]  # the bounded read script: under `read_bytes`, one trip
    await store.aput_many(A, {"k0": text("again")})
    # The async read runs the same client on the store's threads (its deadline is the socket's).
    sync_seen.clear()
    assert len(await store.aget_many(A, list(records))) == 40
    assert sync_seen == ["EVALSHA"]
    # A required read: one round trip too, on the client with the longer deadline.
    sync_seen.clear()
    patient_seen = _count_commands(store._patient_client()[0])
    assert len(await store.aget_required(A, list(records))) == 40
    assert (sync_seen, patient_seen) == ([], ["EVALSHA"])
    await store.aclose()


def test_redis_a_read_names_its_keys_in_one_argument(redis_prefix: str) -> None:
    """What reaches Redis for a read of 40 records: the joined read script with one key (the
    scope's index, whose slot is every record's) and the records' keys in one argument (redis-py
    handles every argument in Python, a fifth of the read's cost per record). A key holding a
    newline cannot be joined: that read names each key, and finds the same records."""
    store = RedisStore(prefix=redis_prefix)
    records = {f"k{i}": text(f"r{i}") for i in range(40)}
    odd = {"line\nbreak": text("odd"), "k0": records["k0"]}
    store.put_many(A, {**records, **odd})
    # Both read scripts loaded first: a server that has not run one yet answers NOSCRIPT, and
    # redis-py then loads it and asks again (three commands, not the one looked at here).
    store.get_many(A, ["k1"])
    store.get_many(A, ["line\nbreak"])
    calls: list[tuple[Any, ...]] = []
    original = store._sync.execute_command

    def spying(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    store._sync.execute_command = spying
    assert store.get_many(A, [*records, "missing"]) == records
    [(command, sha, numkeys, index, budget, lead, joined)] = calls
    assert (command, sha, numkeys) == ("EVALSHA", store._sync_joined.sha, 1)
    assert index == store._index(scope_id(A)) and budget == store.read_bytes
    assert joined == "".join(f"{key}\n" for key in [*records, "missing"])
    assert lead == store._record_key(scope_id(A), "")
    calls.clear()
    assert store.get_many(A, list(odd)) == odd
    [(command, sha, numkeys, *names, budget)] = calls
    assert (command, sha, numkeys) == ("EVALSHA", store._sync_get.sha, 2)
    assert names == [store._record_key(scope_id(A), key) for key in odd]
    store.close()


def test_redis_a_record_key_holding_another_type_is_missing_not_an_error(
    redis_prefix: str,
) -> None:
    """The read script reads each key on its own: one key that is not a string (damage,
    another program) is a missing record, as MGET answered it, never a failed read."""
    import redis

    store = RedisStore(prefix=redis_prefix)
    store.put_many(A, {"k1": text("1"), "k3": text("3")})
    (name,) = store._names(A, ["k2"])
    redis.Redis().rpush(name, "junk")
    assert store.get_many(A, ["k1", "k2", "k3"]) == {"k1": text("1"), "k3": text("3")}
    store.close()


def test_redis_size_of_a_record_an_earlier_release_wrote_is_unknown(redis_prefix: str) -> None:
    """0.4.0 and earlier write a record without its size key, and may rewrite one this
    release wrote (leaving the old size beside it): both sizes are unknown, never wrong."""
    import redis

    store = RedisStore(prefix=redis_prefix)
    store.put_many(A, {"k1": text("1"), "k2": text("2"), "k3": text("3")})
    client = redis.Redis()
    sid = scope_id(A)
    client.delete(f"{redis_prefix}n:{sid}:k1")  # as an earlier release writes it
    rewritten = _codec.encode(A, text("rewritten by 0.4.0"), time.time())
    client.set(f"{redis_prefix}r:{sid}:k2", rewritten)  # its own script: SET, ZADD
    assert store.sizes_many(A, ["k1", "k2", "k3"]) == {"k1": None, "k2": None, "k3": 1}
    store.close()
    client.close()


def test_redis_keys_have_prefix_and_ttl(redis_prefix: str) -> None:
    import redis

    store = RedisStore(prefix=redis_prefix, ttl_seconds=120, max_records=2)
    store.put_many(A, {"k1": text("1"), "k2": text("2")})
    store.put_many(A, {"k3": text("3")})  # k1 is the tenant's oldest: it goes
    client = redis.Redis()
    names = sorted(n.decode() for n in client.scan_iter(match=f"{redis_prefix}*"))
    sid = scope_id(A)
    assert names == [
        f"{redis_prefix}i:{sid}",
        f"{redis_prefix}n:{sid}:k2",  # the size beside each record; k1's went with it
        f"{redis_prefix}n:{sid}:k3",
        f"{redis_prefix}r:{sid}:k2",
        f"{redis_prefix}r:{sid}:k3",
    ]
    record = client.get(f"{redis_prefix}r:{sid}:k2")
    assert client.get(f"{redis_prefix}n:{sid}:k2") == f"1:{len(record)}".encode()
    assert all(0 < client.pttl(n) <= 120_000 for n in names)
    assert client.zcard(f"{redis_prefix}i:{sid}") == 2
    client.close()


# ---------------------------------------------------------------------------------- CLI


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["store", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_store_cli(
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if kind == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = f"sqlite:///{tmp_path / 'cli.db'}"
    store = store_from_url(url)
    secret = "A private chain of thought " + "that goes on and on " * 20
    long = Reasoning(parts=(ReasoningPart(text=secret, signature="S" * 64),), provider="anthropic")
    store.put_many(A, {"k1": long, "k2": text("short one")})
    store.put_many(B, {"k3": text("b")})
    store.close()

    code, out, err = _cli(capsys, "--store", url, "stats")
    assert code == 0, err
    assert f"tenant {scope_id(A)}  {A}" in out and "records: 2" in out
    assert f"tenant {scope_id(B)}  {B}" in out and "total: 2 tenant(s), 3 record(s)" in out

    monkeypatch.setenv("LITELLM_REASONING_STORE", url)  # the URL from the environment
    code, out, _ = _cli(capsys, "show", scope_id(A))
    assert code == 0
    assert "key k1" in out and "key k2" in out and "'short one'" in out
    assert secret not in out and secret[:40] in out and "…" in out
    assert "signature 64 chars" in out and "S" * 64 not in out
    code, out, _ = _cli(capsys, "show", A, "--full")
    assert secret in out

    code, _, err = _cli(capsys, "purge")
    assert code == 2 and "--tenant" in err
    code, out, _ = _cli(capsys, "purge", "--tenant", A)
    assert (code, out.strip()) == (0, f"removed 2 record(s) (tenant {A!r})")
    code, out, _ = _cli(capsys, "purge", "--older-than", "3600")
    assert out.strip() == "removed 0 record(s) (all tenants, older than 3600 s)"
    code, out, _ = _cli(capsys, "purge", "--all", "--yes")
    assert out.strip() == "removed 1 record(s) (all tenants)"
    code, out, _ = _cli(capsys, "stats")
    assert "no records" in out


def test_store_cli_errors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LITELLM_REASONING_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", "/nonexistent-lr-data")
    code, _, err = _cli(capsys, "stats")  # the proxy's default file, which is not there
    assert code == 2 and "no SQLite store" in err
    code, _, err = _cli(capsys, "--store", "memory://", "stats")
    assert code == 2 and "inside its process" in err
    code, _, err = _cli(capsys, "--store", "ftp://x", "stats")
    assert code == 2 and "supported" in err
    code, _, err = _cli(capsys, "--store", "redis://127.0.0.1:1/0", "stats")
    assert code == 1 and "ConnectionError" in err


def test_store_cli_guards_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    store = store_from_url(url)
    store.put_many(A, {"k1": text("short one")})
    store.close()
    monkeypatch.delenv("LITELLM_REASONING_STORE", raising=False)
    # A typo never creates a new, empty database that then reports "no records".
    typo = f"sqlite:///{tmp_path / 'typo' / 'cli.db'}"
    code, _, err = _cli(capsys, "--store", typo, "stats")
    assert code == 2 and "no SQLite store" in err
    assert not (tmp_path / "typo").exists()
    code, _, err = _cli(capsys, "--store", url, "purge", "--older-than", "-5")
    assert code == 2 and "--older-than" in err
    code, out, _ = _cli(capsys, "--store", url, "show", "no-such-tenant")
    assert code == 1 and "no records" in out
    code, out, _ = _cli(capsys, "--store", url, "--json", "stats")
    stats = json.loads(out)
    assert code == 0 and [t["scope"] for t in stats["tenants"]] == [A]
    code, out, _ = _cli(capsys, "--store", url, "--json", "show", A)
    shown = json.loads(out)["records"]
    assert code == 0 and shown[0]["key"] == "k1" and shown[0]["parts"][0]["text"] == "short one"
    with open(os.devnull) as not_a_terminal:  # no prompt without a terminal
        monkeypatch.setattr(sys, "stdin", not_a_terminal)
        code, _, err = _cli(capsys, "--store", url, "purge", "--all")
    assert code == 2 and "--yes" in err
    code, out, _ = _cli(capsys, "--store", url, "purge", "--all", "--yes")
    assert code == 0 and "removed 1 record(s)" in out
    # Without --store or the variable: the proxy's default SQLite file (here, none yet).
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    code, _, err = _cli(capsys, "stats")
    assert code == 2 and str(tmp_path / "data") in err


def test_store_cli_never_prints_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    from litellm_reasoning.cli.store import _shown

    assert _shown("redis://:s3cret@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert _shown("rediss://user:pw@h:1/0?prefix=x") == "rediss://user:***@h:1/0?prefix=x"
    assert _shown("sqlite:///a/b.db") == "sqlite:///a/b.db"


# ---------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_record_is_decoded_once_and_a_rewrite_or_delete_still_shows(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Shared stores hand every request the same stored bytes: they are decoded once per
    process (`_codec.DECODED`, by a digest of the bytes), and the store is still read every
    time, so a record rewritten or deleted there is never answered from memory."""
    from litellm_reasoning.stores import _codec

    if kind == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = f"sqlite:///{tmp_path / 'decoded.db'}"
    store = open_backend(url)
    try:
        store.put_many(A, {"k": text("first")})
        misses, hits = _codec.DECODED.misses, _codec.DECODED.hits
        for _ in range(3):
            assert store.get_many(A, ["k"]) == {"k": text("first")}
        assert (_codec.DECODED.misses, _codec.DECODED.hits) == (misses + 1, hits + 2)
        store.put_many(A, {"k": text("second")})
        assert store.get_many(A, ["k"]) == {"k": text("second")}
        store.delete_many(A, ["k"])
        assert store.get_many(A, ["k"]) == {}
    finally:
        store.close()


def test_the_decode_cache_keeps_its_records_off_the_collectors_lists() -> None:
    """A cached record (its envelope, the record, its parts and their tuple) is
    long-lived and in no cycle: with the accelerator it is untracked, so a proxy worker's full
    collections do not traverse tens of thousands of them (reference counting still frees it).
    A record too large for the cache is left as it is; the pure path leaves every one."""
    import gc

    from litellm_reasoning.accelerator import NATIVE
    from litellm_reasoning.stores import _codec

    record = Reasoning(
        parts=(ReasoningPart(text="one"), ReasoningPart(kind="redacted", data="opaque")),
        provider="anthropic",
        conversation="c1",
    )
    cache = _codec.DecodedRecords(max_bytes=1 << 20)
    (decoded,) = cache.decode_many([_codec.encode(A, record, 1.0)])
    assert decoded.record == record and decoded.record.conversation == "c1"
    (entry,) = cache._entries.values()
    assert entry is decoded  # the entry is the decoded value itself: nothing beside it
    kept = [decoded, decoded.record, decoded.record.parts, *decoded.record.parts]
    gc.collect()  # a collection untracks only tuples of atomic values, not these
    assert [gc.is_tracked(o) for o in kept] == [NATIVE is None] * 5
    (again,) = cache.decode_many([_codec.encode(A, record, 1.0)])
    assert again is decoded and cache.hits == 1

    small = _codec.DecodedRecords(max_bytes=64)  # every record too large to keep
    (passing,) = small.decode_many([_codec.encode(A, record, 1.0)])
    assert gc.is_tracked(passing.record)


def test_the_memory_store_keeps_its_records_off_the_collectors_lists() -> None:
    """Held records (the memory store, a persistent store's local layer) are long-lived and in
    no cycle: with the accelerator untracked, so the 10,000-50,000 a store holds do not
    lengthen every full collection; a part's provider dict stays tracked, and a record still
    goes once dropped (reference counting)."""
    import gc

    from litellm_reasoning.accelerator import NATIVE

    details = {"summary": [{"type": "summary_text", "text": "s"}]}
    record = Reasoning(
        parts=(
            ReasoningPart(text="one", details=details),
            ReasoningPart(kind="redacted", data="x"),
        ),
        provider="anthropic",
    )
    unheld = sys.getrefcount(record)
    store = MemoryStore(max_records=1)
    store.put_many(A, {"k": record})
    kept = [store._records[(A, "k")], record, record.parts, *record.parts]
    assert [gc.is_tracked(o) for o in kept] == [NATIVE is None] * 5
    assert gc.is_tracked(details)
    assert store.get_many(A, ["k"]) == {"k": record}

    del kept
    store.put_many(A, {"j": text("next")})  # evicts "k" (one record at most)
    assert store.get_many(A, ["k"]) == {}
    assert sys.getrefcount(record) == unheld  # nothing of the store holds it any more


def test_the_decode_cache_lets_the_first_decoded_go_first() -> None:
    """Bounded in bytes, the first decoded go first, hits or not (a hit does not reorder: in a
    proxy worker that costs more memory traffic than decoding a record again); a record that
    went is decoded again on its next read, and answered from the cache after that."""
    from litellm_reasoning.stores import _codec

    records = [text(f"record {n} " + "x" * 200) for n in range(10, 19)]  # 9, of one length
    stored = [_codec.encode(A, record, 1.0) for record in records]
    cache = _codec.DecodedRecords(max_bytes=len(stored[0]) * 8 + 10)  # 8 fit
    cache.decode_many(stored[:8])
    for _ in range(3):
        cache.decode_many(stored[:1])  # read again and again: still the first decoded
    assert (cache.misses, cache.hits) == (8, 3)
    assert [d.record for d in cache.decode_many(stored[1:])] == records[1:]
    assert (cache.misses, cache.hits) == (9, 10)  # the ninth pushed the first out
    assert cache.decode_many(stored[:1])[0].record == records[0]
    assert cache.misses == 10  # it had gone: decoded again
    cache.decode_many(stored[:1])
    assert (cache.misses, cache.hits) == (10, 11)
    assert cache._bytes == sum(d.size for d in cache._entries.values()) <= cache.max_bytes


def test_the_decode_cache_answers_only_the_bytes_it_decoded() -> None:
    """Records are found by their bytes' hash, but an entry answers only bytes of the length
    it was decoded from (a colliding value of another length is decoded, and replaces it), and
    only reads of the scope it was written for."""
    from litellm_reasoning.stores import _codec

    cache = _codec.DecodedRecords(max_bytes=1 << 20)
    first = _codec.encode(A, text("first"), 1.0)
    other = _codec.encode(A, text("a longer second record"), 1.0)
    assert [d.record for d in cache.decode_many([first])] == [text("first")]
    assert [d.record for d in cache.decode_many([first])] == [text("first")]
    assert (cache.misses, cache.hits) == (1, 1)
    # As if `other` hashed like `first`: its own record, never the one kept for `first`.
    cache._entries[hash(other)] = cache._entries.pop(hash(first))
    assert [d.record for d in cache.decode_many([other])] == [text("a longer second record")]
    assert [d.record for d in cache.decode_many([other, first])] == [
        text("a longer second record"),
        text("first"),
    ]
    assert cache.misses == 3
    # Bytes of another tenant, decoded here before, answer no read of this one.
    foreign = _codec.encode(B, text("first"), 1.0)
    cache.decode_many([foreign])
    assert _codec.records_of(A, ["k"], [foreign]) == {}
    assert _codec.records_of(B, ["k"], [foreign]) == {"k": text("first")}
