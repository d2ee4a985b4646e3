"""The `workers` section's agent loop in one process: where the callback's CPU goes beside
LiteLLM's own, without four proxy workers' noise.

    LITELLM_LOCAL_MODEL_COST_MAP=True python bench/diag_loop.py --steps 80 \
        [--arms keeping,memory,redis] [--timed] [--census]

Each arm runs its own agent loop through `litellm.acompletion` against the local upstream
(another process, DeepSeek-like replies with a new tool call id each): `keeping`, a client
that keeps its reasoning and no callback; `memory` and `redis`, a client that drops it and
the callback on the in-memory store or the local Redis (primed with the history's
reasoning, as after the conversation's earlier steps). Every step sends new message dicts
(a JSON round trip of the history, as a proxy parses each request), appends the reply and a
tool result, and waits 30 ms so LiteLLM's logging tasks and the store's writes finish inside
the step; the arms alternate step by step. Prints each arm's process CPU per step (every
thread) and its ratio to `keeping`.

`--timed` runs one arm per process instead (the first of `--arms`), with the thread CPU of the
callback's hooks, its main passes, the Redis store's read and write and the collector's
collections per generation counted, per step: what the `timed` arm of `diag_workers.py`
counts in a worker, here beside a client keeping its reasoning. `--census` also counts what
every fifth young collection finds in the youngest generation (objects, items they hold,
containers of 200 items or more, by type). Both wrap functions at import time: measurements,
not designs (see bench/README.md, "The agent loop in one process")."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Generator
from typing import Any

import litellm
from common import TOOLS, agent_history, delete_redis_prefix, median, with_reasoning
from diag_callbacks import TIMED, _collected, _timed
from sec_rewrite import prime_store
from sec_workers import MODEL, REDIS
from upstream_proc import upstream_process

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import MemoryStore

REPLY: dict[str, Any] = {
    "role": "assistant",
    "content": "Running the tests now.",
    "reasoning_content": "The parser fix is in; run the suite to confirm before answering. " * 3,
    # No id: the upstream gives each reply a new one, as DeepSeek does.
    "tool_calls": [
        {"type": "function", "function": {"name": "run_tests", "arguments": '{"path": "tests"}'}}
    ],
}
SETTLE_SECONDS = 0.03
"""Each step's wait after its reply: LiteLLM's success logging and the store's write run in it."""

COLLECTOR: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
"""Per generation: [collections, thread CPU seconds] in this process."""


class _Step:
    """One suspension of a wrapped coroutine, handed to the event loop as it was."""

    def __init__(self, yielded: Any) -> None:
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.yielded)


def _timed_async(owner: Any, name: str) -> None:
    """`owner.name`, a coroutine function, with its own thread CPU counted step by step into
    `diag_callbacks.TIMED` as `_timed` counts a function (what it awaits on other threads is
    not: the store's work is counted where it runs)."""
    function = getattr(owner, name)

    @functools.wraps(function)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        figures = TIMED.setdefault(name, [0.0, 0.0, 0.0])
        figures[0] += 1
        coroutine = function(*args, **kwargs)
        sent: Any = None
        error: BaseException | None = None
        while True:
            start, collected = time.thread_time(), _collected()
            try:
                yielded = coroutine.send(sent) if error is None else coroutine.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                figures[1] += time.thread_time() - start
                figures[2] += _collected() - collected
            try:
                sent, error = await _Step(yielded), None
            except BaseException as exc:  # handed back to the coroutine, as the loop would
                sent, error = None, exc

    setattr(owner, name, timed)


def install_timers() -> None:
    from litellm_reasoning.integration import capture, chat_messages, engine, kwargs
    from litellm_reasoning.integration import reasoning_callback as module
    from litellm_reasoning.memo import prefix_cache
    from litellm_reasoning.stores import _codec
    from litellm_reasoning.stores import redis as redis_store

    hooks = module.ReasoningCallback
    for name in ("async_pre_call_deployment_hook", "async_post_call_success_deployment_hook"):
        _timed_async(hooks, name)
    for name in ("log_pre_api_call", "log_success_event", "log_failure_event"):
        _timed(hooks, name, name)
    for name in ("get_many", "get_required", "put_many", "put_required", "_read", "_write"):
        _timed(redis_store.RedisStore, name, f"redis {name}")
    _timed(_codec, "records_of", "redis records_of (decode cache included)")
    _timed(_codec.DecodedRecords, "decode_many", "decode cache")
    _timed(prefix_cache.PrefixCache, "walk", "walk")
    _timed(chat_messages.ChatMessages, "prepare", "prepare (walk, plan)")
    _timed(chat_messages.ChatMessages, "rendered", "rendered (render, limits)")
    _timed(chat_messages, "render", "core render")
    _timed(engine.Engine, "record", "record (summary, capture opened)")
    _timed(kwargs.FactsReader, "__call__", "facts")
    _timed(capture, "records", "reply's records")
    started: dict[int, float] = {}

    def collector(phase: str, info: dict[str, Any]) -> None:
        thread = threading.get_ident()
        if phase == "start":
            started[thread] = time.thread_time()
            return
        figures = COLLECTOR[f"collector, generation {info['generation']}"]
        figures[0] += 1
        figures[1] += time.thread_time() - started.pop(thread, time.thread_time())

    gc.callbacks.append(collector)


CENSUS: dict[str, Counter[str]] = {"objects": Counter(), "items": Counter(), "large": Counter()}
CENSUS_TAKEN = [0, 0]


