"""Load and isolation: hundreds of concurrent conversations through one callback, each with its
own reasoning, and every request restores exactly its own (asserted on the wire); a short soak
whose internal state stays within its bounds; the real proxy with several keys and end users at
once (not done yet: see the report). The long soak is `bench/soak.py --seconds N`.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import uuid
import weakref
from typing import Any

import litellm
from conftest import register
from litellm.integrations.custom_logger import CustomLogger
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

sys.path.insert(0, str(REPO / "bench"))
import soak

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


async def test_hundreds_of_concurrent_conversations_each_get_only_their_own(
    upstream: Upstream,
) -> None:
    """120 conversations at once, in 3 namespaces, through one callback. Their first prompts
    and tool-call ids are IDENTICAL across namespaces (only the scope tells them apart), and
    each conversation's reasoning is unique: the second request of each must carry exactly its
    own conversation's text."""
    callback = register(ReasoningCallback(capture_wait_seconds=5.0))
    n, namespaces = 120, ("t0", "t1", "t2")

    async def one(i: int) -> tuple[str, str | None]:
        namespace = namespaces[i % len(namespaces)]
        model = f"load-{i}"  # stable names: LiteLLM caches per-model lookups
        mine = f"reasoning {i} of {namespace}: {uuid.uuid4().hex}"
        shared_id = f"call_{i // len(namespaces)}"  # the same id in every namespace
        upstream.script(
            model,
            Reply(
                message={"content": "", "reasoning_content": mine, "tool_calls": [_call(shared_id)]}
            ),
            Reply(message={"content": "done"}),
        )
        history: list[dict[str, Any]] = [{"role": "user", "content": f"task {i // 3}"}]
        common = {
            "model": f"openai/{model}",
            "api_base": upstream.base_url,
            "api_key": "k",
            "metadata": {"reasoning_namespace": namespace},
        }
        await litellm.acompletion(messages=list(history), **common)
        history += [
            {"role": "assistant", "content": "", "tool_calls": [_call(shared_id)]},
            {"role": "tool", "tool_call_id": shared_id, "content": "ok"},
        ]
        await litellm.acompletion(messages=list(history), **common)
        return mine, upstream.bodies(model)[-1]["messages"][1].get("reasoning_content")

    try:
        results = await asyncio.gather(*(one(i) for i in range(n)))
        wrong = [(mine, sent) for mine, sent in results if sent != mine]
        assert not wrong, wrong[:3]
        assert callback.stats["restored"] == n and callback.stats["errors"] == 0
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()


def test_short_soak_isolated_and_bounded() -> None:
    """`bench/soak.py` for a few seconds (at least one batch of 150 concurrent conversations),
    with small bounds: no request restores another's reasoning, the callback's tracked calls
    and the store stay at their caps, no capture is left open, and RSS growth stays small."""
    with Upstream() as upstream:
        result = asyncio.run(
            soak.soak(4.0, 150, 2.0, upstream, max_tracked_calls=300, store_records=400)
        )
    print(
        f"\nsoak: {result.conversations} conversations, RSS "
        f"{result.samples[0].rss_mb:.0f} -> {result.samples[-1].rss_mb:.0f} MB, held {result.held}"
    )
    assert result.conversations >= 150 and not result.mismatches, result.mismatches[:3]
    # Per-call state lives in each call's own LiteLLM logging details (freed with the call):
    # the callback itself only holds open captures, and none is left open.
    assert result.held["records"] <= 400
    assert result.held["open_captures"] == 0
    rss_growth, _ = result.growth_mb(0.0)
    assert rss_growth < 60, rss_growth  # generous: LiteLLM's own warm-up; bench/soak.py is strict


async def test_a_finished_call_leaves_nothing_for_the_garbage_collector(upstream: Upstream) -> None:
    """The call state lives on LiteLLM's logging object; nothing it keeps may lead back to that
    object, or each call's logging object (and with it every message of the request) waits for
    a full garbage collection instead of going when the call ends: in a busy proxy, long
    histories piling up in the oldest generation, and collections over all of them. Measured
    before: every call's logging object stayed in such a cycle (the state kept the request,
    whose kwargs hold the logging object)."""

    class Watch(CustomLogger):  # type: ignore[misc]
        """Keeps a weak reference to each call's logging object."""

        def __init__(self) -> None:
            super().__init__()
            self.seen: list[weakref.ref[Any]] = []

        async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any) -> None:
            self.seen.append(weakref.ref(kwargs["litellm_logging_obj"]))

    callback = ReasoningCallback()
    watch = Watch()
    register(callback)
    litellm.callbacks = [callback, watch]
    model = f"cycles-{uuid.uuid4().hex[:8]}"
    calls = [_call("call_a")]
    replies = [Reply(message={"content": "", "reasoning_content": "r", "tool_calls": calls})] * 4
    upstream.script(model, *replies)
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    common = {"model": f"deepseek/{model}", "api_base": upstream.base_url, "api_key": "k"}
    gc.collect()
    gc.disable()
    try:
        for step in range(4):
            await litellm.acompletion(messages=list(history), tools=TOOLS, **common)
            history += [
                {"role": "assistant", "content": "", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "call_a", "content": f"step {step}"},
            ]
        deadline = asyncio.get_running_loop().time() + 60
        while callback.stats["captured"] < 4 or callback.open_captures:
            assert asyncio.get_running_loop().time() < deadline, "calls not finished"
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # LiteLLM's own logging tasks end
        alive = [ref for ref in watch.seen if ref() is not None]
        assert not alive, f"{len(alive)} of 4 logging objects kept alive by a reference cycle"
        assert callback.stats["restored"] == 1 + 2 + 3, callback.stats
    finally:
        gc.enable()
        litellm.logging_callback_manager._reset_all_callbacks()
