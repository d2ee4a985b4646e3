"""A long conversation restored on a worker that never saw it: 1 100 tool-loop steps with 20 KB
of reasoning each (~22 MB from Redis for one request), continued by a fresh callback on the
same Redis, against a strict Kimi (every earlier tool-call message must carry its reasoning).

The held-out run read it in one MGET under an event-loop timer of 0.2 s: the read missed the
deadline, the request went without reasoning and Kimi answered 400 (release 0.2.0 here, with the
loop held: the same 400). Store deadlines are now
socket timeouts on the store's own connection (each a bound on silence, so a large reply that
keeps arriving is not late), and Kimi's reads are required reads (`required_timeout`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.identity import anchor_of, message_key, walk
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.stores import ResilientStore
from litellm_reasoning.testing.refusals import kimi_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

pytest_plugins = ["store_fixtures"]
pytestmark = pytest.mark.once  # the store's reads, not LiteLLM's: one line is enough

STEPS = 1100
REASONING_BYTES = 20_000
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _keys(scope: str, messages: list[Any]) -> dict[int, str]:
    """The store key of every assistant message (`identity.key_at`, with one walk)."""
    digests, shapes = walk(messages)
    roles = [m.get("role") for m in messages]
    return {
        i: message_key(
            scope,
            m,
            digests[i],
            shapes[i],
            anchor_of(list(zip(roles[:i], shapes, strict=False)), i),
        )
        for i, m in enumerate(messages)
        if m.get("role") == "assistant"
    }


async def test_a_long_kimi_conversation_is_restored_on_another_worker(redis_url: str) -> None:
    model = "kimi-k2-thinking"
    with Upstream(refuse=[kimi_reasoning_required]) as kimi:
        params: dict[str, Any] = {
            "model": f"openai/{model}",
            "api_base": kimi.base_url,
            "api_key": "k",
            "tools": TOOLS,
        }
        # Worker A answers the first step: the conversation's tenant scope, as the store has it.
        kimi.script(
            model,
            Reply(
                message={"reasoning_content": "Call f.", "content": "", "tool_calls": [_call("c0")]}
            ),
        )
        worker_a = register(ReasoningCallback(store=redis_url))
        history: list[dict[str, Any]] = [{"role": "user", "content": "Run f until done."}]
        await litellm.acompletion(messages=history, **params)
        (tenant,) = worker_a.store.tenants()
        # ... and the rest of a 1 100-step loop, as A would have captured it.
        for step in range(STEPS):
            call_id = f"c{step}"
            history += [
                {"role": "assistant", "content": "", "tool_calls": [_call(call_id)]},
                {"role": "tool", "tool_call_id": call_id, "content": "more"},
            ]
        keys = _keys(tenant.scope, history)
        text = {i: f"step {i}: " + "x" * REASONING_BYTES for i in keys}
        batch: dict[str, Reasoning] = {}
        for i, key in keys.items():
            batch[key] = Reasoning.from_text(text[i], provider="openai", model=model)
            if len(batch) == 100:
                await worker_a.store.aput_many(tenant.scope, batch)
                batch = {}
        await worker_a.store.aput_many(tenant.scope, batch)
        await worker_a.store.aclose()

        # Worker B never saw the conversation: everything comes from Redis in one request,
        # while other requests hold its event loop 30 ms at a time (a busy proxy worker).
        worker_b = register(ReasoningCallback(store=redis_url))
        kimi.script(model, Reply(message={"reasoning_content": "Done.", "content": "done"}))
        done = asyncio.Event()

        async def other_requests() -> None:
            while not done.is_set():
                end = time.monotonic() + 0.03
                while time.monotonic() < end:
                    pass
                await asyncio.sleep(0)

        busy = asyncio.create_task(other_requests())
        try:
            reply = await litellm.acompletion(messages=history, **params)
        finally:
            done.set()
            await busy
        assert reply.choices[0].message.content == "done"
        sent = kimi.bodies(model)[-1]["messages"]
        carried = [m.get("reasoning_content") for m in sent if m["role"] == "assistant"]
        assert carried == [text[i] for i in sorted(keys)]
        store_b = worker_b.store
        assert isinstance(store_b, ResilientStore)
        assert store_b.stats["outages"] == 0 and store_b.stats["slow"] == 0
        assert worker_b.stats["restored"] == STEPS
        assert worker_b.stats["required_lookups"] == 1
        await store_b.aclose()


def test_a_large_read_is_bounded_in_bytes_per_round_trip(redis_url: str) -> None:
    """Round three: the 22 MB restore came back as one MGET reply Redis built in memory while
    its other clients waited. A read now brings `read_bytes` per round trip (then asks for the
    rest), each round trip with its own deadline; what it returns is unchanged."""
    from litellm_reasoning.stores import open_backend
    from litellm_reasoning.stores.redis import RedisStore

    budget = 256 * 1024
    store = open_backend(f"{redis_url}&read_bytes={budget}")
    assert isinstance(store, RedisStore) and store.read_bytes == budget
    records = {
        f"k{i}": Reasoning.from_text(f"{i}:" + "x" * 100_000, provider="p", model="m")
        for i in range(40)
    }
    for start in range(0, 40, 10):
        store.put_many("tenant", dict(list(records.items())[start : start + 10]))
    store.get_many("tenant", ["warm"])  # the read script is loaded on first use
    replies: list[int] = []
    original = store._sync.execute_command

    def counting(*args: Any, **kwargs: Any) -> Any:
        reply = original(*args, **kwargs)
        if args[0] == "EVALSHA":
            replies.append(sum(len(value or b"") for value in reply))
        return reply

    store._sync.execute_command = counting
    asked = [*records, "missing", "k3"]
    assert store.get_many("tenant", asked) == records
    one = max(len(v or b"") for v in store._sync.mget(store._names("tenant", list(records))))
    assert len(replies) == -(-40 // -(-budget // one))  # ceil(40 / records per round trip)
    assert all(size < budget + one for size in replies)
    store.close()
