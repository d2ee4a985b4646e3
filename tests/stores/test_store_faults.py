"""The persistent stores failing under real LiteLLM calls: every call goes through within a
bounded delay, one warning per outage (and one when it ends), reasoning captured during the outage
is restored from the local layer, and written through once the backend is back.

Faults are real, and root-proof (tests run as root, where chmod blocks nothing):
* Redis killed (connection refused) or frozen with SIGSTOP (connections hang: the timeouts act);
  on a private `redis-server`, never the machine's shared one;
* SQLite locked by another connection's write transaction (what a busy sibling worker does);
* SQLite on a full disk and on a read-only filesystem: a small tmpfs, filled up or remounted
  read-only (needs mount privileges: skipped where `mount` is not permitted);
* SQLite path unusable (its directory is a regular file).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import ResilientStore
from litellm_reasoning.testing.upstream import Reply, Upstream

if TYPE_CHECKING:
    from store_fixtures import OwnRedis

pytest_plugins = ["store_fixtures"]

RETRY = 0.3
"""How often a down store is probed in these tests (`?retry=`)."""
BOUND = 10.0
"""Bound on one call's duration during an outage, far outside machine noise (the store's
timeouts are 1 s here; a call blocked by the outage would never end)."""
FIGURES: dict[str, float] = {}


@dataclass
class Fault:
    url: str
    break_: Callable[[], None]
    repair: Callable[[], None]
    from_start: bool = False
    """Broken before the callback starts (the store is opened at startup), not mid-run."""
    big: bool = False
    """Captured reasoning large enough to need new disk space."""


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


async def _ask(how: str, upstream: Upstream, model: str, messages: list[Any]) -> Any:
    params = {
        "model": f"openai/{model}",
        "api_base": upstream.base_url,
        "api_key": "k",
        "messages": messages,
    }
    if how == "acompletion":
        return (await litellm.acompletion(**params)).choices[0].message
    return (await asyncio.to_thread(lambda: litellm.completion(**params))).choices[0].message


class Conversation:
    """A tool loop on its own upstream model: the reply's reasoning must come back on the wire
    of the next request, which a reasoning-dropping client sends."""

    def __init__(self, upstream: Upstream, how: str, latencies: list[float], big: bool) -> None:
        self.upstream, self.how, self.latencies = upstream, how, latencies
        self.model = f"fault-{uuid.uuid4().hex[:8]}"
        self.reasoning = f"Thinking about {self.model}. " + ("x" * 600_000 if big else "")
        self.call_id = "call_" + uuid.uuid4().hex[:12]
        upstream.script(
            self.model,
            Reply(
                message={
                    "content": "",
                    "reasoning_content": self.reasoning,
                    "tool_calls": [_tool_call(self.call_id)],
                }
            ),
        )
        self.messages: list[Any] = [{"role": "user", "content": f"fix {self.model}"}]

    async def _timed(self) -> Any:
        start = time.perf_counter()
        reply = await _ask(self.how, self.upstream, self.model, self.messages)
        self.latencies.append(time.perf_counter() - start)
        return reply

    async def first(self) -> None:
        reply = await self._timed()
        assert reply.reasoning_content == self.reasoning
        self.messages += [
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [_tool_call(self.call_id)],
            },
            {"role": "tool", "tool_call_id": self.call_id, "content": "x = 1"},
        ]

    async def second(self) -> None:
        """Sends the continuation; asserts the reasoning was restored on the wire."""
        self.upstream.script(self.model, Reply(message={"content": "done"}))
        reply = await self._timed()
        assert reply.content == "done"
        wire = self.upstream.bodies(self.model)[-1]["messages"]
        assert wire[1].get("reasoning_content") == self.reasoning


def _wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "litellm_reasoning" and r.levelno == logging.WARNING and text in r.getMessage()
    ]


async def _outage(
    fault: Fault, upstream: Upstream, caplog: pytest.LogCaptureFixture, how: str, name: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        if fault.from_start:
            fault.break_()
        callback = register(ReasoningCallback(store=fault.url, capture_wait_seconds=5))
    store = callback.store
    assert isinstance(store, ResilientStore)
    latencies: list[float] = []
    before = Conversation(upstream, how, [], big=False)
    if not fault.from_start:
        await before.first()  # written to the working backend
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        if not fault.from_start:
            fault.break_()
        if not fault.from_start:
            await before.second()  # restored from the local layer
        during = Conversation(upstream, how, latencies, big=fault.big)
        await during.first()  # captured during the outage
        await during.second()  # restored from the local layer
        for _ in range(3):
            await Conversation(upstream, how, latencies, big=False).first()
            await asyncio.sleep(RETRY / 2)  # some of these calls probe the backend
        assert not store.available and store.pending >= 1
        assert len(_warnings(caplog, "unavailable")) == 1, caplog.text
        assert _warnings(caplog, "available again") == []

        fault.repair()
        await asyncio.sleep(RETRY + 0.1)
        await Conversation(upstream, how, latencies, big=False).first()  # probes: it is back
        # A sync call's capture runs on LiteLLM's logging thread after the call returned; the
        # store turns available under its lock and warns just after, so wait for both.
        await asyncio.to_thread(
            _wait_until,
            lambda: (
                store.available
                and store.pending == 0
                and bool(_warnings(caplog, "available again"))
            ),
        )
        assert store.available and store.pending == 0
        assert len(_warnings(caplog, "available again")) == 1
        assert len(_warnings(caplog, "unavailable")) == 1
    assert callback.stats["errors"] == 0  # the store never raised into the callback
    FIGURES[name] = max(latencies)
    print(f"\n{name}: {len(latencies)} calls during the outage, slowest {max(latencies):.3f} s")
    assert max(latencies) < BOUND, latencies

    # Written through: a fresh callback on a fresh store (empty local layer) restores it.
    fresh = register(ReasoningCallback(store=fault.url))
    during.latencies = []
    await during.second()
    assert fresh.stats["restored"] == 1
    fresh.store.close()
    store.close()
    litellm.logging_callback_manager._reset_all_callbacks()


# ---------------------------------------------------------------------------------- Redis


@pytest.mark.parametrize("how", ["acompletion", "completion"])
@pytest.mark.parametrize("kind", ["killed", "frozen"])
async def test_redis_outage(
    kind: str, how: str, own_redis: OwnRedis, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    fault = Fault(
        # 1 s, not the default 0.2 s: a loaded machine must not time out a healthy Redis
        # (that would be a second, real outage and a second warning).
        url=f"{own_redis.url}?retry={RETRY}&timeout=1",
        break_=own_redis.kill if kind == "killed" else own_redis.freeze,
        repair=own_redis.start if kind == "killed" else own_redis.thaw,
    )
    await _outage(fault, upstream, caplog, how, f"redis {kind} ({how})")


# ---------------------------------------------------------------------------------- SQLite


@pytest.mark.parametrize("how", ["acompletion", "completion"])
async def test_sqlite_locked_by_another_writer(
    how: str, tmp_path: Path, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "locked.db"
    holder: list[sqlite3.Connection] = []

    def lock() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")  # a sibling worker in a long write transaction
        holder.append(conn)

    def unlock() -> None:
        holder.pop().rollback()

    fault = Fault(f"sqlite:///{path}?timeout=0.2&retry={RETRY}", lock, unlock)
    await _outage(fault, upstream, caplog, how, f"sqlite locked ({how})")


async def test_sqlite_path_unusable(
    tmp_path: Path, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    """The file's directory is a regular file: nothing can be created there, not even by root."""
    blocker = tmp_path / "not-a-dir"
    fault = Fault(
        f"sqlite:///{blocker / 'store.db'}?retry={RETRY}",
        break_=blocker.touch,
        repair=blocker.unlink,
        from_start=True,
    )
    await _outage(fault, upstream, caplog, "acompletion", "sqlite path unusable")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of this test's own (skipped where mounting is not permitted)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True)
    subprocess.run(["umount", "-l", str(mnt)], check=True)


