"""A slow store is not a down store, and a request that needs its reasoning waits for it.

Real Redis throughout: the machine's shared one where it only has to be healthy, a private
`redis-server` where a test freezes it (SIGSTOP: connections stay open, nothing answers). The
assertions are events and counters (what the store counted, what reached the wire); the only
time figures are deadlines set far from machine noise.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.stores import ResilientStore, store_from_url
from litellm_reasoning.testing.refusals import kimi_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

if TYPE_CHECKING:
    from store_fixtures import OwnRedis

pytest_plugins = ["store_fixtures"]

SCOPE = "ns=slow|key=k"
RECORDS = {f"k{i}": Reasoning.from_text(f"thought {i}") for i in range(20)}


def _resilient(url: str) -> ResilientStore:
    store = store_from_url(url)
    assert isinstance(store, ResilientStore)
    return store


def _busy(seconds: float) -> None:
    """Hold the event loop's thread (what a saturated proxy worker's other requests do)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def thaw_later(own_redis: OwnRedis) -> Iterator[Any]:
    """`thaw_later(s)`: freeze the private Redis now, thaw it after `s` seconds."""
    timers: list[threading.Timer] = []

    def freeze_for(seconds: float) -> None:
        own_redis.freeze()
        timer = threading.Timer(seconds, own_redis.thaw)
        timers.append(timer)
        timer.start()

    yield freeze_for
    for timer in timers:
        timer.cancel()
    own_redis.thaw()


async def test_a_busy_event_loop_does_not_make_a_healthy_redis_late(redis_url: str) -> None:
    """A saturated worker: CPU-bound work holds the loop 30 ms at a time while 8 requests
    read and write at once (new connections among them). With deadlines on the loop's clock a
    healthy Redis "times out" here and the breaker opens (release 0.2.0: an outage within the
    first reads); measured on the store's own sockets nothing is late and every read is whole."""
    writer = _resilient(f"{redis_url}&timeout=0.2")
    await writer.aput_many(SCOPE, RECORDS)
    store = _resilient(f"{redis_url}&timeout=0.2")  # another worker: nothing local
    stop = time.monotonic() + 1.5
    reads: list[int] = []

    async def hog() -> None:
        while time.monotonic() < stop:
            _busy(0.03)
            await asyncio.sleep(0)

    async def request(n: int) -> None:
        while time.monotonic() < stop:
            reads.append(len(await store.aget_many(SCOPE, list(RECORDS))))
            await store.aput_many(SCOPE, {f"new-{n}": Reasoning.from_text("w")})

    await asyncio.gather(*(hog() for _ in range(12)), *(request(n) for n in range(8)))
    assert reads and set(reads) == {len(RECORDS)}
    assert store.stats["slow"] == 0
    assert store.stats["outages"] == 0
    assert store.available and store.pending == 0
    await store.aclose()
    await writer.aclose()


