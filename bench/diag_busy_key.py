"""Many agents on one key, in process: each agent continues its own tool loop (two messages per
request), their requests interleaved, through one callback whose prefix memo keeps
`per_scope` conversations per scope. Prints CPU per request (median) against one `json.dumps`
of the same history.

    python bench/diag_busy_key.py MESSAGES AGENTS PER_SCOPE [STEPS]

A diagnostic (bench/README.md, "Many agents on one key"), not a section of `run.py`."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import litellm
import sec_rewrite
from common import agent_history

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.memo.prefix_cache import PrefixCache
from litellm_reasoning.stores import MemoryStore


def main(size: int, agents: int, per_scope: int, steps: int) -> str:
    callback = ReasoningCallback(MemoryStore(max_records=1_000_000))
    callback.prefix_cache = PrefixCache(per_scope=per_scope)
    litellm.callbacks = [callback]
    histories: list[list[Any]] = []
    for agent in range(agents):
        messages, reasoning = agent_history(size + 2 * steps, seed=f"busy-key-{agent}")
        sec_rewrite.prime_store(callback, messages, reasoning)
        histories.append(messages)
    rewrites: list[float] = []
    dumps: list[float] = []

    async def interleaved() -> None:
        for step in range(steps):
            length = size + 2 * step
            for history in histories:
                elapsed, _ = await sec_rewrite.rewrite_once(
                    callback, sec_rewrite.fresh(history[:length])
                )
                if step >= 2:  # every agent's conversation remembered once, if it fits
                    rewrites.append(elapsed)
                    copied = sec_rewrite.fresh(history[:length])
                    start = time.process_time()
                    json.dumps(copied)
                    dumps.append(time.process_time() - start)

    asyncio.run(interleaved())
    rewrite, floor = statistics.median(rewrites), statistics.median(dumps)
    memo = callback.prefix_cache
    return (
        f"{size} messages, {agents} agents on one key, {per_scope} conversations per scope: "
        f"{rewrite * 1e3:.3f} ms per request ({rewrite / floor:.2f}x json.dumps), "
        f"memo {len(memo)} conversations, {memo.size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    size, agents, per_scope = (int(arg) for arg in sys.argv[1:4])
    print(main(size, agents, per_scope, int(sys.argv[4]) if len(sys.argv) > 4 else 5))