async def test_sqlite_disk_full(
    small_fs: Path, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    filler = small_fs / "filler"

    def fill() -> None:
        with open(filler, "wb") as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 65536)
                out.flush()
                os.fsync(out.fileno())

    fault = Fault(
        f"sqlite:///{small_fs / 'store.db'}?retry={RETRY}",
        break_=fill,
        repair=filler.unlink,
        big=True,  # a 600 kB record needs pages the full disk does not have
    )
    await _outage(fault, upstream, caplog, "acompletion", "sqlite disk full")


async def test_sqlite_read_only_filesystem(
    small_fs: Path, upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    """The filesystem holding the file is remounted read-only (root cannot write there either)."""

    def remount(mode: str) -> Callable[[], None]:
        return lambda: subprocess.run(["mount", "-o", f"remount,{mode}", str(small_fs)], check=True)

    from litellm_reasoning.core.reasoning import Reasoning
    from litellm_reasoning.stores import open_backend

    url = f"sqlite:///{small_fs / 'store.db'}?retry={RETRY}"
    with open_backend(url) as backend:  # an existing store file
        backend.put_many("earlier", {"k": Reasoning.from_text("kept")})
    fault = Fault(url, break_=remount("ro"), repair=remount("rw"), from_start=True)
    await _outage(fault, upstream, caplog, "acompletion", "sqlite read-only fs")
    with open_backend(url) as backend:
        assert backend.get_many("earlier", ["k"]) == {"k": Reasoning.from_text("kept")}
