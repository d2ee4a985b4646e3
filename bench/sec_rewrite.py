"""Rewrite cost vs its floor: the pre-call rewrite (restore from the in-memory store) against one
`json.dumps` of the same history, the serialisation every request pays anyway."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import litellm
import sec_rewrite_items
import sec_rewrite_messages
from common import (
    TOOLS,
    Section,
    agent_history,
    delete_redis_prefix,
    fmt_ms,
    fmt_ratio,
    median,
    rounds_within,
    verdict,
)

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.accelerator import NATIVE
from litellm_reasoning.core.identity import has_tool_call_ids
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.memo.prefix_cache import PrefixCache
from litellm_reasoning.stores import MemoryStore, _codec

REDIS_URL = "redis://127.0.0.1:6379/0"

MODEL = "deepseek/deepseek-v4-flash"
"""DeepSeek with tools: policy all_turns, dialect openai_chat_required, so every assistant
message of the history is looked up and restored (the heaviest real rule)."""


def hook_kwargs(messages: list[Any], api_base: str = "http://127.0.0.1:9/v1") -> dict[str, Any]:
    """The kwargs LiteLLM 1.106 hands `async_pre_call_deployment_hook` for `acompletion`
    (recorded with a spy callback: model, api_base, api_key, litellm_call_id, messages, tools)."""
    return {
        "model": MODEL,
        "api_base": api_base,
        "api_key": "k",
        "litellm_call_id": str(uuid.uuid4()),
        # LiteLLM's per-call logging object, where the callback keeps the call's state.
        "litellm_logging_obj": SimpleNamespace(model_call_details={}),
        "messages": messages,
        "tools": TOOLS,
    }


def prime_store(
    cb: ReasoningCallback,
    messages: list[Any],
    reasoning: dict[int, str],
    kwargs: dict[str, Any] | None = None,
) -> int:
    """Put each assistant message's reasoning where the callback will look it up for a call
    with `kwargs` (default `hook_kwargs`: what decides the scope and the target)."""
    request = cb.engine.prepare(cb.engine.facts_of(kwargs or hook_kwargs(messages)), messages)
    # As the callback captures them: a tool-call message's record names the conversation
    # before it (`shared_keys`), which every read compares.
    records = {
        key: Reasoning(
            parts=(ReasoningPart(text=reasoning[i]),),
            provider="deepseek",
            conversation=request.before[i] if has_tool_call_ids(messages[i]) else None,
        )
        for i, key in request.keys.items()
        if i in reasoning
    }
    cb.store.put_many(request.scope, records)
    return len(records)


CLOCK = time.process_time
"""CPU time of this process (every thread: the Redis store's blocking client runs on the
store's own threads), so a loaded machine does not move the ratios as wall-clock time would."""


async def rewrite_once(cb: ReasoningCallback, messages: list[Any]) -> tuple[float, list[Any]]:
    kwargs = hook_kwargs(messages)
    start = CLOCK()
    out = await cb.async_pre_call_deployment_hook(kwargs, "acompletion")
    elapsed = CLOCK() - start
    close_capture(cb, kwargs)
    assert out is not None
    return elapsed, out["messages"]


def close_capture(cb: ReasoningCallback, kwargs: dict[str, Any]) -> None:
    """No reply follows: the call ends as a failed one would, closing its capture entry."""
    cb.log_failure_event(kwargs["litellm_logging_obj"].model_call_details, None, None, None)


def fresh(messages: list[Any]) -> list[Any]:
    """New dicts with the same content, as each request brings them (the proxy parses JSON,
    LiteLLM copies): nothing can be recognised by identity."""
    copied: list[Any] = json.loads(json.dumps(messages))
    return copied


async def warm_rewrite(cb: ReasoningCallback, messages: list[Any]) -> tuple[float, list[Any]]:
    """The agent loop's common case: the conversation's previous request (two messages shorter:
    the last tool call and its result are new) went through this callback just before."""
    await rewrite_once(cb, fresh(messages[:-2]))
    return await rewrite_once(cb, fresh(messages))


async def cold_rewrite(cb: ReasoningCallback, messages: list[Any]) -> tuple[float, list[Any]]:
    """No earlier request of the conversation remembered (first request after a restart, or a
    proxy worker that never saw the conversation): every message hashed."""
    remembered = cb.prefix_cache
    cb.prefix_cache = PrefixCache()
    try:
        return await rewrite_once(cb, fresh(messages))
    finally:
        cb.prefix_cache = remembered


async def registered_rewrite(
    rewrite: Callable[[ReasoningCallback, list[Any]], Awaitable[tuple[float, list[Any]]]],
    redis_cb: ReasoningCallback,
    registered: ReasoningCallback,
    messages: list[Any],
) -> tuple[float, list[Any]]:
    """`rewrite` (`cold_rewrite`, or `warm_rewrite`: a proxy worker's common request, its
    records read from Redis again) by the Redis arm's callback, registered with LiteLLM
    meanwhile (an unregistered instance leaves requests alone)."""
    litellm.callbacks = [redis_cb]
    try:
        return await rewrite(redis_cb, messages)
    finally:
        litellm.callbacks = [registered]


def _redis_callback() -> tuple[ReasoningCallback, str] | None:
    """A callback on the local Redis under a key prefix of its own (and the prefix); None
    without a server."""
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping()
    except Exception:
        return None
    prefix = f"bench-rewrite-{uuid.uuid4().hex[:8]}:"
    return ReasoningCallback(f"{REDIS_URL}?prefix={prefix}&timeout=2"), prefix


def _held_and_peak(n: int, scale: int) -> tuple[int, int, int]:
    """(bytes still held after a cold rewrite, peak bytes during it, reasoning bytes restored)
    for an `n`-message history whose reasoning texts are repeated `scale` times. SQLite store:
    records are decoded into this process per request, as from any shared store."""
    messages, reasoning = agent_history(n)
    reasoning = {i: text * scale for i, text in reasoning.items()}
    with tempfile.TemporaryDirectory() as tmp:
        cb = ReasoningCallback(f"sqlite:///{Path(tmp) / 'bench.db'}")
        previous = list(litellm.callbacks)
        litellm.callbacks = [cb]
        try:
            prime_store(cb, messages, reasoning)
            request = fresh(messages)
            gc.collect()
            tracemalloc.start()
            try:
                base, _ = tracemalloc.get_traced_memory()
                tracemalloc.reset_peak()
                _, wire = asyncio.run(rewrite_once(cb, request))
                _, peak = tracemalloc.get_traced_memory()
                del wire, request  # the request's own messages: the caller's, not kept
                gc.collect()
                held, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        finally:
            litellm.callbacks = previous
            cb.store.close()
    return held - base, peak - base, sum(len(t.encode()) for t in reasoning.values())


def memory_per_restored_byte(n: int) -> tuple[float, float, int]:
    """How many bytes the process keeps (after the request) and allocates at most (during
    it) for each byte of reasoning a cold rewrite restores: the slope between the same history
    with its reasoning 1x and 4x as long, so what does not grow with the reasoning (message
    copies, memos' fixed costs) cancels out. 1.0 held = each restored byte kept once."""
    held1, peak1, bytes1 = _held_and_peak(n, 1)
    held4, peak4, bytes4 = _held_and_peak(n, 4)
    grown = bytes4 - bytes1
    return (held4 - held1) / grown, (peak4 - peak1) / grown, bytes4


def plot(series: dict[int, tuple[float, float, float]], path: Path) -> bool:
    """Cost against history size for the floor, warm and cold arms (PNG); False without
    matplotlib (a bench-only tool, not a dependency)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = sorted(series)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for column, label, style in (
        (0, "json.dumps of the history (floor)", "k--"),
        (1, "rewrite, warm (previous request remembered)", "o-"),
        (2, "rewrite, cold (nothing remembered)", "s-"),
    ):
        ax.plot(sizes, [series[n][column] for n in sizes], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the history")
    ax.set_ylabel("milliseconds (median)")
    ax.set_title("Pre-call rewrite cost against history size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def run(
    sizes: list[int], budget_seconds: float, min_repeat: int, out_dir: Path | None = None
) -> Section:
    section = Section("rewrite", "Rewrite cost vs its floor (one json.dumps of the history)")
    series: dict[int, tuple[float, float, float]] = {}
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    redis_arm = _redis_callback()
    redis_cb = redis_arm[0] if redis_arm is not None else None
    if redis_cb is None:
        section.note("cold, Redis: skipped (no Redis server on 127.0.0.1:6379)")
    previous = list(litellm.callbacks)
    litellm.callbacks = [cb]
    rows: list[list[str]] = []
    per_message: dict[int, float] = {}
    per_message_cold: dict[int, float] = {}
    worst = worst_cold = worst_redis = worst_redis_warm = worst_redis_new = 0.0
    try:
        for n in sizes:
            messages, reasoning = agent_history(n)
            primed = prime_store(cb, messages, reasoning)
            if redis_cb is not None:
                prime_store(redis_cb, messages, reasoning)
                cold_on_redis = registered_rewrite(cold_rewrite, redis_cb, cb, messages)
                _, redis_wire = asyncio.run(cold_on_redis)
            before = cb.stats["restored"]
            _, wire = asyncio.run(cold_rewrite(cb, messages))
            restored = cb.stats["restored"] - before
            assert restored == primed, (restored, primed)
            assert all("reasoning_content" in m for m in wire if m["role"] == "assistant")
            _, warm_wire = asyncio.run(warm_rewrite(cb, messages))
            assert warm_wire == wire, "the remembered history changed what is sent"
            if redis_cb is not None:
                assert redis_wire == wire, "the Redis store changed what is sent"

            def floor(wire: list[Any] = wire) -> None:
                json.dumps(wire)

            # calibrate repetitions to the budget
            start = time.perf_counter()
            asyncio.run(cold_rewrite(cb, messages))
            one = time.perf_counter() - start
            arms = 6 if redis_cb is not None else 3
            repeat = rounds_within(budget_seconds, one * arms, min_repeat, 2000)

            async def measure(
                repeat: int = repeat, wire: list[Any] = wire, messages: list[Any] = messages
            ) -> dict[str, list[float]]:
                times: dict[str, list[float]] = {
                    "dumps": [],
                    "warm": [],
                    "cold": [],
                    "redis": [],
                    "redis_warm": [],
                    "redis_new": [],
                }
                order = ("dumps", "warm", "cold", "redis", "redis_warm", "redis_new")
                if redis_cb is None:
                    order = order[:3]
                for r in range(repeat):
                    # interleaved, the order turned around every round
                    for arm in order[:: 1 if r % 2 else -1]:
                        if arm == "dumps":
                            s = CLOCK()
                            floor(wire)
                            times[arm].append(CLOCK() - s)
                        elif arm == "warm":
                            times[arm].append((await warm_rewrite(cb, messages))[0])
                        elif arm == "cold":
                            times[arm].append((await cold_rewrite(cb, messages))[0])
                        elif redis_cb is not None:
                            if arm == "redis_new":
                                # A worker's first request of the conversation: nothing decoded
                                # before (this arm decodes it all again: no other arm pays it).
                                _codec.DECODED.clear()
                            rewrite = warm_rewrite if arm == "redis_warm" else cold_rewrite
                            elapsed, _ = await registered_rewrite(rewrite, redis_cb, cb, messages)
                            times[arm].append(elapsed)
                return times

            times = asyncio.run(measure())
            warm, cold, dumps = times["warm"], times["cold"], times["dumps"]
            ratio = median(warm) / median(dumps)
            ratio_cold = median(cold) / median(dumps)
            worst, worst_cold = max(worst, ratio), max(worst_cold, ratio_cold)
            if times["redis"]:
                ratio_redis = median(times["redis"]) / median(dumps)
                ratio_redis_warm = median(times["redis_warm"]) / median(dumps)
                worst_redis = max(worst_redis, ratio_redis)
                worst_redis_warm = max(worst_redis_warm, ratio_redis_warm)
                ratio_redis_new = median(times["redis_new"]) / median(dumps)
                worst_redis_new = max(worst_redis_new, ratio_redis_new)
                redis_cells = [
                    fmt_ms(median(times["redis"])),
                    fmt_ratio(ratio_redis),
                    fmt_ms(median(times["redis_warm"])),
                    fmt_ratio(ratio_redis_warm),
                    fmt_ms(median(times["redis_new"])),
                    fmt_ratio(ratio_redis_new),
                ]
            else:
                redis_cells = ["—"] * 6
            per_message[n] = median(warm) / n
            per_message_cold[n] = median(cold) / n
            series[n] = (median(dumps) * 1e3, median(warm) * 1e3, median(cold) * 1e3)
            rows.append(
                [
                    str(n),
                    str(restored),
                    f"{len(json.dumps(wire)) / 1e6:.2f} MB",
                    fmt_ms(median(dumps)),
                    fmt_ms(median(warm)),
                    fmt_ratio(ratio),
                    fmt_ms(median(cold)),
                    fmt_ratio(ratio_cold),
                    *redis_cells,
                    str(repeat),
                ]
            )
            print(
                f"  rewrite n={n}: warm {fmt_ms(median(warm))} cold {fmt_ms(median(cold))} "
                f"floor {fmt_ms(median(dumps))} ratio {ratio:.3f} (cold {ratio_cold:.3f}, "
                f"{repeat} reps)",
                flush=True,
            )
    finally:
        litellm.callbacks = previous
        if redis_arm is not None:
            redis_arm[0].store.close()
            delete_redis_prefix(REDIS_URL, redis_arm[1])
    section.table(
        [
            "messages",
            "restored",
            "wire JSON",
            "json.dumps (floor)",
            "rewrite",
            "ratio",
            "rewrite, cold",
            "ratio, cold",
            "cold, Redis",
            "ratio, cold, Redis",
            "rewrite, Redis",
            "ratio, Redis",
            "cold, Redis, nothing decoded",
            "ratio, cold, Redis, nothing decoded",
            "reps",
        ],
        rows,
    )
    litellm.callbacks = [cb]
    try:
        sec_rewrite_messages.add_to(section, cb, sizes, max(min_repeat, 5), budget_seconds)
        sec_rewrite_items.add_to(section, cb, sizes, max(min_repeat, 5), budget_seconds)
    finally:
        litellm.callbacks = previous

    def growth(per: dict[int, float]) -> float:
        ordered = sorted(per)
        if len(ordered) < 2:
            return float("nan")
        lo, hi = ordered[0], ordered[-1]
        return 1 + math.log(per[hi] / per[lo]) / math.log(hi / lo)

    exponent, exponent_cold = growth(per_message), growth(per_message_cold)
    linear = exponent == exponent and exponent <= 1.15
    sizes_sorted = sorted(per_message)
    section.note(
        f"growth: time ~ n^{exponent:.2f} (cold n^{exponent_cold:.2f}) between "
        f"{sizes_sorted[0]} and {sizes_sorted[-1]} messages (1.00 = linear)"
    )
    section.note(
        f"history: agent tool loop ({MODEL} with tools: policy all_turns, dialect "
        "openai_chat_required), every assistant message dropped by the client and restored from "
        "the in-memory store; the floor is json.dumps of the rendered wire messages. Every "
        "request brings new message dicts (a JSON round trip of the history, outside the "
        "timing). `rewrite`: the conversation's previous request (two messages shorter) went "
        "through the callback just before, as in an agent loop; `cold`: nothing remembered "
        "(first request after a restart, or a proxy worker that never saw the conversation). "
        "`cold, Redis`: the same on a callback whose store is the local Redis (records read "
        "and decoded as a worker of a shared store does; the worker's record cache has seen "
        "these records before, as after its first request of the conversation); `rewrite, Redis`: "
        "`rewrite` on that callback, a proxy worker's common request (it served the "
        "conversation before: the records are read from Redis again); `cold, Redis, nothing "
        "decoded`: `cold, Redis` on a process that never decoded these records (a worker's "
        "first request of the conversation, or its first after a restart). Process CPU "
        "time, medians; the arms interleaved."
    )
    # The cold goals depend on the path measured: 2.5x for pure Python, 1.0x with the
    # accelerator (`LITELLM_REASONING_PURE_PYTHON=1` measures the pure path).
    path, cold_goal = ("accelerated", 1.0) if NATIVE is not None else ("pure Python", 2.5)
    section.note(f"path measured: {path} (cold goal <= {cold_goal}x)")
    section.summary.append(
        (
            f"rewrite / json.dumps, worst size ({path})",
            fmt_ratio(worst),
            "<= 0.5x",
            verdict(worst <= 0.5),
        )
    )
    if redis_cb is not None:
        section.summary.append(
            (
                f"rewrite / json.dumps, cold, Redis store, worst size ({path})",
                fmt_ratio(worst_redis),
                f"<= {cold_goal}x",
                verdict(worst_redis <= cold_goal),
            )
        )
        section.summary.append(
            (
                f"rewrite / json.dumps, Redis store, worst size ({path}): a proxy worker's "
                "common request",
                fmt_ratio(worst_redis_warm),
                "—",
                "info",
            )
        )
        section.summary.append(
            (
                f"rewrite / json.dumps, cold, Redis store, nothing decoded before, worst size "
                f"({path}): a worker's first request of the conversation",
                fmt_ratio(worst_redis_new),
                "—",
                "info",
            )
        )
    section.summary.append(
        ("rewrite growth exponent", f"n^{exponent:.2f}", "linear", verdict(linear))
    )
    section.summary.append(
        (
            f"rewrite / json.dumps, cold (nothing remembered), worst size ({path})",
            fmt_ratio(worst_cold),
            f"<= {cold_goal}x (pure Python 2.5x; with the accelerator 1.0x)",
            verdict(worst_cold <= cold_goal),
        )
    )
    largest = max(sizes)
    held, peak, restored = memory_per_restored_byte(largest)
    section.note(
        f"memory, cold rewrite of {largest} messages from a SQLite store (up to {restored} bytes "
        f"of reasoning restored): per restored byte, {held:.2f} bytes still held after the "
        f"request (prefix cache, memos) and {peak:.2f} at the peak during it (tracemalloc; the "
        "slope between the history with its reasoning 1x and 4x as long)"
    )
    section.summary.append(
        (
            "bytes held after a cold rewrite per restored byte (each restored byte at most once)",
            f"{held:.2f}",
            "<= 1.0",
            verdict(held <= 1.0),
        )
    )
    section.summary.append(
        ("peak bytes during a cold rewrite per restored byte", f"{peak:.2f}", "—", "info")
    )
    if out_dir is not None and len(series) > 1:
        path = out_dir / "rewrite.png"
        if plot(series, path):
            section.note(f"plot: {path.name} (floor, warm and cold against history size)")
        else:
            section.note("plot not drawn: matplotlib is not installed (pip install matplotlib)")
    return section
