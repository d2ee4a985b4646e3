"""Reliability and security, round two: each finding of the hostile-client pass reproduced
through real LiteLLM against the local upstream, asserted on the store and on the wire.
(The proxy findings are in tests/proxy/test_proxy_isolation.py.)"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import litellm
import pytest
import redis as redis_client
from conftest import register, settled
from litellm.integrations.custom_logger import CustomLogger
from litellm.types.utils import Message
from reliability_utils import openrouter_stream

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.stores import store_from_url
from litellm_reasoning.stores.redis import RedisStore
from litellm_reasoning.stores.resilient import ResilientStore
from litellm_reasoning.testing.upstream import Reply, Upstream


def _call(call_id: str, name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _tool_step(call_id: str) -> list[dict[str, Any]]:
    """A dropping client's tool-call message and its tool result."""
    return [
        {"role": "assistant", "content": "", "tool_calls": [_call(call_id)]},
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]


def _tool_reply(reasoning: str, call_id: str, name: str = "f") -> Reply:
    calls = [_call(call_id, name)]
    return Reply(message={"content": "", "reasoning_content": reasoning, "tool_calls": calls})


def _common(upstream: Upstream, model: str, **extra: Any) -> dict[str, Any]:
    return {"model": f"openai/{model}", "api_base": upstream.base_url, "api_key": "k", **extra}


def _assistant_reasoning(body: dict[str, Any]) -> list[Any]:
    return [m.get("reasoning_content") for m in body["messages"] if m.get("role") == "assistant"]


# ------------------------------------------------------------------ 1. one reply poisons the store


async def test_a_lone_surrogate_in_one_reply_is_one_record_not_an_outage(
    upstream: Upstream, tmp_path: Path
) -> None:
    """A reply whose reasoning holds a lone UTF-16 surrogate (valid JSON) is one record: the
    SQLite store never counts as down, every later conversation of every tenant still reaches
    the backend, and the reply restores (the broken half as U+FFFD, which can be sent)."""
    callback = register(ReasoningCallback(store=f"sqlite:///{tmp_path / 'r.db'}"))
    store = callback.store
    assert isinstance(store, ResilientStore)
    model = f"surrogate-{uuid.uuid4().hex[:6]}"
    split_emoji = "thinking about \\ud83d"  # the high half of an emoji split across chunks
    raw = json.dumps(
        {
            "id": "chatcmpl-x",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok", "reasoning_content": "X"},
                    "finish_reason": "stop",
                }
            ],
        }
    ).replace('"X"', f'"{split_emoji}"')
    upstream.script(model, Reply(raw_body=raw))
    try:
        first = [{"role": "user", "content": "hi"}]
        reply = await litellm.acompletion(messages=first, **_common(upstream, model))
        assert reply.choices[0].message.reasoning_content == "thinking about \ud83d"
        assert store.available and store.stats["outages"] == 0 and store.pending == 0
        # The next request restores it; other tenants' conversations keep reaching SQLite.
        upstream.script(model, Reply(message={"content": "again", "reasoning_content": "r2"}))
        follow = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "?"}]
        await litellm.acompletion(
            messages=follow, **_common(upstream, model), metadata={"reasoning_namespace": "ns2"}
        )
        assert store.available and store.stats["outages"] == 0 and store.pending == 0
        assert len(store.backend.tenants()) == 2  # both conversations reached the backend
        policies = {"openai/*": "all_turns"}
        callback.overrides = ReasoningCallback(policies=policies).overrides
        upstream.script(model, Reply(message={"content": "third"}))
        await litellm.acompletion(messages=follow, **_common(upstream, model))
        wire = upstream.bodies(model)[-1]["messages"][1]
        # Kept with the broken half replaced (no HTTP client can send a lone surrogate).
        assert wire["reasoning_content"] == "thinking about \ufffd"
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        store.close()


