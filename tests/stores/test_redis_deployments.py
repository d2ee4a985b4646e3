"""Redis as gateways run it: a Redis Cluster of three primaries and a Sentinel-managed primary
(both started on 127.0.0.1 by the test setup), and LiteLLM's own Redis settings reused.

The contract suite (`tests/stores/test_stores.py`) and the two-process test
(`tests/proxy/test_replicas.py`) run on both deployments too; here: what is particular to them."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.stores import litellm_redis_url, open_backend, store_from_url
from litellm_reasoning.stores.redis import RedisStore
from litellm_reasoning.stores.resilient import ResilientStore

if TYPE_CHECKING:
    from store_fixtures import OwnCluster, OwnSentinel

pytest_plugins = ["store_fixtures"]


def _record(text: str) -> Reasoning:
    return Reasoning.from_text(text, provider="deepseek", model="deepseek-chat")


def _prefix() -> str:
    return f"litellm_reasoning:test:{uuid.uuid4().hex[:12]}:"


def test_a_cluster_read_is_one_round_trip_to_one_slot(redis_cluster: OwnCluster) -> None:
    store = RedisStore(redis_cluster.url, prefix=_prefix())
    records = {f"k{i}": _record(f"r{i}") for i in range(40)}
    store.put_many("tenant", records)
    store.get_many("tenant", ["warm"])  # the read script is loaded on first use
    seen: list[str] = []
    original = store._sync.execute_command

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(str(args[0]))
        return original(*args, **kwargs)

    store._sync.execute_command = counting
    assert store.get_many("tenant", [*records, "missing"]) == records
    assert seen == ["EVALSHA"]  # the bounded read script, under 1 MiB: one round trip
    # The tenant's records and its index share one slot: the write script may touch them all.
    names = [*store._names("tenant", list(records)), store._index(_sid("tenant"))]
    assert len({store._sync.keyslot(name) for name in names}) == 1
    store.close()


def test_a_killed_primary_keeps_calls_going_and_its_records_come_back(
    redis_cluster: OwnCluster,
) -> None:
    """Behind the fail-open layer: while the primary of a tenant's slot is down, calls return
    (served locally) and other tenants' slots keep working; once it is back, what was written
    meanwhile is written through and found by a fresh process's store."""
    prefix = _prefix()
    url = f"{redis_cluster.url}?prefix={prefix}&timeout=0.5&retry=0.2"
    store = store_from_url(url)
    store.put_many("tenant", {"before": _record("before the outage")})
    probe = RedisStore(redis_cluster.url, prefix=prefix)
    victim = redis_cluster.node_of(probe._index(_sid("tenant")))
    probe.close()
    victim.kill()
    try:
        started = time.monotonic()
        store.put_many("tenant", {"during": _record("written during the outage")})
        assert set(store.get_many("tenant", ["before", "during"])) == {"before", "during"}
        assert time.monotonic() - started < 30  # returned, not hung
    finally:
        victim.start()
        redis_cluster.wait_ok()
    deadline = time.monotonic() + 30
    while True:  # the next calls probe the backend and write the held records through
        store.get_many("tenant", ["during"])
        fresh = open_backend(f"{redis_cluster.url}?prefix={prefix}&timeout=2")
        try:  # a bare store: a slot still settling raises here, and it asks again
            found = fresh.get_many("tenant", ["during"])
        except redis.RedisError:
            found = {}
        finally:
            fresh.close()
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert found == {"during": _record("written during the outage")}
    store.close()


def _sid(scope: str) -> str:
    from litellm_reasoning.stores import scope_id

    return scope_id(scope)


def test_sentinel_fails_over_without_failing_a_call(redis_sentinel: OwnSentinel) -> None:
    """The primary dies; Sentinel promotes its replica; the store (fail-open) never raises and
    writes to the new primary once Sentinel names it."""
    prefix = _prefix()
    store = store_from_url(f"{redis_sentinel.url}?prefix={prefix}&timeout=0.5&retry=0.2")
    store.put_many("tenant", {"before": _record("before")})
    first = redis_sentinel.primary_port()
    old = redis_sentinel.primary if redis_sentinel.primary.port == first else redis_sentinel.replica
    old.kill()
    deadline = time.monotonic() + 60
    while redis_sentinel.primary_port() == first and time.monotonic() < deadline:
        store.put_many("tenant", {"during": _record("during")})  # never raises
        time.sleep(0.2)
    assert redis_sentinel.primary_port() != first, "Sentinel did not fail over"
    deadline = time.monotonic() + 30
    found: dict[str, Reasoning] = {}
    while True:
        store.put_many("tenant", {"after": _record("after")})  # never raises
        # The checker is a bare store (it raises): right after the switch Sentinel may briefly
        # name no primary ("No master found"); it asks again.
        fresh = open_backend(f"{redis_sentinel.url}?prefix={prefix}&timeout=2")
        try:
            found = fresh.get_many("tenant", ["after", "during"])
        except redis.RedisError:
            found = {}
        finally:
            fresh.close()
        if len(found) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert set(found) == {"after", "during"}
    store.close()