def install_census() -> None:
    busy = [False]

    def census(phase: str, info: dict[str, Any]) -> None:
        if phase != "start" or info["generation"] != 0 or busy[0]:
            return
        CENSUS_TAKEN[0] += 1
        if CENSUS_TAKEN[0] % 5:
            return
        busy[0] = True
        try:
            CENSUS_TAKEN[1] += 1
            for found in gc.get_objects(0):
                kind = type(found)
                CENSUS["objects"][kind.__name__] += 1
                if kind in (list, dict, tuple, set):
                    CENSUS["items"][kind.__name__] += len(found)
                    if len(found) >= 200:
                        CENSUS["large"][_shape(found)] += 1
        finally:
            busy[0] = False

    gc.callbacks.append(census)


def _shape(container: Any) -> str:
    kind = type(container).__name__
    if isinstance(container, dict):
        key = next(iter(container))
        return f"{kind}[{type(key).__name__}: {type(container[key]).__name__}]"
    return f"{kind}[{type(next(iter(container))).__name__}]"


def _message_of(reply: Any, keeps: bool) -> dict[str, Any]:
    message = reply.choices[0].message
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in message.tool_calls
    ]
    sent: dict[str, Any] = {"role": "assistant", "content": message.content, "tool_calls": calls}
    if keeps:
        sent["reasoning_content"] = message.reasoning_content
    return sent


async def loop(
    arms: list[str], steps: int, base_url: str, conversations: dict[str, list[Any]], callbacks: Any
) -> dict[str, list[float]]:
    params = {"model": MODEL, "api_base": base_url, "api_key": "k", "tools": TOOLS}
    cpu: dict[str, list[float]] = {arm: [] for arm in arms}
    carried = ""
    warm = 3
    for step in range(steps + warm):
        if step == warm:
            TIMED.clear()
            COLLECTOR.clear()
        for arm in arms if step % 2 else arms[::-1]:
            litellm.logging_callback_manager._reset_all_callbacks()
            litellm.callbacks = [callbacks[arm]] if arm in callbacks else []
            messages = json.loads(json.dumps(conversations[arm]))
            start = time.process_time()
            reply = await litellm.acompletion(**params, messages=messages)
            await asyncio.sleep(SETTLE_SECONDS)
            if step >= warm:
                cpu[arm].append(time.process_time() - start)
            sent = _message_of(reply, keeps=arm == "keeping")
            result = {"role": "tool", "tool_call_id": sent["tool_calls"][0]["id"], "content": "ok"}
            conversations[arm] = [*conversations[arm], sent, result]
            carried = reply.choices[0].message.content  # the upstream's "<with>/<assistant>"
    print(f"  last step: assistant messages reaching the upstream with their reasoning {carried}")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", default="keeping,memory,redis")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--timed", action="store_true")
    parser.add_argument("--census", action="store_true")
    options = parser.parse_args()
    arms = options.arms.split(",")
    if options.timed or options.census:
        arms = arms[:1]
        if options.timed:
            install_timers()
        if options.census:
            install_census()
    prefix = f"bench-loop-{uuid.uuid4().hex[:8]}:"
    callbacks = {
        "memory": ReasoningCallback(MemoryStore(max_records=100_000)),
        "redis": ReasoningCallback(f"{REDIS}?prefix={prefix}&timeout=2"),
    }
    history, reasoning = agent_history(options.messages, seed="loop")
    conversations: dict[str, list[Any]] = {}
    for arm in arms:
        if arm == "keeping":
            conversations[arm] = with_reasoning(history, reasoning)
        else:
            litellm.callbacks = [callbacks[arm]]
            prime_store(callbacks[arm], history, reasoning)
            conversations[arm] = list(history)
    try:
        with upstream_process({MODEL.split("/", 1)[1]: REPLY}, report=True) as base_url:
            cpu = asyncio.run(loop(arms, options.steps, base_url, conversations, callbacks))
    finally:
        litellm.callbacks = []
        callbacks["redis"].store.close()
        delete_redis_prefix(REDIS, prefix)
    for arm in arms:
        mean = sum(cpu[arm]) / len(cpu[arm])
        print(f"{arm}: CPU per step median {median(cpu[arm]) * 1e3:.2f} ms, mean {mean * 1e3:.2f}")
        if arm != "keeping" and "keeping" in cpu:
            print(f"  {arm} / keeping: {median(cpu[arm]) / median(cpu['keeping']):.3f}x (medians)")
    for name, (calls, seconds, collecting) in sorted(TIMED.items()):
        per_step, of_it = seconds / options.steps * 1e3, collecting / options.steps * 1e3
        print(
            f"  {name:<40} {per_step:7.3f} ms per step, {of_it:.3f} collecting ({calls:.0f} calls)"
        )
    for name, (calls, seconds) in sorted(COLLECTOR.items()):
        per_step = seconds / options.steps * 1e3
        print(f"  {name:<40} {per_step:7.3f} ms per step ({calls:.0f} collections)")
    if CENSUS_TAKEN[1]:
        taken = CENSUS_TAKEN[1]
        print(f"  census of {taken} young collections, per collection:")
        for part, counts in CENSUS.items():
            shown = ", ".join(f"{k} {v / taken:.2f}" for k, v in counts.most_common(10))
            print(f"    {part}: {shown}")


if __name__ == "__main__":
    main()
