"""The threads the stores' blocking calls run on (`stores/_threads.py`): a call goes to the
thread that finished last, calls at once each get a thread up to the pool's size, the rest
wait in order, and a forked worker starts threads of its own. Real threads, a real Redis and
a real SQLite file; counters and thread identities, no timing."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import pytest

from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.stores._threads import STORE_THREADS, HotThreadPool, ProcessPool, off_loop
from litellm_reasoning.stores.redis import RedisStore
from litellm_reasoning.stores.sqlite import SqliteStore

pytest_plugins = ["store_fixtures"]
pytestmark = pytest.mark.once  # no LiteLLM in it (see the marker in pyproject.toml)

REDIS_URL = "redis://127.0.0.1:6379/0"
DEADLOCK_GUARD = 60.0
"""Seconds before a test that waits on threads gives up: far beyond any machine's noise, only
there so a broken pool fails the test instead of hanging the suite."""


async def test_calls_one_after_another_run_on_the_thread_that_finished_last() -> None:
    threads = ProcessPool(4, "t")

    def blocking_call() -> int:  # as a store's round trip: the thread waits on I/O
        time.sleep(0.001)
        return threading.get_ident()

    try:
        idents = [await off_loop(blocking_call, threads) for _ in range(50)]
        # ThreadPoolExecutor here now and then starts a second thread (the caller's next call
        # comes before the thread counts itself idle) and from then on alternates.
        assert len(set(idents)) == 1
        assert threads.get().threads == 1
    finally:
        threads.close()


def test_calls_at_once_each_get_a_thread_up_to_the_size() -> None:
    pool = HotThreadPool(4, "t")
    barrier = threading.Barrier(4, timeout=DEADLOCK_GUARD)
    try:
        # Each call returns only once all four run at once: a pool that ran them one after
        # another would break the barrier.
        futures = [
            pool.submit(lambda: (barrier.wait(), threading.get_ident())[1]) for _ in range(4)
        ]
        idents = {future.result(DEADLOCK_GUARD) for future in futures}
        assert len(idents) == 4
        assert pool.threads == 4
    finally:
        pool.shutdown()


@contextlib.contextmanager
def busy_pool(size: int) -> Iterator[tuple[HotThreadPool, threading.Event, list[Future[bool]]]]:
    """A pool of `size` threads, each busy with a call that waits for `release`; those calls,
    and the pool shut down at the end."""
    pool = HotThreadPool(size, "t")
    release = threading.Event()
    try:
        yield pool, release, [pool.submit(release.wait, DEADLOCK_GUARD) for _ in range(size)]
    finally:
        release.set()
        pool.shutdown()


def test_calls_beyond_the_size_wait_their_turn_in_order() -> None:
    ran: list[int] = []
    with busy_pool(2) as (pool, release, blockers):
        waiting = [pool.submit(ran.append, n) for n in range(5)]
        assert ran == []  # both threads are busy: nothing else started
        release.set()
        for blocker in blockers:
            assert blocker.result(DEADLOCK_GUARD) is True
        for future in waiting:
            future.result(DEADLOCK_GUARD)
        assert sorted(ran) == list(range(5))
        assert pool.threads == 2


def test_the_order_of_waiting_calls_is_kept_on_one_thread() -> None:
    ran: list[int] = []
    with busy_pool(1) as (pool, release, blockers):
        waiting = [pool.submit(ran.append, n) for n in range(5)]
        release.set()
        blockers[0].result(DEADLOCK_GUARD)
        for future in waiting:
            future.result(DEADLOCK_GUARD)
        assert ran == [0, 1, 2, 3, 4]


def test_a_failing_call_hands_its_exception_over_and_the_thread_goes_on() -> None:
    pool = HotThreadPool(1, "t")

    def fail() -> None:
        raise KeyError("gone")

    try:
        with pytest.raises(KeyError, match="gone"):
            pool.submit(fail).result(DEADLOCK_GUARD)
        assert pool.submit(lambda: 7).result(DEADLOCK_GUARD) == 7
        assert pool.submit(divmod, 7, 2).result(DEADLOCK_GUARD) == (3, 1)
        assert pool.threads == 1
    finally:
        pool.shutdown()


def test_a_call_cancelled_while_it_waits_never_runs() -> None:
    ran: list[str] = []
    with busy_pool(1) as (pool, release, blockers):
        cancelled = pool.submit(ran.append, "cancelled")
        assert cancelled.cancel()
        later = pool.submit(ran.append, "later")
        release.set()
        blockers[0].result(DEADLOCK_GUARD)
        later.result(DEADLOCK_GUARD)
        assert ran == ["later"]


def test_a_thread_that_could_not_start_does_not_hold_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = HotThreadPool(1, "t")

    def refuse(thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patched:  # as a process at its thread limit answers
        patched.setattr(threading.Thread, "start", refuse)
        with pytest.raises(RuntimeError, match="can't start new thread"):
            pool.submit(int)
    try:
        assert pool.submit(lambda: 5).result(DEADLOCK_GUARD) == 5
        assert pool.threads == 1
    finally:
        pool.shutdown()


def test_after_shutdown_no_call_is_taken_and_the_threads_end() -> None:
    pool = HotThreadPool(3, "t")
    barrier = threading.Barrier(3, timeout=DEADLOCK_GUARD)
    for future in [pool.submit(barrier.wait) for _ in range(3)]:
        future.result(DEADLOCK_GUARD)
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(int)
    assert not any(thread.is_alive() for thread in pool._threads)


def test_shutdown_lets_calls_under_way_and_waiting_finish() -> None:
    pool = HotThreadPool(1, "t")
    release = threading.Event()
    ran: list[int] = []
    first = pool.submit(release.wait, DEADLOCK_GUARD)
    waiting = pool.submit(ran.append, 1)
    threading.Timer(0.05, release.set).start()
    pool.shutdown(wait=True)  # a store write under way at exit is not cut short
    assert first.result(0) is True
    assert waiting.done() and ran == [1]


def _thread_in_a_forked_child(pool: ProcessPool, answer: multiprocessing.Queue[str]) -> None:
    async def name() -> str:
        return await off_loop(lambda: threading.current_thread().name, pool)

    answer.put(asyncio.run(name()))


def test_a_forked_worker_starts_threads_of_its_own() -> None:
    pool = ProcessPool(2, "forked-test")
    parents = pool.get()
    assert parents.submit(lambda: 1).result(DEADLOCK_GUARD) == 1
    context = multiprocessing.get_context("fork")
    answer: multiprocessing.Queue[str] = context.Queue()
    child = context.Process(target=_thread_in_a_forked_child, args=(pool, answer))
    child.start()
    try:
        assert answer.get(timeout=DEADLOCK_GUARD).startswith("forked-test_")
    finally:
        child.join(DEADLOCK_GUARD)
    assert child.exitcode == 0
    assert pool.get() is parents  # the parent's own pool is unchanged
    pool.close()


def test_a_forked_worker_is_not_held_by_a_lock_its_parent_held_at_the_fork() -> None:
    pool = ProcessPool(2, "forked-locked")
    pool.get()
    context = multiprocessing.get_context("fork")
    answer: multiprocessing.Queue[str] = context.Queue()
    with pool._lock:  # another thread of the parent, inside `get`, at the moment of the fork
        child = context.Process(target=_thread_in_a_forked_child, args=(pool, answer))
        child.start()
    try:
        assert answer.get(timeout=DEADLOCK_GUARD).startswith("forked-locked_")
    finally:
        child.join(DEADLOCK_GUARD)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    pool.close()


RECORD = Reasoning(parts=(ReasoningPart(text="thought"),), provider="deepseek")


async def test_a_redis_store_reads_one_after_another_on_one_thread(redis_prefix: str) -> None:
    store = RedisStore(REDIS_URL, prefix=redis_prefix)
    try:
        await store.aput_many("ns=t", {"k": RECORD})
        for _ in range(20):
            assert await store.aget_many("ns=t", ["k"]) == {"k": RECORD}
        assert store._threads.get().threads == 1
    finally:
        await store.aclose()


class WatchedSqliteStore(SqliteStore):
    """The real SQLite store, noting which thread each read runs on."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.read_on: list[tuple[int, str]] = []

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, Reasoning]:
        self.read_on.append((threading.get_ident(), threading.current_thread().name))
        return super().get_many(scope, keys)


async def test_a_sqlite_store_reads_off_the_loop_on_the_stores_threads(tmp_path: Path) -> None:
    store = WatchedSqliteStore(str(tmp_path / "r.db"))
    try:
        await store.aput_many("ns=t", {"k": RECORD})
        for _ in range(5):
            assert await store.aget_many("ns=t", ["k"]) == {"k": RECORD}
        assert threading.get_ident() not in {ident for ident, _ in store.read_on}
        names = {f"{STORE_THREADS.name}_{n}" for n in range(STORE_THREADS.size)}
        assert {name for _, name in store.read_on} <= names
        assert len({ident for ident, _ in store.read_on}) == 1
    finally:
        await store.aclose()
