"""Rewrite cost vs its floor: the pre-call rewrite (restore from the in-memory store) against one
`json.dumps` of the same history, the serialisation every request pays anyway."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from typing import Any

import litellm
from common import (
    TOOLS,
    Section,
    agent_history,
    fmt_ms,
    fmt_ratio,
    median,
    verdict,
)

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import MemoryStore
from litellm_reasoning.types import Reasoning, ReasoningPart

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
        "messages": messages,
        "tools": TOOLS,
    }


def prime_store(cb: ReasoningCallback, messages: list[Any], reasoning: dict[int, str]) -> int:
    """Put each assistant message's reasoning where the callback will look it up."""
    request = cb._prepare(hook_kwargs(messages), messages)
    records = {
        key: Reasoning(parts=(ReasoningPart(text=reasoning[i]),), provider="deepseek")
        for i, key in request.keys.items()
        if i in reasoning
    }
    cb.store.put_many(request.scope, records)
    return len(records)


async def rewrite_once(cb: ReasoningCallback, messages: list[Any]) -> tuple[float, list[Any]]:
    kwargs = hook_kwargs(messages)
    start = time.perf_counter()
    out = await cb.async_pre_call_deployment_hook(kwargs, "acompletion")
    elapsed = time.perf_counter() - start
    cb._pending.close(kwargs["litellm_call_id"])  # no reply follows: close its capture entry
    assert out is not None
    return elapsed, out["messages"]


def run(sizes: list[int], budget_seconds: float, min_repeat: int) -> Section:
    section = Section("rewrite", "Rewrite cost vs its floor (one json.dumps of the history)")
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    previous = list(litellm.callbacks)
    litellm.callbacks = [cb]
    rows: list[list[str]] = []
    per_message: dict[int, float] = {}
    worst = 0.0
    try:
        for n in sizes:
            messages, reasoning = agent_history(n)
            primed = prime_store(cb, messages, reasoning)
            before = cb.stats["restored"]
            _, wire = asyncio.run(rewrite_once(cb, messages))
            restored = cb.stats["restored"] - before
            assert restored == primed, (restored, primed)
            assert all("reasoning_content" in m for m in wire if m["role"] == "assistant")

            def floor(wire: list[Any] = wire) -> None:
                json.dumps(wire)

            # calibrate repetitions to the budget
            start = time.perf_counter()
            asyncio.run(rewrite_once(cb, messages))
            one = time.perf_counter() - start
            repeat = max(min_repeat, min(2000, int(budget_seconds / max(one * 2, 1e-6))))

            async def measure(
                repeat: int = repeat, wire: list[Any] = wire, messages: list[Any] = messages
            ) -> tuple[list, list]:
                hook: list[float] = []
                dumps: list[float] = []
                for r in range(repeat):
                    # interleave: alternate which arm goes first
                    if r % 2:
                        s = time.perf_counter()
                        floor(wire)
                        dumps.append(time.perf_counter() - s)
                    hook.append((await rewrite_once(cb, messages))[0])
                    if not r % 2:
                        s = time.perf_counter()
                        floor(wire)
                        dumps.append(time.perf_counter() - s)
                return hook, dumps

            hook, dumps = asyncio.run(measure())
            ratio = median(hook) / median(dumps)
            worst = max(worst, ratio)
            per_message[n] = median(hook) / n
            rows.append(
                [
                    str(n),
                    str(restored),
                    f"{len(json.dumps(wire)) / 1e6:.2f} MB",
                    fmt_ms(median(dumps)),
                    fmt_ms(median(hook)),
                    f"{per_message[n] * 1e6:.2f} µs",
                    fmt_ratio(ratio),
                    str(repeat),
                ]
            )
            print(
                f"  rewrite n={n}: hook {fmt_ms(median(hook))} floor {fmt_ms(median(dumps))} "
                f"ratio {ratio:.3f} ({repeat} reps)",
                flush=True,
            )
    finally:
        litellm.callbacks = previous
    section.table(
        [
            "messages",
            "restored",
            "wire JSON",
            "json.dumps (floor)",
            "rewrite (hook)",
            "rewrite per message",
            "ratio",
            "reps",
        ],
        rows,
    )
    sizes_sorted = sorted(per_message)
    exponent = float("nan")
    if len(sizes_sorted) >= 2:
        lo, hi = sizes_sorted[0], sizes_sorted[-1]
        exponent = 1 + math.log(per_message[hi] / per_message[lo]) / math.log(hi / lo)
    linear = exponent == exponent and exponent <= 1.15
    section.note(
        f"growth: time ~ n^{exponent:.2f} between {sizes_sorted[0]} and {sizes_sorted[-1]} "
        "messages (1.00 = linear)"
    )
    section.note(
        f"history: agent tool loop ({MODEL} with tools: policy all_turns, dialect "
        "openai_chat_required), every assistant message dropped by the client and restored from "
        "the in-memory store; the floor is json.dumps of the rendered wire messages. "
        "Medians; hook and dumps interleaved."
    )
    section.summary.append(
        ("rewrite / json.dumps, worst size", fmt_ratio(worst), "<= 0.5x", verdict(worst <= 0.5))
    )
    section.summary.append(
        ("rewrite growth exponent", f"n^{exponent:.2f}", "linear", verdict(linear))
    )
    return section