@pytest.mark.redis
def test_junk_under_our_redis_keys_is_one_unreadable_record() -> None:
    """Values under the store's keys that are not records (another program, damage, deeply
    nested JSON) read as missing, one record each; the store stays available."""
    prefix = f"lr-junk-{uuid.uuid4().hex[:6]}:"
    store = store_from_url(f"redis://127.0.0.1:6379/0?prefix={prefix}")
    assert isinstance(store, ResilientStore) and isinstance(store.backend, RedisStore)
    good = Reasoning(parts=(ReasoningPart(text="fine"),))
    store.put_many("ns=t", {"good": good})
    raw = redis_client.Redis.from_url("redis://127.0.0.1:6379/0")
    backend = store.backend
    try:
        names = backend._names("ns=t", ["junk1", "junk2", "junk3"])
        raw.set(names[0], b"\xff\xfe not json")
        raw.set(names[1], b"[" * 100_000 + b"]" * 100_000)  # RecursionError in json.loads
        raw.set(names[2], json.dumps({"s": "ns=t", "t": {}, "r": []}))
        found = store.get_many("ns=t", ["good", "junk1", "junk2", "junk3"])
        assert found == {"good": good}
        assert store.available and store.stats["outages"] == 0
    finally:
        for name in raw.scan_iter(match=f"{prefix}*"):
            raw.delete(name)
        store.close()


@pytest.mark.redis
def test_junk_under_a_tenants_index_key_is_replaced_not_an_outage() -> None:
    """Something that is not a sorted set under a tenant's index key made every write of that
    tenant fail with WRONGTYPE, which took the store down for every tenant (held-out run).
    The write replaces it; the store stays up and other tenants never notice."""
    prefix = f"lr-junk-index-{uuid.uuid4().hex[:6]}:"
    store = store_from_url(f"redis://127.0.0.1:6379/0?prefix={prefix}")
    assert isinstance(store, ResilientStore) and isinstance(store.backend, RedisStore)
    raw = redis_client.Redis.from_url("redis://127.0.0.1:6379/0")
    backend = store.backend
    try:
        from litellm_reasoning.stores import scope_id

        raw.set(backend._index(scope_id("ns=t")), b"not an index")
        record = Reasoning(parts=(ReasoningPart(text="fine"),))
        store.put_many("ns=t", {"k": record})
        store.put_many("ns=other", {"k": record})
        assert store.available and store.stats["outages"] == 0 and store.stats["failures"] == 0
        other = store_from_url(f"redis://127.0.0.1:6379/0?prefix={prefix}")  # another worker
        assert other.get_many("ns=t", ["k"]) == {"k": record}
        assert [t.records for t in other.tenants()] == [1, 1]
        other.close()
    finally:
        for name in raw.scan_iter(match=f"{prefix}*"):
            raw.delete(name)
        store.close()


# ------------------------------------------------------------------ 2. client-chosen call ids