async def test_one_late_answer_is_not_an_outage(
    own_redis: OwnRedis, thaw_later: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis answers one read too late: that read goes on without it, the store stays up (no
    warning, no breaker), and the next read is answered by Redis again."""
    writer = _resilient(f"{own_redis.url}?timeout=0.2")
    await writer.aput_many(SCOPE, RECORDS)
    store = _resilient(f"{own_redis.url}?timeout=0.2")  # another worker: nothing local
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        thaw_later(1.0)
        assert await store.aget_many(SCOPE, list(RECORDS)) == {}
        assert store.stats["slow"] == 1 and store.stats["outages"] == 0
        assert store.available
        await asyncio.sleep(1.2)  # thawed
        assert await store.aget_many(SCOPE, list(RECORDS)) == RECORDS
    assert store.stats["outages"] == 0
    assert not [r for r in caplog.records if r.name == "litellm_reasoning"], caplog.text
    await store.aclose()
    await writer.aclose()


async def test_a_required_read_waits_for_a_late_redis(own_redis: OwnRedis, thaw_later: Any) -> None:
    """The same late Redis: a read the request cannot go without takes the longer deadline and
    gets the records; a write the next request needs does too."""
    writer = _resilient(f"{own_redis.url}?timeout=0.2&required_timeout=10")
    thaw_later(0.6)
    await writer.aput_required(SCOPE, RECORDS)
    store = _resilient(f"{own_redis.url}?timeout=0.2&required_timeout=10")
    thaw_later(0.6)
    assert await store.aget_required(SCOPE, list(RECORDS)) == RECORDS
    for s in (writer, store):
        assert s.stats["slow"] == 0 and s.stats["outages"] == 0 and s.pending == 0
    assert store.stats["required_reads"] == 1
    # The sync twins too (LiteLLM's sync calls).
    thaw_later(0.6)
    assert store.get_required(SCOPE, ["k1"]) == {"k1": RECORDS["k1"]}
    assert store.stats["slow"] == 0
    await store.aclose()
    await writer.aclose()


async def test_a_hung_redis_is_still_declared_down(own_redis: OwnRedis) -> None:
    """Frozen for good: concurrent reads each time out on their socket, the second late answer
    in a row opens the breaker, and from then on calls do not touch Redis (a required read
    included: it is answered from the local layer at once)."""
    store = _resilient(f"{own_redis.url}?timeout=0.2&required_timeout=10&retry=60")
    await store.aput_many(SCOPE, RECORDS)  # connected while healthy
    own_redis.freeze()
    try:
        await asyncio.gather(*(store.aget_many(SCOPE, ["k1"]) for _ in range(4)))
        assert store.stats["outages"] == 1
        assert not store.available
        failures = store.stats["failures"]
        reads = [store.aget_required(SCOPE, ["k1"]) for _ in range(3)]
        # answered by the local layer (it holds what this process wrote)
        assert await asyncio.gather(*reads) == [{"k1": RECORDS["k1"]}] * 3
        assert store.stats["failures"] == failures  # Redis was not asked
        assert store.stats["required_reads"] == 0
    finally:
        own_redis.thaw()
    await store.aclose()


async def test_a_busy_sqlite_writer_is_not_an_outage(tmp_path: Any) -> None:
    """A sibling process holds the write lock past the store's lock wait once: that write is
    kept locally (and read back from there), the store stays up, and the record reaches the
    file with the next write after the lock is free."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 's.db'}?timeout=0.1&retry=0.1"
    store = _resilient(url)
    await store.aput_many(SCOPE, {"first": Reasoning.from_text("1")})
    sibling = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    sibling.execute("BEGIN IMMEDIATE")
    await store.aput_many(SCOPE, {"held": Reasoning.from_text("2")})
    assert store.stats["slow"] == 1 and store.stats["outages"] == 0
    assert store.available and store.pending == 1
    assert await store.aget_many(SCOPE, ["held"]) == {"held": Reasoning.from_text("2")}
    sibling.rollback()
    sibling.close()
    await asyncio.sleep(0.2)
    await store.aput_many(SCOPE, {"next": Reasoning.from_text("3")})
    assert store.pending == 0
    other = _resilient(url)  # another worker reads the file
    assert set(await other.aget_many(SCOPE, ["first", "held", "next"])) == {"first", "held", "next"}
    await store.aclose()
    await other.aclose()


async def test_a_required_sqlite_write_waits_for_a_busy_sibling(tmp_path: Any) -> None:
    """The same busy sibling, for a write the next request cannot go without (a tool loop's
    reply): it waits for the lock (`required_timeout`), reaches the file, and nothing is late."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 's.db'}?timeout=0.1&required_timeout=10"
    store = _resilient(url)
    await store.aput_many(SCOPE, {"first": Reasoning.from_text("1")})
    sibling = sqlite3.connect(tmp_path / "s.db", isolation_level=None, check_same_thread=False)
    sibling.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.6, sibling.rollback)
    release.start()
    try:
        await store.aput_required(SCOPE, {"needed": Reasoning.from_text("2")})
    finally:
        release.join()
        sibling.close()
    assert store.stats["slow"] == 0 and store.pending == 0
    other = _resilient(url)
    assert await other.aget_many(SCOPE, ["needed"]) == {"needed": Reasoning.from_text("2")}
    await store.aclose()
    await other.aclose()


# ------------------------------------------------------------------ through LiteLLM

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


async def test_a_kimi_tool_loop_waits_for_its_reasoning_on_a_late_redis(
    own_redis: OwnRedis, thaw_later: Any
) -> None:
    """Two workers (two callbacks on one Redis), a dropping client, Kimi refusing a tool-call
    message without its reasoning: Redis is late when worker B continues the loop worker A
    started. B's lookup is required, waits for Redis and the call passes."""
    await _continue_on_a_late_redis(own_redis, thaw_later, "openai", "kimi-k2-thinking", True)


async def test_a_target_that_takes_the_request_without_reasoning_keeps_the_short_deadline(
    own_redis: OwnRedis, thaw_later: Any
) -> None:
    """The control: Qwen on DashScope (current turn, no refusal documented) on the same late
    Redis goes on without waiting: its lookup is not required, the read is late once, the
    message goes without its reasoning, and the store stays up."""
    await _continue_on_a_late_redis(own_redis, thaw_later, "dashscope", "qwen3-max", False)


async def _continue_on_a_late_redis(
    own_redis: OwnRedis, thaw_later: Any, provider: str, base: str, required: bool
) -> None:
    url = f"{own_redis.url}?timeout=0.2&required_timeout=10"
    model = f"{base}-{uuid.uuid4().hex[:6]}"
    call_id = "functions.f:0"
    with Upstream(refuse=[kimi_reasoning_required] if required else []) as kimi:
        kimi.script(
            model,
            Reply(
                message={
                    "reasoning_content": "Call f.",
                    "content": "",
                    "tool_calls": [_call(call_id)],
                }
            ),
            Reply(message={"reasoning_content": "Done thinking.", "content": "42"}),
        )
        params: dict[str, Any] = {
            "model": f"{provider}/{model}",
            "api_base": kimi.base_url,
            "api_key": "k",
            "tools": TOOLS,
        }
        worker_a = register(ReasoningCallback(store=url))
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Use f."}]
        await litellm.acompletion(messages=messages, **params)
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [_call(call_id)]},
            {"role": "tool", "tool_call_id": call_id, "content": "42"},
        ]
        worker_b = register(ReasoningCallback(store=url))
        thaw_later(0.6)
        reply = await litellm.acompletion(messages=messages, **params)
        assert reply.choices[0].message.content == "42"
        sent = kimi.bodies(model)[-1]["messages"][1]
        store_b = worker_b.store
        assert isinstance(store_b, ResilientStore)
        assert store_b.stats["outages"] == 0
        if required:
            assert sent["reasoning_content"] == "Call f."
            assert worker_b.stats["required_lookups"] == 1
            assert worker_b.stats["restored"] == 1
            assert store_b.stats["slow"] == 0
        else:
            assert "reasoning_content" not in sent
            assert worker_b.stats["required_lookups"] == 0
            assert worker_b.stats["restored"] == 0
            assert store_b.stats["required_reads"] == 0
            # the read was late (and the reply's write too, if Redis was still frozen then)
            assert store_b.stats["slow"] >= 1
    litellm.logging_callback_manager._reset_all_callbacks()
    worker_a.store.close()
    store_b.close()


