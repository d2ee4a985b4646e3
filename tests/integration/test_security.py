"""Security: stored reasoning never reaches logs at INFO or above; store keys are hashed; one
tenant can neither read nor plant another tenant's records; record sizes and counts are bounded.

Driven through real LiteLLM (`acompletion`) against local servers, with a client that drops
reasoning; markers make every reasoning text, signature and encrypted blob findable.
"""

from __future__ import annotations

import logging
import sqlite3
import traceback
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import litellm
import pytest
import redis
from conftest import register, settled

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.stores import MemoryStore, ReasoningStore, store_from_url
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.stores import FaultyStore
from litellm_reasoning.testing.upstream import Reply, Upstream

pytest_plugins = ["store_fixtures"]

CLAUDE = "claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
}
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router")


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def leaks(self, markers: Sequence[str], at_least: int) -> list[tuple[str, str]]:
        found = []
        for record in self.records:
            if record.levelno < at_least:
                continue
            try:
                text = record.getMessage()
            except Exception:  # a record whose args do not format: check them raw
                text = str(record.msg)
            text += " " + repr(record.args)
            if record.exc_info and record.exc_info[1] is not None:
                text += "".join(traceback.format_exception(record.exc_info[1]))
            text += record.exc_text or ""
            found += [(record.name, m) for m in markers if m in text]
        return found


@pytest.fixture
def logs() -> Iterator[Capture]:
    """Every record of the root, `litellm_reasoning` and LiteLLM loggers (ours at DEBUG;
    LiteLLM's at their default level: with LiteLLM's own debugging on it logs request bodies)."""
    handler = Capture()
    ours = logging.getLogger("litellm_reasoning")
    saved = ours.level
    ours.setLevel(logging.DEBUG)
    loggers = [logging.getLogger(), ours, *(logging.getLogger(n) for n in LITELLM_LOGGERS)]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)
    ours.setLevel(saved)


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    # Not strict: the log audit sabotages the store so that rendering fails open, and a
    # dropping client's tool loop then reaches Claude without its block, as without the callback.
    with AnthropicUpstream() as up:
        yield up


