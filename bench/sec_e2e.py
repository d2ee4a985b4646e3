"""End to end in LiteLLM: `acompletion` with and without the callback against local servers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import litellm
from common import TOOLS, Section, agent_history, fmt_ms, fmt_ratio, median, percentile, verdict
from empty_callback import EmptyLogger
from litellm.integrations.custom_logger import CustomLogger
from sec_rewrite import fresh, prime_store
from upstream_proc import upstream_process

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import MemoryStore

UPSTREAM_MODEL = "deepseek-v4-flash"
REPLY: dict[str, Any] = {
    "role": "assistant",
    "content": "Running the tests now.",
    "reasoning_content": "The parser fix is in; run the suite to confirm before answering.",
    "tool_calls": [
        {
            "id": "call_e2e_reply_0001",
            "type": "function",
            "function": {"name": "run_tests", "arguments": '{"path": "tests"}'},
        }
    ],
}


ARMS = ("without", "empty", "with")


def _register(cb: CustomLogger | None) -> None:
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [cb] if cb is not None else []


async def _one(params: dict[str, Any], stream: bool) -> None:
    response = await litellm.acompletion(**params, stream=stream)
    if stream:
        async for _ in response:  # time to the last chunk
            pass


async def _compare(
    params: dict[str, Any], cb: ReasoningCallback, stream: bool, repeat: int
) -> dict[str, list[float]]:
    """`acompletion` without a callback, with an empty one and with ours, request by request
    (order turned around every round). Every call gets new message dicts, as from a client."""
    callbacks: dict[str, CustomLogger | None] = {
        "without": None,
        "empty": EmptyLogger(),
        "with": cb,
    }
    out: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for arm in ARMS:  # warm every path (imports, connection pools)
        _register(callbacks[arm])
        for _ in range(3):
            await _one({**params, "messages": fresh(params["messages"])}, stream)
    for r in range(repeat):
        for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
            _register(callbacks[arm])
            call = {**params, "messages": fresh(params["messages"])}
            start = time.perf_counter()
            await _one(call, stream)
            out[arm].append(time.perf_counter() - start)
            await asyncio.sleep(0)  # let logging tasks of this call run outside the next timing
    _register(None)
    return out


def _rows(
    label: str, results: dict[bool, dict[str, list[float]]], section: Section, goal: float
) -> list[list[str]]:
    rows = []
    for stream, res in results.items():
        without, empty, with_ = (median(res[arm]) for arm in ARMS)
        ratio = with_ / without
        kind = "stream, time to last chunk" if stream else "non-streaming"
        rows.append(
            [
                label,
                kind,
                fmt_ms(without),
                fmt_ms(empty),
                fmt_ms(with_),
                fmt_ratio(ratio),
                fmt_ratio(percentile(res["with"], 99) / percentile(res["without"], 99)),
                fmt_ratio(empty / without),
                fmt_ratio(with_ / empty),
                str(len(res["with"])),
            ]
        )
        section.summary.append(
            (
                f"e2e {label} {kind}: with / without",
                fmt_ratio(ratio),
                "<= 1.02x",
                verdict(ratio <= goal),
            )
        )
        section.summary.append(
            (
                f"e2e {label} {kind}: empty callback / without (LiteLLM's floor); "
                "with / empty callback (ours alone)",
                f"{fmt_ratio(empty / without)}; {fmt_ratio(with_ / empty)}",
                "—",
                "info",
            )
        )
    return rows


def run_openai(history_size: int, repeat: int) -> tuple[list[list[str]], Section]:
    section = Section("e2e", "End to end in LiteLLM (acompletion, with vs without the callback)")
    messages, reasoning = agent_history(history_size, seed="e2e")
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    rows: list[list[str]] = []
    with upstream_process({UPSTREAM_MODEL: REPLY}) as base_url:
        params = {
            "model": f"deepseek/{UPSTREAM_MODEL}",
            "api_base": base_url,
            "api_key": "k",
            "messages": messages,
            "tools": TOOLS,
        }
        _register(cb)
        primed = prime_store(cb, messages, reasoning)
        results: dict[bool, dict[str, list[float]]] = {}
        for stream in (False, True):
            before = cb.stats["restored"]
            results[stream] = asyncio.run(_compare(params, cb, stream, repeat))
            per_call = (cb.stats["restored"] - before) / (repeat + 3)
            print(
                f"  e2e openai stream={stream}: "
                + " ".join(f"{arm} {fmt_ms(median(results[stream][arm]))}" for arm in ARMS)
                + f" (restored/call {per_call:.0f} of {primed})",
                flush=True,
            )
        rows += _rows("OpenAI-compatible", results, section, 1.02)
    section.note(
        f"history: {history_size}-message agent tool loop, `deepseek/{UPSTREAM_MODEL}` with tools "
        f"(all_turns: {primed} assistant messages restored from the in-memory store on every "
        "call, and the reply captured), new message dicts on every call; the local servers run "
        "in their own processes, with Nagle's algorithm off (the test server's two writes per "
        "response would otherwise wait ~40 ms for a delayed ACK, hiding every other cost)."
    )
    section.note(
        "arms: no callback, an empty `CustomLogger` (what LiteLLM's callback machinery costs by "
        "itself: logging objects, success handlers on its thread pool, the standard logging "
        "payload; nothing this package can remove), and `ReasoningCallback`; they alternate "
        "request by request (order turned around each round); medians."
    )
    return rows, section


async def _anthropic(section: Section, history_size: int, repeat: int) -> list[list[str]] | None:
    messages, reasoning = agent_history(history_size, seed="e2e-anthropic")
    model = "claude-sonnet-4-5"
    content = [
        {"type": "thinking", "thinking": "Run the suite.", "signature": "sig-bench"},
        {"type": "text", "text": "Running the tests now."},
    ]
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    _register(cb)
    prime_store(cb, messages, reasoning)
    with upstream_process({model: content}, kind="anthropic") as base_url:
        params = {
            "model": f"anthropic/{model}",
            "api_base": base_url,
            "api_key": "k",
            "messages": messages,
            "tools": TOOLS,
            "max_tokens": 256,
        }
        results = {s: await _compare(params, cb, s, repeat) for s in (False, True)}
    for stream, res in results.items():
        print(
            f"  e2e anthropic stream={stream}: "
            + " ".join(f"{arm} {fmt_ms(median(res[arm]))}" for arm in ARMS),
            flush=True,
        )
    return _rows("Anthropic-format", results, section, 1.02)


def run(history_size: int, repeat: int) -> Section:
    rows, section = run_openai(history_size, repeat)
    try:
        anthropic_rows = asyncio.run(_anthropic(section, history_size, repeat))
    except Exception as exc:
        anthropic_rows = None
        section.note(
            f"Anthropic-format: n/a (the local server failed: {type(exc).__name__}: {exc})"
        )
    if anthropic_rows is None:
        rows.append(["Anthropic-format", "both", *["n/a"] * 7, "0"])
        section.summary.append(
            ("e2e Anthropic-format: with / without", "n/a", "<= 1.02x", "n/a (no local server)")
        )
    else:
        rows += anthropic_rows
    section.table(
        [
            "server",
            "call",
            "without",
            "empty callback",
            "with",
            "with / without (median)",
            "with / without (p99)",
            "empty / without",
            "with / empty",
            "reps/arm",
        ],
        rows,
    )
    return section
