"""End to end in LiteLLM: `acompletion` with and without the callback against local servers."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import time
from collections.abc import Callable
from typing import Any

import litellm
from common import TOOLS, Section, agent_history, fmt_ms, fmt_ratio, median, percentile, verdict
from sec_rewrite import prime_store
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


def _register(cb: ReasoningCallback | None) -> None:
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
    out: dict[str, list[float]] = {"with": [], "without": []}
    for arm in ("with", "without"):  # warm both paths (imports, connection pools)
        _register(cb if arm == "with" else None)
        for _ in range(3):
            await _one(params, stream)
    for r in range(repeat):
        for arm in ("with", "without") if r % 2 == 0 else ("without", "with"):
            _register(cb if arm == "with" else None)
            start = time.perf_counter()
            await _one(params, stream)
            out[arm].append(time.perf_counter() - start)
            await asyncio.sleep(0)  # let logging tasks of this call run outside the next timing
    _register(None)
    return out


def _rows(
    label: str, results: dict[bool, dict[str, list[float]]], section: Section, goal: float
) -> list[list[str]]:
    rows = []
    for stream, res in results.items():
        ratio = median(res["with"]) / median(res["without"])
        kind = "stream, time to last chunk" if stream else "non-streaming"
        rows.append(
            [
                label,
                kind,
                fmt_ms(median(res["without"])),
                fmt_ms(median(res["with"])),
                fmt_ratio(ratio),
                fmt_ratio(percentile(res["with"], 99) / percentile(res["without"], 99)),
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
    return rows


def _find_anthropic_server() -> Callable[[], Any] | None:
    """An Anthropic-format local server class offered by `litellm_reasoning.testing`, if any."""
    import litellm_reasoning.testing as testing

    for info in pkgutil.iter_modules(testing.__path__, testing.__name__ + "."):
        try:
            module = importlib.import_module(info.name)
        except Exception:
            continue
        for name in dir(module):
            obj = getattr(module, name)
            if isinstance(obj, type) and "anthropic" in name.lower() and hasattr(obj, "base_url"):
                return obj
    return None


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
                f"  e2e openai stream={stream}: with {fmt_ms(median(results[stream]['with']))} "
                f"without {fmt_ms(median(results[stream]['without']))} "
                f"(restored/call {per_call:.0f} of {primed})",
                flush=True,
            )
        rows += _rows("OpenAI-compatible", results, section, 1.02)
    section.note(
        f"history: {history_size}-message agent tool loop, `deepseek/{UPSTREAM_MODEL}` with tools "
        f"(all_turns: {primed} assistant messages restored from the in-memory store on every "
        "call, and the reply captured); the local server runs in its own process."
    )
    section.note("with/without alternate request by request (order flipped each round); medians.")
    return rows, section


async def _anthropic(section: Section, history_size: int, repeat: int) -> list[list[str]] | None:
    server_cls = _find_anthropic_server()
    if server_cls is None:
        return None
    import sys

    reply_cls = getattr(sys.modules[server_cls.__module__], "AnthropicReply", None)
    messages, reasoning = agent_history(history_size, seed="e2e-anthropic")
    model = "claude-sonnet-4-5"
    content = [
        {"type": "thinking", "thinking": "Run the suite.", "signature": "sig-bench"},
        {"type": "text", "text": "Running the tests now."},
    ]
    cb = ReasoningCallback(MemoryStore(max_records=100_000))
    _register(cb)
    prime_store(cb, messages, reasoning)
    with server_cls() as server:
        if reply_cls is not None:
            server.always(model, reply_cls(content=content))
        else:
            from litellm_reasoning.testing.upstream import Reply

            server.always(model, Reply(message={"role": "assistant", "content": content}))
        params = {
            "model": f"anthropic/{model}",
            "api_base": server.base_url,
            "api_key": "k",
            "messages": messages,
            "tools": TOOLS,
            "max_tokens": 256,
        }
        results = {s: await _compare(params, cb, s, repeat) for s in (False, True)}
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
        if not any("Anthropic" in n for n in section.notes):
            section.note("Anthropic-format: n/a (no Anthropic local server yet)")
        rows.append(["Anthropic-format", "both", "n/a", "n/a", "n/a", "n/a", "0"])
        section.summary.append(
            ("e2e Anthropic-format: with / without", "n/a", "<= 1.02x", "n/a (no local server)")
        )
    else:
        rows += anthropic_rows
    section.table(
        ["server", "call", "without", "with", "ratio (median)", "ratio (p99)", "reps/arm"], rows
    )
    return section