async def _claude_loop(
    claude: AnthropicUpstream, tag: str, metadata: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A Claude tool loop (2 requests) with signed thinking and a redacted block; returns the
    wire bodies. `tag` makes the markers and tool ids unique."""
    call_id = f"toolu_{tag}"
    claude.script(
        CLAUDE,
        AnthropicReply(
            [
                {"type": "thinking", "thinking": f"THINKMARK-{tag}", "signature": f"SIGMARK{tag}"},
                {"type": "redacted_thinking", "data": f"BLOBMARK{tag}"},
                _tool_use(call_id),
            ]
        ),
        AnthropicReply([{"type": "text", "text": "Done."}]),
    )
    common: dict[str, Any] = {
        "model": f"anthropic/{CLAUDE}",
        "api_base": claude.base_url,
        "api_key": "k",
        "tools": [TOOL],
        "thinking": THINKING,
        "max_tokens": 2048,
        "metadata": metadata or {},
    }
    before = len(claude.bodies(CLAUDE))
    history: list[dict[str, Any]] = [{"role": "user", "content": f"Go {tag}."}]
    await litellm.acompletion(messages=list(history), **common)
    history += [
        {"role": "assistant", "content": None, "tool_calls": [_call(call_id)]},  # dropped
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]
    await litellm.acompletion(messages=list(history), **common)
    return claude.bodies(CLAUDE)[before:]


# ---------------------------------------------------------------------------- logs


async def test_no_reasoning_in_logs_at_info_or_above(
    claude: AnthropicUpstream, upstream: Upstream, logs: Capture
) -> None:
    store = FaultyStore()
    callback = register(ReasoningCallback(store=store))
    markers: list[str] = []
    try:
        # 1. A normal loop: captured, then restored for the dropping client (a real restore).
        wire = await _claude_loop(claude, "ok")
        assert wire[1]["messages"][1]["content"][0]["signature"] == "SIGMARKok"
        markers += ["THINKMARK-ok", "SIGMARKok", "BLOBMARKok"]
        # 2. A store outage during a whole loop (warnings fire).
        store.fault = "down"
        await _claude_loop(claude, "down")
        markers += ["THINKMARK-down", "SIGMARKdown", "BLOBMARKdown"]
        # 3. A render failure: the store hands back what the renderer cannot use.
        store.fault = "garbage"
        await _claude_loop(claude, "bad")
        markers += ["THINKMARK-bad", "SIGMARKbad", "BLOBMARKbad"]
        # 4. A plain-text reasoning model (DeepSeek-style reasoning_content), restored.
        model = f"sec-log-{uuid.uuid4().hex[:6]}"
        upstream.script(
            model,
            Reply(
                message={"content": "", "reasoning_content": "TEXTMARK", "tool_calls": [_call("c")]}
            ),
            Reply(message={"content": "done"}),
        )
        store.fault = ""
        common = {"model": f"openai/{model}", "api_base": upstream.base_url, "api_key": "k"}
        history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        await litellm.acompletion(messages=list(history), **common)
        history += [
            {"role": "assistant", "content": "", "tool_calls": [_call("c")]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
        await litellm.acompletion(messages=list(history), **common)
        assert upstream.bodies(model)[1]["messages"][1]["reasoning_content"] == "TEXTMARK"
        markers.append("TEXTMARK")
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()

    warnings = [r for r in logs.records if r.name == "litellm_reasoning" and r.levelno >= 30]
    assert warnings, "the outage and the render failure must have been reported"
    assert callback.stats["errors"] >= 2
    assert logs.leaks(markers, logging.INFO) == []
    debug_leaks = logs.leaks(markers, logging.DEBUG)
    print(f"\n{len(logs.records)} records; reasoning markers at DEBUG: {debug_leaks}")
    assert not [leak for leak in debug_leaks if leak[0].startswith("litellm_reasoning")]


# ---------------------------------------------------------------------------- keys


SCOPE_METADATA = {
    "reasoning_namespace": "NSPLAIN",
    "user_api_key_hash": "KEYHASHPLAIN",
    "user_api_key_team_id": "TEAMPLAIN",
    "user_api_key_end_user_id": "ENDUSERPLAIN",
}
PLAIN_IDS = tuple(SCOPE_METADATA.values())


async def test_store_keys_are_hashed_sqlite_and_redis(
    claude: AnthropicUpstream, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    """After a tool loop in a full proxy-like scope, neither SQLite's key columns nor Redis's
    key names hold the namespace, key hash, team or end user in plain text. (The record body,
    and SQLite's `scope` column, do hold the scope string: it is what `litellm-reasoning store
    stats/show` prints per tenant.)"""
    db = tmp_path / "r.db"
    for url, tag in ((f"sqlite:///{db}", "sq"), (redis_url, "rd")):
        callback = register(ReasoningCallback(store=url))
        try:
            wire = await _claude_loop(claude, tag, dict(SCOPE_METADATA))
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
            callback.store.close()
        assert wire[1]["messages"][1]["content"][0]["signature"] == f"SIGMARK{tag}"
    with sqlite3.connect(db) as connection:
        keys = connection.execute("SELECT scope_id, key FROM records").fetchall()
    assert keys
    client = redis.Redis.from_url(redis_url.split("?")[0])
    names = [n.decode() for n in client.scan_iter(match=f"{redis_prefix}*")]
    client.close()
    assert names
    for name in [*names, *(f"{s} {k}" for s, k in keys)]:
        assert not any(plain in name for plain in PLAIN_IDS), name
        assert "MARK" not in name


# ---------------------------------------------------------------------------- tenants


async def test_other_tenant_with_identical_history_gets_nothing(
    claude: AnthropicUpstream,
) -> None:
    """B replays A's exact conversation (same prompt, same tool-use id): B's request carries
    none of A's signed thinking or redacted data; A's own continuation does (not vacuous)."""
    callback = register(ReasoningCallback())
    a = {"reasoning_namespace": "tenant-a"}
    b = {"reasoning_namespace": "tenant-b"}
    try:
        await _claude_loop(claude, "tenant", a)
        claude.script(CLAUDE, AnthropicReply([{"type": "text", "text": "for b"}]))
        history = [
            {"role": "user", "content": "Go tenant."},
            {"role": "assistant", "content": None, "tool_calls": [_call("toolu_tenant")]},
            {"role": "tool", "tool_call_id": "toolu_tenant", "content": "ok"},
        ]
        await litellm.acompletion(
            model=f"anthropic/{CLAUDE}",
            api_base=claude.base_url,
            api_key="k",
            messages=history,
            tools=[TOOL],
            thinking=THINKING,
            max_tokens=2048,
            metadata=b,
        )
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    a_body, b_body = claude.bodies(CLAUDE)[-2], claude.bodies(CLAUDE)[-1]
    assert "SIGMARKtenant" in repr(a_body) and "BLOBMARKtenant" in repr(a_body)
    assert "MARK" not in repr(b_body), b_body
    # B has no block Claude accepts, so thinking is off for B's call (not A's block).
    assert "thinking" not in b_body
    assert callback.stats["thinking_disabled"] == 1


async def test_forged_thinking_is_never_stored_for_another_tenant(
    claude: AnthropicUpstream,
) -> None:
    """B's client sends its own (forged) thinking block in its history, with A's tool-use id;
    the callback stores replies only, under the caller's own scope: nothing lands in A's scope
    and A's next request carries A's captured block, not B's forgery."""
    store = MemoryStore()
    register(ReasoningCallback(store=store))
    a = {"reasoning_namespace": "tenant-a2"}
    b = {"reasoning_namespace": "tenant-b2"}
    common: dict[str, Any] = {
        "model": f"anthropic/{CLAUDE}",
        "api_base": claude.base_url,
        "api_key": "k",
        "tools": [TOOL],
        "thinking": THINKING,
        "max_tokens": 2048,
    }
    forged = {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("toolu_forge")],
        "thinking_blocks": [{"type": "thinking", "thinking": "FORGED", "signature": "FORGEDSIG"}],
    }
    try:
        claude.script(
            CLAUDE,
            AnthropicReply([{"type": "text", "text": "b1"}]),
            AnthropicReply(
                [
                    {"type": "thinking", "thinking": "A-REAL", "signature": "AREALSIG"},
                    _tool_use("toolu_forge"),
                ]
            ),
            AnthropicReply([{"type": "text", "text": "a2"}]),
        )
        prompt = {"role": "user", "content": "Forge?"}
        tool = {"role": "tool", "tool_call_id": "toolu_forge", "content": "ok"}
        await litellm.acompletion(messages=[prompt, forged, tool], metadata=b, **common)
        await litellm.acompletion(messages=[prompt], metadata=a, **common)
        plain = {k: v for k, v in forged.items() if k != "thinking_blocks"}
        await litellm.acompletion(messages=[prompt, plain, tool], metadata=a, **common)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    a_last = claude.bodies(CLAUDE)[-1]
    assert a_last["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "A-REAL",
        "signature": "AREALSIG",
    }
    assert "FORGED" not in repr(a_last)
    for tenant in store.tenants():
        for row in store.list_records(tenant.scope):
            assert "FORGED" not in repr(row.record), (tenant.scope, row)


@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis"])
def test_store_never_answers_across_scopes(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 's.db'}",
        "redis": "" if backend != "redis" else request.getfixturevalue("redis_url"),
    }[backend]
    store: ReasoningStore = store_from_url(url)
    record = Reasoning(parts=(ReasoningPart(text="secret", signature="sig"),), provider="anthropic")
    try:
        store.put_many("ns=a|user=alice", {"k1": record})
        assert store.get_many("ns=a|user=alice", ["k1"]) == {"k1": record}
        for other in ("ns=a|user=bob", "ns=b|user=alice", "ns=a", "", "ns=a|user=alice|team=t"):
            assert store.get_many(other, ["k1"]) == {}, other
            if backend != "memory" or other:
                assert store.list_records(other) == [], other
    finally:
        store.close()


# ---------------------------------------------------------------------------- bounds


async def test_oversized_records_are_not_stored_and_the_call_succeeds(
    upstream: Upstream, tmp_path: Path
) -> None:
    for url in (
        "memory://?max_record_bytes=100",
        f"sqlite:///{tmp_path / 'b.db'}?max_record_bytes=100",
    ):
        callback = register(ReasoningCallback(store=url))
        model = f"sec-big-{uuid.uuid4().hex[:6]}"
        small, big = "s" * 50, "B" * 5000
        upstream.script(
            model,
            Reply(message={"content": "", "reasoning_content": big, "tool_calls": [_call("c1")]}),
            Reply(message={"content": "", "reasoning_content": small, "tool_calls": [_call("c2")]}),
            Reply(message={"content": "done"}),
        )
        common = {"model": f"openai/{model}", "api_base": upstream.base_url, "api_key": "k"}
        history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        try:
            got = await litellm.acompletion(messages=list(history), **common)
            assert got.choices[0].message.reasoning_content == big  # the caller gets it all
            history += [
                {"role": "assistant", "content": "", "tool_calls": [_call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
            await litellm.acompletion(messages=list(history), **common)
            history += [
                {"role": "assistant", "content": "", "tool_calls": [_call("c2")]},
                {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            ]
            final = await litellm.acompletion(messages=list(history), **common)
            assert final.choices[0].message.content == "done"
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        records = [
            r for t in callback.store.tenants() for r in callback.store.list_records(t.scope)
        ]
        callback.store.close()
        kept = [r.record.text for r in records if r.record and not r.record.superseded]
        assert kept == [small], url
        wire = upstream.bodies(model)[2]["messages"]
        assert "reasoning_content" not in wire[1]
        assert wire[3]["reasoning_content"] == small


async def test_record_counts_are_capped_through_the_callback(
    upstream: Upstream, tmp_path: Path
) -> None:
    """Ten conversations captured through the callback into stores capped at 3 records (memory:
    total; SQLite: total): the store keeps the newest 3; the newest conversation still restores."""
    for url in ("memory://?max_records=3", f"sqlite:///{tmp_path / 'c.db'}?max_records=3"):
        # Without the rolling-upgrade copies (which count against the cap: see the README).
        callback = register(ReasoningCallback(store=url, legacy_keys=False))
        model = f"sec-cap-{uuid.uuid4().hex[:6]}"
        try:
            for i in range(10):
                upstream.script(
                    model,
                    Reply(
                        message={
                            "content": "",
                            "reasoning_content": f"r{i}",
                            "tool_calls": [_call(f"c{i}")],
                        }
                    ),
                )
                await litellm.acompletion(
                    model=f"openai/{model}",
                    api_base=upstream.base_url,
                    api_key="k",
                    messages=[{"role": "user", "content": f"task {i}"}],
                )
            upstream.script(model, Reply(message={"content": "done"}))
            await litellm.acompletion(
                model=f"openai/{model}",
                api_base=upstream.base_url,
                api_key="k",
                messages=[
                    {"role": "user", "content": "task 9"},
                    {"role": "assistant", "content": "", "tool_calls": [_call("c9")]},
                    {"role": "tool", "tool_call_id": "c9", "content": "ok"},
                ],
            )
        finally:
            litellm.logging_callback_manager._reset_all_callbacks()
        await settled(callback)
        assert callback.stats["captured"] == 10
        kept = sorted(
            r.record.text
            for t in callback.store.tenants()
            for r in callback.store.list_records(t.scope)
            if r.record
        )
        callback.store.close()
        assert kept == ["r7", "r8", "r9"], (url, kept)
        assert upstream.bodies(model)[-1]["messages"][1]["reasoning_content"] == "r9"