async def test_one_call_id_for_two_tenants_at_once_files_each_reply_under_its_own_scope(
    upstream: Upstream,
) -> None:
    """Two tenants send the same `litellm_call_id` and the same tool-call id at once: each
    reply is filed under its own scope, and each next request carries exactly its own."""
    callback = register(ReasoningCallback())
    model = f"callid-{uuid.uuid4().hex[:6]}"
    tenants = ("alice", "bob")
    for tenant in tenants:
        upstream.script(
            f"{model}-{tenant}",
            _tool_reply(f"private {tenant}", "call_0"),
            Reply(message={"content": "done"}),
        )

    async def conversation(tenant: str) -> dict[str, Any]:
        common = _common(
            upstream,
            f"{model}-{tenant}",
            metadata={"reasoning_namespace": tenant},
            litellm_call_id="trace-shared",
        )
        first = [{"role": "user", "content": "weather?"}]
        if tenant == "bob":  # one of them streams
            async for _ in await litellm.acompletion(messages=first, **common, stream=True):
                pass
        else:
            await litellm.acompletion(messages=first, **common)
        follow = [
            *first,
            {"role": "assistant", "content": "", "tool_calls": [_call("call_0")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
        ]
        await litellm.acompletion(messages=follow, **common)
        return upstream.bodies(f"{model}-{tenant}")[-1]

    try:
        bodies = await asyncio.gather(*(conversation(t) for t in tenants))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    for tenant, body in zip(tenants, bodies, strict=True):
        assert _assistant_reasoning(body) == [f"private {tenant}"], (tenant, body)
    await settled(callback)
    assert callback.stats["captured"] == 2


async def test_a_reused_call_id_loses_no_capture(upstream: Upstream) -> None:
    """A client that sends one trace id as every call's id: every reply is still captured."""
    callback = register(ReasoningCallback())
    model = f"reuse-{uuid.uuid4().hex[:6]}"
    common = _common(upstream, model, litellm_call_id="my-trace-id")
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    try:
        for step in range(3):
            upstream.script(
                model,
                _tool_reply(f"step {step}", f"c{step}"),
            )
            await litellm.acompletion(messages=list(history), **common)
            history += [
                *_tool_step(f"c{step}"),
            ]
        upstream.script(model, Reply(message={"content": "done"}))
        await litellm.acompletion(messages=list(history), **common)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    await settled(callback)
    assert callback.stats["captured"] == 3
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == ["step 0", "step 1", "step 2"]


# ------------------------------------------------------------------ 3. OpenRouter streams


async def test_openrouter_streams_of_two_tenants_with_one_chunk_id_never_mix(
    upstream: Upstream,
) -> None:
    """Alice's stream is read half, bob's whole stream (same upstream chunk id) in between,
    then the rest of alice's: each next request carries exactly its own text and signature."""
    callback = register(ReasoningCallback())
    texts = {"alice": "alice thinks privately", "bob": "bob has other thoughts"}
    signatures = {"alice": "SIG-ALICE", "bob": "SIG-BOB"}
    model = "anthropic/claude-sonnet-4.5"
    for tenant in ("alice", "bob"):
        upstream.script(
            model,
            Reply(
                raw_body="".join(
                    openrouter_stream(texts[tenant], signatures[tenant], "gen-same", "call_or")
                ),
                content_type="text/event-stream",
            ),
        )

    def common(tenant: str) -> dict[str, Any]:
        return {
            "model": f"openrouter/{model}",
            "api_base": upstream.base_url,
            "api_key": "k",
            "metadata": {"reasoning_namespace": tenant},
        }

    first = [{"role": "user", "content": "hi"}]
    try:
        alice = await litellm.acompletion(messages=first, stream=True, **common("alice"))
        await alice.__anext__()
        await alice.__anext__()
        bob = await litellm.acompletion(messages=first, stream=True, **common("bob"))
        async for _ in bob:
            pass
        async for _ in alice:
            pass
        sent = {}
        for tenant in ("alice", "bob"):
            upstream.script(model, Reply(message={"content": "again"}))
            follow = [
                *first,
                *_tool_step("call_or"),
            ]
            await litellm.acompletion(messages=follow, **common(tenant))
            sent[tenant] = upstream.bodies(model)[-1]["messages"][1].get("reasoning_details")
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    for tenant in ("alice", "bob"):
        assert sent[tenant] == [
            {
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
                "text": texts[tenant],
                "signature": signatures[tenant],
            }
        ], (tenant, sent[tenant])
    assert callback.stats["errors"] == 0


# ------------------------------------------------------------------ 4. deterministic tool-call ids


async def test_deterministic_tool_call_ids_never_share_a_record(upstream: Upstream) -> None:
    """Two conversations of ONE tenant whose provider hands out the same id (`call_0`, the same
    function), and two steps of one conversation reusing an id: each message gets its own."""
    callback = register(ReasoningCallback())
    model = f"detids-{uuid.uuid4().hex[:6]}"
    common = _common(upstream, model)

    async def loop(task: str, steps: int) -> list[Any]:
        history: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for step in range(steps):
            upstream.script(
                model,
                _tool_reply(f"{task} / step {step}", "call_0", "lookup"),
            )
            await litellm.acompletion(messages=list(history), **common)
            history += [
                {"role": "assistant", "content": "", "tool_calls": [_call("call_0", "lookup")]},
                {"role": "tool", "tool_call_id": "call_0", "content": f"result {step}"},
            ]
        upstream.script(model, Reply(message={"content": "done"}))
        await litellm.acompletion(messages=list(history), **common)
        return _assistant_reasoning(upstream.bodies(model)[-1])

    try:
        x = await loop("conversation X", 2)
        y = await loop("conversation Y", 2)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert x == ["conversation X / step 0", "conversation X / step 1"]
    assert y == ["conversation Y / step 0", "conversation Y / step 1"]
    assert callback.stats["errors"] == 0


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
async def test_same_ids_and_user_message_under_other_system_prompts_never_share_a_record(
    upstream: Upstream, tmp_path: Path, store: str
) -> None:
    """Round three: one key, no `user`, two customers of an app sending the same user message
    under their own system prompts, and Kimi's ids (`functions.<name>:<n>`): customer A's
    reasoning never reaches customer B's request (the two replies interleave, so a shared key
    would hand the later one's reasoning to both)."""
    url = f"sqlite:///{tmp_path / 'r.db'}" if store == "sqlite" else store
    callback = register(ReasoningCallback(store=url))
    model = f"sysprompt-{uuid.uuid4().hex[:6]}"
    common = _common(upstream, model)
    call_id = "functions.lookup:0"

    def history(customer: str) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": f"You are the assistant of customer {customer}."},
            {"role": "user", "content": "What is my balance?"},
        ]

    try:
        for customer in ("A", "B"):
            upstream.script(model, _tool_reply(f"secret of {customer}", call_id, "lookup"))
            await litellm.acompletion(messages=history(customer), **common)
        await settled(callback)
        sent = {}
        for customer in ("A", "B"):
            upstream.script(model, Reply(message={"content": "done"}))
            follow = [
                *history(customer),
                {"role": "assistant", "content": "", "tool_calls": [_call(call_id, "lookup")]},
                {"role": "tool", "tool_call_id": call_id, "content": "42"},
            ]
            await litellm.acompletion(messages=follow, **common)
            sent[customer] = _assistant_reasoning(upstream.bodies(model)[-1])
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert sent == {"A": ["secret of A"], "B": ["secret of B"]}
    assert callback.stats["errors"] == 0


# ------------------------------------------------------------------ 5. scope parts


async def test_a_namespace_cannot_spell_another_tenants_scope(upstream: Upstream) -> None:
    """Namespace `acme|user=bob` (no user) and namespace `acme` with end user `bob` are two
    scopes: the attacker's identical history restores none of the victim's reasoning."""
    callback = register(ReasoningCallback())
    model = f"scope-{uuid.uuid4().hex[:6]}"
    first = [{"role": "user", "content": "shared prompt"}]
    follow = [
        *first,
        *_tool_step("call_7"),
    ]
    upstream.script(
        model,
        _tool_reply("victim secret", "call_7"),
        Reply(message={"content": "attacker"}),
    )
    try:
        victim = {"metadata": {"reasoning_namespace": "acme"}, "user": "bob"}
        await litellm.acompletion(messages=first, **_common(upstream, model), **victim)
        attacker = {"metadata": {"reasoning_namespace": "acme|user=bob"}}
        await litellm.acompletion(messages=follow, **_common(upstream, model), **attacker)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    await settled(callback)
    assert callback.stats["captured"] == 1
    assert "victim secret" not in json.dumps(upstream.bodies(model)[-1])


async def test_scope_from_client_off_ignores_client_chosen_user_and_namespace(
    upstream: Upstream,
) -> None:
    """With `scope_from_client=False` the client-chosen end user and namespace are not scope
    parts: a client naming another user gets nothing it could not get anyway, and its own
    conversation restores whatever `user` it sends."""
    callback = register(ReasoningCallback(scope_from_client=False, namespace="gw"))
    model = f"noclient-{uuid.uuid4().hex[:6]}"
    first = [{"role": "user", "content": "q"}]
    follow = [
        *first,
        *_tool_step("call_9"),
    ]
    upstream.script(
        model,
        _tool_reply("R", "call_9"),
        Reply(message={"content": "done"}),
    )
    try:
        await litellm.acompletion(messages=first, **_common(upstream, model), user="u1")
        await litellm.acompletion(
            messages=follow,
            **_common(upstream, model),
            user="u2",
            metadata={"reasoning_namespace": "other"},
        )
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == ["R"]
    assert (
        callback.engine.facts_of({"user": "u2", "metadata": {"reasoning_namespace": "x"}}).scope
        == "ns=gw"
    )


# ------------------------------------------------------------------ 7. a stream left at its finish


async def test_a_stream_left_at_its_finish_chunk_is_captured_and_nothing_waits(
    upstream: Upstream,
) -> None:
    """The client stops reading at the finish chunk (a common `break`): the reply is captured,
    and the conversation's next request restores it without waiting."""
    callback = register(ReasoningCallback(capture_wait_seconds=30.0))
    model = f"break-{uuid.uuid4().hex[:6]}"
    upstream.script(
        model,
        _tool_reply("kept", "c1"),
        Reply(message={"content": "done"}),
    )
    first = [{"role": "user", "content": "go"}]
    try:
        stream = await litellm.acompletion(messages=first, stream=True, **_common(upstream, model))
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                break
        follow = [
            *first,
            *_tool_step("c1"),
        ]
        start = time.monotonic()
        await litellm.acompletion(messages=follow, **_common(upstream, model))
        elapsed = time.monotonic() - start
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == ["kept"]
    assert callback.stats["waited"] == 0
    assert elapsed < 20.0  # far below the 30 s it would wait for a capture that never comes


class _HeldLogger(CustomLogger):
    """Another callback of the deployment (a tracer, say) that holds LiteLLM's logging thread
    once `hold` is set, until `free` is: what a proxy under load does to every sync capture."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.free = threading.Event()

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        if self.hold.is_set():
            self.free.wait(20.0)


@pytest.mark.parametrize(
    ("provider", "required"), [("moonshot", True), ("openai", False)], ids=["kimi", "optional"]
)
async def test_a_history_cut_at_its_head_waits_for_the_capture_its_reply_is_in(
    upstream: Upstream, provider: str, required: bool
) -> None:
    """A coding agent cuts the head of its history while the capture of its last reply has not
    run yet (a sync call is captured on LiteLLM's logging thread, here held by another callback
    as load holds it). No earlier state of the cut history is one that capture was filed under,
    but its tool-call message stands at the same place after the same user message and system
    prompt: the request waits for the capture there and restores the reasoning Kimi refuses the
    message without. The logging thread is freed once the request waits (or after 15 s). A
    target that takes the message without its reasoning (an OpenAI-compatible server, current
    turn) does not wait by place (another conversation's capture could stand there): the
    message goes as the client sent it."""
    callback = ReasoningCallback(capture_wait_seconds=30.0)
    held = _HeldLogger()
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [held, callback]
    model = f"cut-{uuid.uuid4().hex[:6]}"
    upstream.script(
        model,
        Reply(message={"content": "first answer", "reasoning_content": "one"}),
        _tool_reply("kept", "c2"),
        Reply(message={"content": "done"}),
    )
    system = {"role": "system", "content": "You are a coding agent."}
    first = [system, {"role": "user", "content": "Fix a.py."}]
    kimi = {**_common(upstream, model), "model": f"{provider}/{model}"}
    second = [
        *first,
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "Now b.py."},
    ]

    def free_once_waited() -> None:
        deadline = time.monotonic() + 15.0
        while callback.stats["waited"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        held.free.set()

    try:
        litellm.completion(messages=first, **kimi)
        await settled(callback)
        held.hold.set()
        litellm.completion(messages=second, **kimi)
        threading.Thread(target=free_once_waited, daemon=True).start()
        litellm.completion(messages=[system, *second[3:], *_tool_step("c2")], **kimi)
        held.free.set()
        await settled(callback)
    finally:
        held.free.set()
        litellm.logging_callback_manager._reset_all_callbacks()
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == (["kept"] if required else [None])
    assert (callback.stats["waited"] >= 1) is required
    assert callback.stats["captured"] == 2


def test_a_sync_stream_left_at_its_finish_chunk_is_captured(upstream: Upstream) -> None:
    callback = register(ReasoningCallback(capture_wait_seconds=30.0))
    model = f"sbreak-{uuid.uuid4().hex[:6]}"
    upstream.script(
        model,
        _tool_reply("kept", "c1"),
        Reply(message={"content": "done"}),
    )
    first = [{"role": "user", "content": "go"}]
    try:
        stream = litellm.completion(messages=first, stream=True, **_common(upstream, model))
        for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                break
        follow = [
            *first,
            *_tool_step("c1"),
        ]
        litellm.completion(messages=follow, **_common(upstream, model))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == ["kept"]
    assert callback.stats["captured"] == 1


# ------------------------------------------------------------------ 10. pydantic messages


def test_sync_completion_never_sends_turn_from_a_message_object(upstream: Upstream) -> None:
    register(ReasoningCallback())
    model = f"pyd-{uuid.uuid4().hex[:6]}"
    upstream.script(model, Reply(message={"content": "ok"}))
    user = Message(role="user", content="hi")
    user.turn = False  # type: ignore[attr-defined]  # what a client sets on LiteLLM's object
    try:
        litellm.completion(
            messages=[{"role": "user", "content": "start"}, user], **_common(upstream, model)
        )
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    body = upstream.bodies(model)[-1]
    assert all("turn" not in m for m in body["messages"]), body


# ------------------------------------------------------------------ 11. logs


async def test_a_tampered_record_is_never_echoed_in_a_log(
    upstream: Upstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored record damaged on disk (its bytes hold text a reader should never see in a
    log) reads as missing, and no log record at any level names its content."""
    path = tmp_path / "t.db"
    callback = register(ReasoningCallback(store=f"sqlite:///{path}"))
    model = f"tamper-{uuid.uuid4().hex[:6]}"
    upstream.script(
        model,
        _tool_reply("orig", "c1"),
        Reply(message={"content": "done"}),
    )
    first = [{"role": "user", "content": "go"}]
    caplog.set_level(logging.DEBUG)
    try:
        await litellm.acompletion(messages=first, **_common(upstream, model))
        import sqlite3

        with sqlite3.connect(path) as conn:
            tampered = json.dumps({"s": "x", "t": 1, "r": {"v": 1, "parts": [{"kind": "SECRET"}]}})
            conn.execute("UPDATE records SET body = ?", (tampered.encode(),))
        follow = [
            *first,
            *_tool_step("c1"),
        ]
        await litellm.acompletion(messages=follow, **_common(upstream, model))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        callback.store.close()
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == [None]
    leaked = [r.getMessage() for r in caplog.records if "SECRET" in r.getMessage()]
    assert not leaked, leaked


def test_the_codec_keeps_a_lone_surrogate_escaped(tmp_path: Path) -> None:
    """Store level: a record holding a lone surrogate anywhere is written (escaped JSON, which
    the previous release reads too) and read back equal."""
    from litellm_reasoning.stores import _codec

    odd = Reasoning(parts=(ReasoningPart(text="a\ud83d", details={"k": "\udc00"}),))
    body = _codec.encode("ns=s", odd, 1.0)
    assert _codec.decode(body).record == odd
    store = store_from_url(f"sqlite:///{tmp_path / 's.db'}")
    try:
        store.put_many("ns=s", {"k": odd})
        assert store.get_many("ns=s", ["k"]) == {"k": odd}
        assert isinstance(store, ResilientStore) and store.stats["outages"] == 0
    finally:
        store.close()


# ------------------------------------------------------------------ 6. memory bounded by bytes


async def test_memory_is_bounded_by_bytes_through_the_callback(upstream: Upstream) -> None:
    """Large replies captured through the callback into `memory://` with a byte cap: the store
    never holds more than the cap, and the newest conversation still restores."""
    callback = register(ReasoningCallback(store="memory://?max_bytes=300000"))
    model = f"bytes-{uuid.uuid4().hex[:6]}"
    store = callback.store
    big = "x" * 100_000
    try:
        for i in range(8):
            upstream.script(
                model,
                _tool_reply(f"{i}{big}", f"c{i}"),
            )
            await litellm.acompletion(
                messages=[{"role": "user", "content": f"task {i}"}], **_common(upstream, model)
            )
            assert store.size <= 300_000  # type: ignore[attr-defined]
        upstream.script(model, Reply(message={"content": "done"}))
        follow = [
            {"role": "user", "content": "task 7"},
            *_tool_step("c7"),
        ]
        await litellm.acompletion(messages=follow, **_common(upstream, model))
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    await settled(callback)
    assert callback.stats["captured"] == 8 and len(store) == 2  # type: ignore[arg-type]
    assert _assistant_reasoning(upstream.bodies(model)[-1]) == [f"7{big}"]


def test_every_in_process_layer_has_a_byte_cap_and_expired_records_go() -> None:
    from litellm_reasoning.stores import LOCAL_MAX_BYTES, MemoryStore
    from litellm_reasoning.stores.memory import DEFAULT_MAX_BYTES

    assert store_from_url("memory://").max_bytes == DEFAULT_MAX_BYTES  # type: ignore[attr-defined]
    resilient = store_from_url("sqlite:////tmp/lr-never-opened.db")
    assert isinstance(resilient, ResilientStore) and resilient.local.max_bytes == LOCAL_MAX_BYTES
    now = [1000.0]
    store = MemoryStore(ttl_seconds=10, clock=lambda: now[0])
    record = Reasoning(parts=(ReasoningPart(text="r"),))
    store.put_many("s", {f"old{i}": record for i in range(500)})
    now[0] += 11  # every record so far has expired; nobody reads them again
    for i in range(1000):
        store.put_many("s", {f"new{i}": record})
    assert len(store) == 1000 and store.size == 1000  # the expired 500 were swept
