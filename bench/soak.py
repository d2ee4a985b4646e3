"""Soak: many concurrent tool-loop conversations through one callback for N seconds, checking
that every request restores exactly its own conversation's reasoning and that memory stays flat.

    python bench/soak.py --seconds 300 --conversations 200

Each conversation is a two-step tool loop on the local upstream with its own reasoning text;
the second request (from a client that drops reasoning) must carry exactly that text on the wire.
RSS and tracemalloc are sampled every `--every` seconds. After a warm-up (the first quarter of
the run) memory growth must stay under `--max-growth-mb`; exit status 1 otherwise, or on any
isolation failure. `tests/integration/test_reliability_load.py` runs a short version of this.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import time
import tracemalloc
import uuid
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import MemoryStore
from litellm_reasoning.testing.upstream import Reply, Upstream


def rss_mb() -> float:
    """Current resident set size (Linux /proc), else the peak."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Sample:
    at: float
    rss_mb: float
    traced_mb: float
    conversations: int


@dataclass
class SoakResult:
    conversations: int = 0
    mismatches: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)
    """What the callback holds at the end: tracked calls, open captures, stored records."""

    def growth_mb(self, warmup: float) -> tuple[float, float]:
        """(RSS, traced) growth from the first sample after `warmup` to the last."""
        after = [s for s in self.samples if s.at >= warmup] or self.samples
        return after[-1].rss_mb - after[0].rss_mb, after[-1].traced_mb - after[0].traced_mb


def _call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }


async def conversation(upstream: Upstream, index: int, width: int, result: SoakResult) -> None:
    """One two-step tool loop; records a mismatch when the wire carries anything but its own
    reasoning."""
    tag = uuid.uuid4().hex[:12]
    model = f"soak-{index % width}"  # one upstream model per conversation of a batch
    reasoning = f"reasoning of conversation {tag} " * 4
    call_id = f"call_{tag}"
    upstream.script(
        model,
        Reply(
            message={"content": "", "reasoning_content": reasoning, "tool_calls": [_call(call_id)]}
        ),
    )
    history: list[dict[str, Any]] = [{"role": "user", "content": f"task {tag}"}]
    # Each conversation is its own end user (`user` is part of the tenant scope).
    common = {
        "model": f"openai/{model}",
        "api_base": upstream.base_url,
        "api_key": "k",
        "user": tag,
    }
    first = await litellm.acompletion(messages=list(history), **common)
    got = first.choices[0].message
    received = got.reasoning_content
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in got.tool_calls or []
    ]
    history += [
        {"role": "assistant", "content": got.content or "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "42"},
    ]
    upstream.script(model, Reply(message={"content": "done"}))
    await litellm.acompletion(messages=list(history), **common)
    wire = next(
        (b for b in reversed(upstream.bodies(model)) if len(b["messages"]) == 3),
        None,
    )
    sent = None if wire is None else wire["messages"][1].get("reasoning_content")
    if sent != received:
        result.mismatches.append(f"{tag}: sent {sent!r}, received {received!r}")
    result.conversations += 1


async def soak(
    seconds: float,
    conversations: int,
    every: float,
    upstream: Upstream,
    *,
    trace: bool = False,
    max_tracked_calls: int = 10_000,
    store_records: int = 50_000,
) -> SoakResult:
    """`trace`: also sample tracemalloc (slows LiteLLM down several times). Small
    `max_tracked_calls` / `store_records` reach the callback's bounds within a short run."""
    callback = ReasoningCallback(
        store=MemoryStore(max_records=store_records),
        capture_wait_seconds=5.0,
        max_tracked_calls=max_tracked_calls,
    )
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [callback]
    result = SoakResult()
    if trace:
        tracemalloc.start()
    start = time.monotonic()
    next_sample = start
    index = 0
    try:
        while time.monotonic() - start < seconds:
            batch = [
                conversation(upstream, index + i, conversations, result)
                for i in range(conversations)
            ]
            index += conversations
            await asyncio.gather(*batch)
            # The local server keeps every body it received: drop them so the harness itself
            # does not grow (the callback's own state is what is measured).
            with upstream._lock:
                upstream.received.clear()
            if time.monotonic() >= next_sample:
                gc.collect()
                traced = tracemalloc.get_traced_memory()[0] if trace else 0
                result.samples.append(
                    Sample(time.monotonic() - start, rss_mb(), traced / 2**20, result.conversations)
                )
                next_sample += every
        result.held = {
            "open_captures": callback.open_captures,
            "records": len(callback.store),  # type: ignore[arg-type]
        }
    finally:
        if trace:
            tracemalloc.stop()
        litellm.logging_callback_manager._reset_all_callbacks()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--conversations", type=int, default=200, help="run at once")
    parser.add_argument("--every", type=float, default=10.0, help="sample interval, seconds")
    parser.add_argument("--max-growth-mb", type=float, default=20.0)
    parser.add_argument("--tracemalloc", action="store_true", help="also trace allocations")
    parser.add_argument("--max-tracked-calls", type=int, default=10_000)
    parser.add_argument("--store-records", type=int, default=50_000)
    args = parser.parse_args(argv)
    with Upstream() as upstream:
        result = asyncio.run(
            soak(
                args.seconds,
                args.conversations,
                args.every,
                upstream,
                trace=args.tracemalloc,
                max_tracked_calls=args.max_tracked_calls,
                store_records=args.store_records,
            )
        )
    for s in result.samples:
        print(
            f"t={s.at:7.1f}s conversations={s.conversations:7d} rss={s.rss_mb:8.1f} MB "
            f"traced={s.traced_mb:7.1f} MB"
        )
    rss, traced = result.growth_mb(args.seconds / 4)
    print(f"after warm-up: RSS {rss:+.1f} MB, traced {traced:+.1f} MB")
    print(f"conversations {result.conversations}, mismatches {len(result.mismatches)}")
    print(f"held at the end: {result.held}")
    for line in result.mismatches[:10]:
        print("MISMATCH", line)
    ok = not result.mismatches and rss < args.max_growth_mb and traced < args.max_growth_mb
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
