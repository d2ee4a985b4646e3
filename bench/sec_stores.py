"""Store round trips: restores per request against memory, SQLite, Redis and a Redis Cluster of
three primaries (started here on 127.0.0.1), the round trips each request makes, and the
latency each backend adds to the pre-call hook (p50, p99)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
from common import Section, delete_redis_prefix, fmt_ms, median, percentile, verdict
from sec_rewrite import close_capture, hook_kwargs, prime_store

from litellm_reasoning import ReasoningCallback

REDIS_URL = "redis://127.0.0.1:6379/0"
ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def redis_cluster() -> Iterator[str | None]:
    """A private Redis Cluster (the tests' `OwnCluster`), or None when it cannot start."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from store_fixtures import OwnCluster
    except ImportError:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as workdir:
        cluster = OwnCluster(Path(workdir))
        try:
            cluster.start()
        except BaseException:  # pytest's skip is a BaseException
            cluster.stop()
            yield None
            return
        try:
            yield cluster.url
        finally:
            cluster.stop()


def single_turn(n: int, seed: str) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """A system prompt, one user message and `n` tool-call steps: `n` messages to restore."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    reasoning: dict[int, str] = {}
    for i in range(n):
        call_id = f"call_{seed}_{i:04d}"
        reasoning[len(messages)] = f"Step {i}: read the traceback, then decide the next call."
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "p.py"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"result {i}"})
    return messages, reasoning


class RoundTrips:
    """Counts what redis-py writes to its sockets: one `send_packed_command` is one request on
    the wire (a pipeline or MGET of any size is one), without MONITOR."""

    def __init__(self) -> None:
        self.sends = 0
        self.commands: Counter[str] = Counter()

    @contextlib.contextmanager
    def installed(self) -> Iterator[RoundTrips]:
        try:
            import redis.asyncio.connection as aconn
            import redis.connection as conn
        except ImportError:
            yield self
            return
        saved: list[tuple[Any, Any]] = []
        counter = self

        def wrap_sync(original: Any) -> Any:
            def send(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
                counter.sends += 1
                return original(self, command, *args, **kwargs)

            return send

        def wrap_async(original: Any) -> Any:
            async def send(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
                counter.sends += 1
                return await original(self, command, *args, **kwargs)

            return send

        for cls, wrap in (
            (conn.AbstractConnection, wrap_sync),
            (aconn.AbstractConnection, wrap_async),
        ):
            original = cls.send_packed_command
            saved.append((cls, original))
            cls.send_packed_command = wrap(original)  # type: ignore[method-assign]
        try:
            yield self
        finally:
            for cls, original in saved:
                cls.send_packed_command = original  # type: ignore[method-assign]


def _open(url: str) -> tuple[ReasoningCallback | None, str]:
    """A callback on the store at `url`, or None and why not."""
    try:
        cb = ReasoningCallback(store=url)
    except (ValueError, ImportError, NotImplementedError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return cb, ""


def _sql_statements(cb: ReasoningCallback) -> list[int]:
    """Counts SQL statements of a SQLite store (trace callback on its connection), if any."""
    counter = [0]
    backend = getattr(cb.store, "backend", cb.store)
    connection = getattr(backend, "_connection", None)
    if connection is not None:
        connection.set_trace_callback(lambda _sql: counter.__setitem__(0, counter[0] + 1))
    return counter


def run(counts: list[int], repeat: int) -> Section:
    with redis_cluster() as cluster:
        return _run(counts, repeat, cluster)


def _run(counts: list[int], repeat: int, cluster: str | None) -> Section:
    section = Section("stores", "Store round trips and the latency they add")
    tmp = tempfile.TemporaryDirectory(prefix="bench-store-")
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    urls = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{Path(tmp.name) / 'bench.db'}",
        "redis": f"{REDIS_URL}?prefix={prefix}&timeout=1",
    }
    if cluster is not None:
        urls["redis-cluster"] = f"{cluster}?prefix={prefix}&timeout=1"
    else:
        section.note("redis-cluster: skipped (no redis-server / redis-cli to start one)")
    callbacks: dict[str, ReasoningCallback] = {}
    for name, url in urls.items():
        cb, why = _open(url)
        if cb is None:
            section.note(f"{name}: skipped ({why})")
        else:
            callbacks[name] = cb
    previous = list(litellm.callbacks)
    trips = RoundTrips()
    rows: list[list[str]] = []
    redis_trips: list[float] = []
    try:
        with trips.installed():
            for n in counts:
                messages, reasoning = single_turn(n, seed=f"s{n}")
                primed: dict[str, int] = {}
                for name, cb in callbacks.items():
                    litellm.callbacks = [cb]
                    primed[name] = prime_store(cb, messages, reasoning)
                latencies: dict[str, list[float]] = {name: [] for name in callbacks}
                restored: dict[str, int] = dict.fromkeys(callbacks, 0)
                sends: dict[str, int] = dict.fromkeys(callbacks, 0)
                statements: dict[str, int] = dict.fromkeys(callbacks, 0)

                async def measure(
                    messages: list[Any] = messages,
                    latencies: dict[str, list[float]] = latencies,
                    restored: dict[str, int] = restored,
                    sends: dict[str, int] = sends,
                    statements: dict[str, int] = statements,
                ) -> None:
                    names = list(callbacks)
                    counters = {name: _sql_statements(callbacks[name]) for name in names}
                    for r in range(repeat + 2):
                        for name in names if r % 2 == 0 else reversed(names):
                            cb = callbacks[name]
                            litellm.callbacks = [cb]
                            kwargs = hook_kwargs(messages)
                            before_restored, before_sends = cb.stats["restored"], trips.sends
                            before_sql = counters[name][0]
                            start = time.perf_counter()
                            await cb.async_pre_call_deployment_hook(kwargs, "acompletion")
                            elapsed = time.perf_counter() - start
                            close_capture(cb, kwargs)
                            if r < 2:
                                # warm-up (connections opened, SQLite file created)
                                counters[name] = _sql_statements(cb)
                                continue
                            latencies[name].append(elapsed)
                            restored[name] += cb.stats["restored"] - before_restored
                            sends[name] += trips.sends - before_sends
                            statements[name] += counters[name][0] - before_sql

                asyncio.run(measure())
                base = median(latencies["memory"]) if "memory" in latencies else float("nan")
                base99 = percentile(latencies.get("memory", []), 99)
                for name in callbacks:
                    lat = latencies[name]
                    per_request = sends[name] / repeat
                    if name.startswith("redis"):
                        redis_trips.append(per_request)
                    trips_text = {
                        "memory": "0 (in process)",
                        "sqlite": f"{statements[name] / repeat:.1f} SQL statements (local file)",
                    }.get(name, f"{per_request:.2f}")
                    rows.append(
                        [
                            name,
                            str(n),
                            f"{restored[name] / repeat:.1f} / {primed[name]}",
                            trips_text,
                            fmt_ms(median(lat)),
                            fmt_ms(percentile(lat, 99)),
                            "—" if name == "memory" else fmt_ms(median(lat) - base),
                            "—" if name == "memory" else fmt_ms(percentile(lat, 99) - base99),
                        ]
                    )
                    print(
                        f"  store {name} n={n}: p50 {fmt_ms(median(lat))} "
                        f"p99 {fmt_ms(percentile(lat, 99))} trips {trips_text}",
                        flush=True,
                    )
    finally:
        litellm.callbacks = previous
        for name, cb in callbacks.items():
            with contextlib.suppress(Exception):
                cb.store.close()
            if name == "redis":
                delete_redis_prefix(REDIS_URL, prefix)
        tmp.cleanup()
    section.table(
        [
            "backend",
            "messages to restore",
            "restored / request",
            "round trips / request",
            "hook p50",
            "hook p99",
            "added p50 (vs memory)",
            "added p99 (vs memory)",
        ],
        rows,
    )
    section.note(
        "hook = the whole pre-call rewrite (`async_pre_call_deployment_hook`) with the store "
        "behind it (SQLite and Redis through `store_from_url`, i.e. behind `ResilientStore`); "
        "backends interleaved request by request; Redis round trips counted by wrapping "
        "redis-py's `send_packed_command` (sync and asyncio), SQLite statements by the "
        "connection's trace callback."
    )
    if "redis" in callbacks:
        ok = bool(redis_trips) and all(t == 1 for t in redis_trips)
        arms = " and cluster" if "redis-cluster" in callbacks else ""
        section.summary.append(
            (
                f"Redis{arms} round trips per request ("
                + "/".join(str(n) for n in counts)
                + " messages to restore)",
                " / ".join(f"{t:g}" for t in redis_trips),
                "1",
                verdict(ok),
            )
        )
    else:
        section.summary.append(("Redis round trips per request", "n/a", "1", "n/a (skipped)"))
    return section