async def test_a_refused_record_deleted_while_redis_stalls_is_deleted_when_it_returns(
    own_redis: OwnRedis,
) -> None:
    """A refusal evicts the record it sent; when Redis is stalled at that moment the delete is
    kept and made with the write-through once Redis answers again, so another worker never
    restores the refused record (held-out run: it did, and was refused again)."""
    url = f"{own_redis.url}?timeout=0.2&retry=0.5"
    worker_a, worker_b = _resilient(url), _resilient(url)
    await worker_a.aput_many(SCOPE, {"refused": RECORDS["k0"], "kept": RECORDS["k1"]})
    own_redis.freeze()
    try:
        for _ in range(2):  # two late answers: the store is down
            await worker_a.aget_many(SCOPE, ["kept"])
        assert not worker_a.available
        # Refused now: while the store is down the delete cannot be made (0.3.0 dropped it).
        await worker_a.adelete_many(SCOPE, ["refused"])
    finally:
        own_redis.thaw()
    await asyncio.sleep(0.6)  # the retry window
    await worker_a.aput_many(SCOPE, {"new": RECORDS["k2"]})  # back: the delete goes through
    assert worker_a.available
    found = await worker_b.aget_many(SCOPE, ["refused", "kept", "new"])
    assert set(found) == {"kept", "new"}
    await worker_a.aclose()
    await worker_b.aclose()


CLAUDE_SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-slow-store=="
CLAUDE_TOOL = {
    "name": "f",
    "description": "f",
    "input_schema": {"type": "object", "properties": {}},
}