def test_a_write_no_replica_confirmed_survives_the_failover(tmp_path: Path) -> None:
    """The replica is down when a record is written: the primary takes it, no replica has it
    (`WAIT` confirms none). The primary dies; Sentinel promotes the replica, back from its own
    disk without that record. The store writes it again to the new primary: a fresh process's
    store finds it. (Without the confirmation the record is gone: a Kimi loop's next step on
    another worker would be refused.)"""
    from store_fixtures import OwnSentinel

    sentinel = OwnSentinel(tmp_path, persistent_replica=True)
    sentinel.start()
    prefix = _prefix()
    store = store_from_url(f"{sentinel.url}?prefix={prefix}&timeout=0.5&retry=0.2")
    assert isinstance(store, ResilientStore)
    try:
        deadline = time.monotonic() + 30  # the replica's first sync
        with redis.Redis(port=sentinel.replica.port) as replica:
            while replica.info("replication").get("master_link_status") != "up":
                assert time.monotonic() < deadline, "the replica never synced"
                time.sleep(0.1)
        # Written until the replica confirms it within `WAIT`'s 0.1 s (beside busy processes
        # the first confirmation can come late; a later confirmed write settles the earlier).
        deadline = time.monotonic() + 30
        while True:
            unconfirmed = store.stats["unreplicated"]
            store.put_many("tenant", {"before": _record("confirmed by the replica")})
            if store.stats["unreplicated"] == unconfirmed:
                break
            assert time.monotonic() < deadline, "the replica never confirmed a write"
        sentinel.replica.kill()
        store.put_many("tenant", {"during": _record("taken by the primary alone")})
        sentinel.primary.kill()
        sentinel.replica.start()  # its AOF: "before", not "during"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if sentinel.primary_port() == sentinel.replica.port:
                    break
            except redis.RedisError:
                pass
            time.sleep(0.2)
        assert sentinel.primary_port() == sentinel.replica.port, "Sentinel did not fail over"
        found: dict[str, Reasoning] = {}
        deadline = time.monotonic() + 30
        while not found and time.monotonic() < deadline:
            store.get_many("tenant", ["before"])  # a call that reaches the new primary
            fresh = open_backend(f"{sentinel.url}?prefix={prefix}&timeout=2")
            try:
                found = fresh.get_many("tenant", ["during"])
            except redis.RedisError:
                found = {}
            finally:
                fresh.close()
            time.sleep(0.2)
        assert found == {"during": _record("taken by the primary alone")}
        # Unconfirmed on the old primary, and again on the new one (no replica is left).
        assert store.stats["unreplicated"] - unconfirmed == 2
        assert store.stats["rewritten_after_failover"] == 1
    finally:
        store.close()
        sentinel.stop()


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({"REDIS_HOST": "cache.internal", "REDIS_PORT": "6380"}, "redis://cache.internal:6380/0"),
        (
            {"REDIS_HOST": "h", "REDIS_PASSWORD": "p@ss/w:rd", "REDIS_SSL": "True"},
            "rediss://:p%40ss%2Fw%3Ard@h:6379/0",
        ),
        ({"REDIS_URL": "redis://u:pw@h:1/2"}, "redis://u:pw@h:1/2"),
        (
            {"REDIS_CLUSTER_NODES": '[{"host": "a", "port": 7000}, {"host": "b", "port": 7001}]'},
            "redis+cluster://a:7000,b:7001/",
        ),
        (
            {"REDIS_SENTINEL_NODES": '[["s1", 26379]]', "REDIS_SERVICE_NAME": "main"},
            "redis+sentinel://s1:26379/main",
        ),
    ],
)
def test_litellm_redis_settings_are_reused(env: dict[str, str], url: str) -> None:
    assert litellm_redis_url(env) == url


