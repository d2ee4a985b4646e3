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
from collections.abc import Callable, Coroutine, Generator
from typing import Any

import litellm
from common import TOOLS, agent_history, delete_redis_prefix, median, with_reasoning
from sec_rewrite import prime_store
from upstream_proc import upstream_process

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.stores import MemoryStore

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "deepseek-v4-flash"
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

CPU: defaultdict[str, float] = defaultdict(float)
CALLS: Counter[str] = Counter()


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            CPU[name] += time.thread_time() - start
            CALLS[name] += 1

    return timed


class _Step:
    """One suspension of a wrapped coroutine, handed to the event loop as it was."""

    def __init__(self, yielded: Any) -> None:
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.yielded)


def _timed_async(
    name: str, function: Callable[..., Coroutine[Any, Any, Any]]
) -> Callable[..., Any]:
    """A coroutine function whose own thread CPU is counted step by step (what it awaits on
    other threads is not: the store's work is counted where it runs)."""

    @functools.wraps(function)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        coroutine = function(*args, **kwargs)
        sent: Any = None
        error: BaseException | None = None
        while True:
            start = time.thread_time()
            try:
                yielded = coroutine.send(sent) if error is None else coroutine.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                CPU[name] += time.thread_time() - start
            try:
                sent, error = await _Step(yielded), None
            except BaseException as exc:  # handed back to the coroutine, as the loop would
                sent, error = None, exc

    return timed


def _count_calls(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def counted(*args: Any, **kwargs: Any) -> Any:
        CALLS[name] += 1
        return await function(*args, **kwargs)

    return counted


def install_timers() -> None:
    from litellm_reasoning.integration import capture, chat_messages, engine, kwargs
    from litellm_reasoning.integration import reasoning_callback as module
    from litellm_reasoning.memo import prefix_cache
    from litellm_reasoning.stores import _codec
    from litellm_reasoning.stores import redis as redis_store

    hooks = module.ReasoningCallback
    for name in ("async_pre_call_deployment_hook", "async_post_call_success_deployment_hook"):
        setattr(hooks, name, _count_calls(name, _timed_async(name, getattr(hooks, name))))
    for name in ("log_pre_api_call", "log_success_event", "log_failure_event"):
        setattr(hooks, name, _timed(name, getattr(hooks, name)))
    store = redis_store.RedisStore
    for name in ("get_many", "get_required", "put_many", "put_required", "_read", "_write"):
        setattr(store, name, _timed(f"redis {name}", getattr(store, name)))
    store._found = staticmethod(_timed("redis _found", store._found))  # type: ignore[method-assign]
    _codec.DECODED.decode_many = _timed("decode cache", _codec.DECODED.decode_many)  # type: ignore[method-assign]
    prefix_cache.PrefixCache.walk = _timed("walk", prefix_cache.PrefixCache.walk)  # type: ignore[method-assign]
    messages = chat_messages.ChatMessages
    messages.prepare = _timed("prepare (walk, plan)", messages.prepare)  # type: ignore[method-assign]
    messages.rendered = _timed("rendered (render, limits)", messages.rendered)  # type: ignore[method-assign]
    chat_messages.render = _timed("core render", chat_messages.render)
    engine.Engine.record = _timed("record (summary, capture opened)", engine.Engine.record)  # type: ignore[method-assign]
    kwargs.FactsReader.__call__ = _timed("facts", kwargs.FactsReader.__call__)  # type: ignore[method-assign]
    capture.records = _timed("reply's records", capture.records)
    started: dict[int, float] = {}

    def collector(phase: str, info: dict[str, Any]) -> None:
        thread = threading.get_ident()
        if phase == "start":
            started[thread] = time.thread_time()
            return
        name = f"collector, generation {info['generation']}"
        CPU[name] += time.thread_time() - started.pop(thread, time.thread_time())
        CALLS[name] += 1

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
    params = {"model": f"deepseek/{MODEL}", "api_base": base_url, "api_key": "k", "tools": TOOLS}
    cpu: dict[str, list[float]] = {arm: [] for arm in arms}
    carried = ""
    warm = 3
    for step in range(steps + warm):
        if step == warm:
            CPU.clear()
            CALLS.clear()
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
        "redis": ReasoningCallback(f"{REDIS_URL}?prefix={prefix}&timeout=2"),
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
        with upstream_process({MODEL: REPLY}, report=True) as base_url:
            cpu = asyncio.run(loop(arms, options.steps, base_url, conversations, callbacks))
    finally:
        litellm.callbacks = []
        callbacks["redis"].store.close()
        delete_redis_prefix(REDIS_URL, prefix)
    for arm in arms:
        mean = sum(cpu[arm]) / len(cpu[arm])
        print(f"{arm}: CPU per step median {median(cpu[arm]) * 1e3:.2f} ms, mean {mean * 1e3:.2f}")
        if arm != "keeping" and "keeping" in cpu:
            print(f"  {arm} / keeping: {median(cpu[arm]) / median(cpu['keeping']):.3f}x (medians)")
    for name in sorted(CPU):
        per_step = CPU[name] / options.steps * 1e3
        print(f"  {name:<40} {per_step:7.3f} ms per step ({CALLS[name]} calls)")
    if CENSUS_TAKEN[1]:
        taken = CENSUS_TAKEN[1]
        print(f"  census of {taken} young collections, per collection:")
        for part, counts in CENSUS.items():
            shown = ", ".join(f"{k} {v / taken:.2f}" for k, v in counts.most_common(10))
            print(f"    {part}: {shown}")


if __name__ == "__main__":
    main()
