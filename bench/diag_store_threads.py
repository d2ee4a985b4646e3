"""The stores' threads: one read of a tool loop's records, awaited from the event loop, on a
`ThreadPoolExecutor` (what the Redis store used; `asyncio.to_thread` for SQLite) against the
`HotThreadPool` the stores use now, arms alternating. Prints CPU per read (process CPU time:
both threads) and how many threads each pool started.

    python bench/diag_store_threads.py [MESSAGES ...]   (default 100 1000; Redis on 6379)

A diagnostic (bench/README.md, "The stores' threads"), not a section of `run.py`."""

from __future__ import annotations

import asyncio
import functools
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from statistics import median
from typing import Any

import sec_rewrite
from common import agent_history

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores._threads import HotThreadPool
from litellm_reasoning.stores.sqlite import SqliteStore

READS = 400
ROUNDS = 3


def cpu_per_call(make: Callable[[], Awaitable[Any]]) -> float:
    async def calls() -> None:
        for _ in range(READS):
            await make()

    asyncio.run(calls())  # warm-up: threads started, connections open
    start = time.process_time()
    asyncio.run(calls())
    return (time.process_time() - start) / READS * 1e3


def compare(name: str, read: Callable[[], Any]) -> None:
    pools: dict[str, Executor] = {
        "ThreadPoolExecutor(8)": ThreadPoolExecutor(8),
        "HotThreadPool(8)": HotThreadPool(8, "diag"),
    }
    times: dict[str, list[float]] = {label: [] for label in pools}
    for _ in range(ROUNDS):
        for label, pool in pools.items():

            def on(pool: Executor = pool) -> Awaitable[Any]:
                return asyncio.get_running_loop().run_in_executor(pool, read)

            times[label].append(cpu_per_call(on))
    for label, pool in pools.items():
        started = len(getattr(pool, "_threads", ())) if isinstance(pool, ThreadPoolExecutor) else 0
        threads = pool.threads if isinstance(pool, HotThreadPool) else started
        rounds = ", ".join(f"{t:.3f}" for t in times[label])
        cpu = f"{median(times[label]):.3f} ms per read ({rounds})"
        print(f"  {name}: {label}: {cpu}; threads {threads}")
        pool.shutdown()


def main(sizes: list[int]) -> None:
    redis_arm = sec_rewrite._redis_callback()
    sqlite_cb = ReasoningCallback(SqliteStore(f"{tempfile.mkdtemp()}/diag.db"))
    for n in sizes:
        messages, reasoning = agent_history(n)
        print(f"{n} messages:")
        callbacks = [("sqlite", sqlite_cb)]
        if redis_arm is not None:
            callbacks.insert(0, ("redis", redis_arm[0]))
        for name, cb in callbacks:
            primed = sec_rewrite.prime_store(cb, messages, reasoning)
            request = cb.engine.prepare(
                cb.engine.facts_of(sec_rewrite.hook_kwargs(messages)), messages
            )
            keys = list(request.keys.values())
            backend = getattr(cb.store, "backend", cb.store)
            assert len(backend.get_many(request.scope, keys)) == primed
            read = functools.partial(backend.get_many, request.scope, keys)
            compare(f"{name}, {len(keys)} records", read)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 1000])