def test_litellm_url_reads_the_environment_and_never_logs_the_password(
    monkeypatch: pytest.MonkeyPatch, redis_cluster: OwnCluster
) -> None:
    nodes = ",".join(f'{{"host": "127.0.0.1", "port": {n.port}}}' for n in redis_cluster.nodes)
    monkeypatch.setenv("REDIS_CLUSTER_NODES", f"[{nodes}]")
    prefix = _prefix()
    store = store_from_url(f"litellm://?prefix={prefix}")
    store.put_many("tenant", {"k": _record("via LiteLLM's settings")})
    direct = RedisStore(redis_cluster.url, prefix=prefix)
    assert direct.get_many("tenant", ["k"]) == {"k": _record("via LiteLLM's settings")}
    direct.close()
    store.close()
    monkeypatch.delenv("REDIS_CLUSTER_NODES")
    monkeypatch.setenv("REDIS_HOST", "127.0.0.1")
    monkeypatch.setenv("REDIS_PASSWORD", "s3cret-pw")
    assert "s3cret-pw" not in getattr(store_from_url("litellm://"), "name", "")
    monkeypatch.delenv("REDIS_HOST")
    with pytest.raises(ValueError, match="REDIS_HOST"):
        store_from_url("litellm://")


@pytest.mark.proxy
def test_two_proxy_replicas_share_a_redis_cluster(
    redis_cluster: OwnCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Request 1 through proxy A, request 2 (reasoning dropped by the openai client) through
    proxy B, both on one Redis Cluster: B restores what A captured."""
    import openai
    from proxy_utils import (
        TOOLS,
        assistant_messages,
        openai_compatible_deployment,
        proxy_config,
        run_proxies,
        tool_loop,
        upstream_model,
    )

    from litellm_reasoning.testing.upstream import Reply, Upstream

    with Upstream() as upstream:
        group = "cluster-pair"
        config = proxy_config(
            [openai_compatible_deployment(group, upstream_model(group), upstream.base_url)]
        )
        env = {"LITELLM_REASONING_STORE": f"{redis_cluster.url}?prefix={_prefix()}&timeout=5"}
        root = tmp_path_factory.mktemp("cluster-pair")
        with run_proxies((config, root / "a", env), (config, root / "b", env)) as (a, b):
            with openai.OpenAI(base_url=a.base_url, api_key=a.master_key, max_retries=0) as ca:
                history = tool_loop(
                    ca, upstream, group, stream=False, reasoning="R1 on A", call_id="call_pair_1"
                )
            upstream.script(
                upstream_model(group),
                Reply(
                    message={"role": "assistant", "content": "Sunny.", "reasoning_content": "R2"}
                ),
            )
            with openai.OpenAI(base_url=b.base_url, api_key=b.master_key, max_retries=0) as cb:
                cb.chat.completions.create(
                    model=group,
                    messages=history,
                    tools=TOOLS,
                    user="alice",  # type: ignore[arg-type]
                )
        wire = upstream.bodies(upstream_model(group))[-1]
    (assistant,) = assistant_messages(wire)
    assert assistant.get("reasoning_content") == "R1 on A"


@pytest.mark.parametrize(
    ("policy", "warned"), [("allkeys-lru", True), ("volatile-ttl", True), ("noeviction", False)]
)
def test_a_redis_that_evicts_across_tenants_is_named_at_startup(
    tmp_path: Any, policy: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis' eviction policies pick keys of any tenant: with `maxmemory` set and a policy that
    evicts, one tenant's volume can push out another's records. The store says so once, at
    startup, with what to set; a Redis that never evicts gets no warning."""
    from store_fixtures import OwnRedis

    server = OwnRedis(tmp_path, "--maxmemory", "64mb", "--maxmemory-policy", policy)
    server.start()
    try:
        with caplog.at_level("WARNING", logger="litellm_reasoning"):
            store = store_from_url(f"{server.url}?max_records=500")
            store.close()
    finally:
        server.stop()
    lines = [r.getMessage() for r in caplog.records if "maxmemory" in r.getMessage()]
    assert len(lines) == (1 if warned else 0), lines
    if warned:
        assert policy in lines[0] and "500 records" in lines[0]


def test_an_unlimited_redis_or_one_that_refuses_config_gets_no_warning() -> None:
    from litellm_reasoning.stores.redis import cross_tenant_eviction

    assert cross_tenant_eviction({"maxmemory": "0"}, {"maxmemory-policy": "allkeys-lru"}, 9) is None
    per_node = {"a:1": {"maxmemory": "0"}, "b:2": {"maxmemory": "1048576"}}
    policies = {
        "a:1": {"maxmemory-policy": "noeviction"},
        "b:2": {"maxmemory-policy": "allkeys-lfu"},
    }
    assert "allkeys-lfu" in (cross_tenant_eviction(per_node, policies, 9) or "")