@pytest.mark.parametrize("route", ["chat", "messages"])
async def test_a_claude_tool_loop_waits_for_its_thinking_block_on_a_late_redis(
    own_redis: OwnRedis, thaw_later: Any, route: str
) -> None:
    """Claude's open tool loop (the request ends with the tool's result) is refused without the
    thinking block its tool use came with, on chat completions and on `/v1/messages` (Claude
    Code): worker B continues worker A's loop for a client that dropped the block while Redis
    is late; B's lookup is required, waits for Redis, and strict Claude takes the request."""
    from clients import THINKING

    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

    url = f"{own_redis.url}?timeout=0.2&required_timeout=10"
    model = f"claude-sonnet-4-5-slow-{route}-{uuid.uuid4().hex[:6]}"
    thinking = {"type": "thinking", "thinking": "Call f.", "signature": CLAUDE_SIG}
    use = {"type": "tool_use", "id": "toolu_slow_1", "name": "f", "input": {}}
    with AnthropicUpstream(strict=True) as claude:
        claude.script(model, AnthropicReply([thinking, use]))
        claude.always(model, AnthropicReply([{"type": "text", "text": "42"}]))
        params: dict[str, Any] = {
            "model": f"anthropic/{model}",
            "api_base": claude.base_url,
            "api_key": "k",
            "max_tokens": 2048,
            "thinking": THINKING,
        }
        worker_a = register(ReasoningCallback(store=url))
        if route == "chat":
            params["tools"] = [
                {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
            ]
            messages: list[Any] = [{"role": "user", "content": "Use f."}]
            await litellm.acompletion(messages=messages, **params)
            messages += [
                {"role": "assistant", "content": "", "tool_calls": [_call("toolu_slow_1")]},
                {"role": "tool", "tool_call_id": "toolu_slow_1", "content": "42"},
            ]
        else:
            params["tools"] = [CLAUDE_TOOL]
            messages = [{"role": "user", "content": "Use f."}]
            await litellm.anthropic.messages.acreate(messages=messages, **params)
            messages += [
                {"role": "assistant", "content": [use]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_slow_1", "content": "42"}
                    ],
                },
            ]
        worker_b = register(ReasoningCallback(store=url))
        thaw_later(0.6)
        if route == "chat":
            reply = await litellm.acompletion(messages=messages, **params)
            assert reply.choices[0].message.content == "42"
        else:
            answer = await litellm.anthropic.messages.acreate(messages=messages, **params)
            assert answer["content"][0]["text"] == "42"
        sent = claude.bodies(model)[-1]["messages"][1]
    store_b = worker_b.store
    assert isinstance(store_b, ResilientStore)
    assert claude.refusals == []
    assert sent["content"][0] == thinking
    assert worker_b.stats["required_lookups"] == 1
    assert worker_b.stats["restored"] == 1
    assert store_b.stats["outages"] == 0 and store_b.stats["slow"] == 0
    litellm.logging_callback_manager._reset_all_callbacks()
    worker_a.store.close()
    store_b.close()


@pytest.mark.parametrize("late", ["read", "write"])
async def test_a_responses_tool_loop_waits_for_its_reasoning_item_on_a_late_redis(
    own_redis: OwnRedis, thaw_later: Any, late: str
) -> None:
    """OpenAI Responses (the recorded tool loop): the client sends the function call back with
    its item id and without the reasoning item, which OpenAI refuses ("provided without its
    required 'reasoning' item"). Worker B continues worker A's loop while Redis is late (`read`:
    B's read is required and waits), or Redis is late when worker A stores the reply (`write`:
    the reply's write is required, as the next request needs it, and waits, so B finds it);
    the item goes back before the call."""
    import json

    import yaml
    from paths import REPO

    from litellm_reasoning.testing.refusals import openai_function_call_needs_reasoning

    raw = yaml.safe_load((REPO / "cassettes/openai_responses_tool_loop.yaml").read_text("utf-8"))
    first, second = raw["interactions"]
    reply1 = json.loads(first["response"]["body"]["string"])
    (reasoning,) = [i for i in reply1["output"] if i["type"] == "reasoning"]
    (call,) = [i for i in reply1["output"] if i["type"] == "function_call"]
    request1 = json.loads(first["request"]["body"])
    request2 = json.loads(second["request"]["body"])
    dropped = [i for i in request2["input"] if i.get("type") != "reasoning"]
    assert any(i.get("id") == call["id"] for i in dropped)  # the recorded client sends the id
    url = f"{own_redis.url}?timeout=0.2&required_timeout=10"
    refuse = openai_function_call_needs_reasoning({call["id"]: reasoning["id"]})
    with Upstream(refuse=[refuse]) as openai:
        openai.script("gpt-5", Reply(raw_body=first["response"]["body"]["string"]))
        openai.always("gpt-5", Reply(raw_body=second["response"]["body"]["string"]))
        params = {k: v for k, v in request1.items() if k not in ("model", "input", "stream")}
        params.update(model="openai/gpt-5", api_base=openai.base_url, api_key="k")
        worker_a = register(ReasoningCallback(store=url))
        if late == "write":
            thaw_later(0.6)
        await litellm.aresponses(input=request1["input"], **params)
        worker_b = register(ReasoningCallback(store=url))
        if late == "read":
            thaw_later(0.6)
        await litellm.aresponses(input=dropped, **params)
        sent = openai.bodies("gpt-5")[-1]["input"]
    store_b = worker_b.store
    assert isinstance(store_b, ResilientStore)
    assert openai.refusals == []
    at = next(i for i, item in enumerate(sent) if item.get("id") == call["id"])
    assert sent[at - 1]["type"] == "reasoning" and sent[at - 1]["id"] == reasoning["id"]
    assert sent[at - 1]["encrypted_content"] == reasoning["encrypted_content"]
    assert worker_b.stats["required_lookups"] == 1
    assert store_b.stats["outages"] == 0 and store_b.stats["slow"] == 0
    store_a = worker_a.store
    assert isinstance(store_a, ResilientStore)
    assert store_a.stats["outages"] == 0 and store_a.stats["slow"] == 0
    assert store_a.stats["held"] == 0  # nothing kept back for a later write
    litellm.logging_callback_manager._reset_all_callbacks()
    store_a.close()
    store_b.close()
