"""Redis for the store tests: the machine's server on 127.0.0.1:6379, or a private one.

Availability rule: a test that needs Redis and finds none FAILS when `CI` is set (CI=true) and
SKIPS otherwise, saying why. Tests never touch another test's keys: each gets its own prefix,
deleted afterwards. A test that stops Redis uses its own `redis-server` on a free port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from litellm_reasoning.testing.proxy import free_port as testing_free_port

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    if in_ci():
        pytest.fail(f"{reason}; CI is set, so a missing Redis is a failure")
    pytest.skip(reason)


def require_redis() -> None:
    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, socket_connect_timeout=0.5)
    try:
        client.ping()
    except Exception as exc:
        unavailable(f"no Redis on {REDIS_HOST}:{REDIS_PORT} ({type(exc).__name__}: {exc})")
    finally:
        client.close()


def delete_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2)
    try:
        names = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if names:
            client.delete(*names)
    finally:
        client.close()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of the shared Redis that is this test's alone (deleted afterwards)."""
    require_redis()
    prefix = f"litellm_reasoning:test:{uuid.uuid4().hex[:12]}:"
    yield prefix
    delete_prefix(f"redis://{REDIS_HOST}:{REDIS_PORT}/0", prefix)


@pytest.fixture
def redis_url(redis_prefix: str) -> str:
    """`redis://127.0.0.1:6379/0?prefix=<this test's prefix>`."""
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/0?prefix={redis_prefix}"


def free_port() -> int:
    return testing_free_port()  # outside the ephemeral range (see there)


class OwnRedis:
    """A private `redis-server` (no persistence) that a test may kill, freeze and restart."""

    def __init__(
        self, workdir: Path, *extra: str, port: int | None = None, persist: bool = False
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("no redis-server binary to start a private Redis")
        self.binary = str(binary)
        self.workdir = workdir
        self.port = port or free_port()
        self.extra = list(extra)
        """More `redis-server` arguments (cluster mode, a sentinel config file first)."""
        self.persist = persist
        """Keep every write on disk (AOF, fsync always): a restart comes back with its data."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                *self.extra,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "yes" if self.persist else "no",
                "--appendfsync", "always",
                "--dir", str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(5)

    def freeze(self) -> None:
        """SIGSTOP: connections stay open, nothing answers (a hung server)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.thaw()
            self.process.kill()
            self.process.wait(5)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """A started private Redis on a free port, stopped afterwards."""
    server = OwnRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def _cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free and valid too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


class OwnCluster:
    """A Redis Cluster of three primaries on free ports of 127.0.0.1 (no replicas; a killed
    primary's slots are down until it restarts, the others go on serving)."""

    def __init__(self, workdir: Path) -> None:
        self.nodes = []
        for n in range(3):
            node_dir = workdir / f"node{n}"
            node_dir.mkdir(parents=True, exist_ok=True)
            self.nodes.append(
                OwnRedis(
                    node_dir,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-require-full-coverage",
                    "no",
                    port=_cluster_port(),
                )
            )

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes) + "/"

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli")
        if cli is None:
            unavailable("no redis-cli to create a Redis Cluster")
        subprocess.run(
            [str(cli), "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in self.nodes),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        self.wait_ok()

    def wait_ok(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = []
            for node in self.nodes:
                try:
                    with node.client() as client:
                        info = client.execute_command("CLUSTER", "INFO")
                    text = info.decode() if isinstance(info, bytes) else str(info)
                    states.append("cluster_state:ok" in text)
                except redis.RedisError:
                    states.append(False)
            if all(states):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.2)

    def node_of(self, key: str) -> OwnRedis:
        """The primary serving `key`'s slot."""
        with self.nodes[0].client() as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
            for start, end, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    port = int(primary[1])
                    return next(n for n in self.nodes if n.port == port)
        raise LookupError(key)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnCluster]:
    """A Redis Cluster of three primaries, started once for the session."""
    cluster = OwnCluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        cluster.stop()
        unavailable(f"could not start a Redis Cluster ({type(exc).__name__}: {exc})")
    yield cluster
    cluster.stop()


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class OwnSentinel:
    """A primary, its replica and one Sentinel (quorum 1) on free ports of 127.0.0.1."""

    service = "lr-primary"

    def __init__(self, workdir: Path, *, persistent_replica: bool = False) -> None:
        self.workdir = workdir
        (workdir / "primary").mkdir(parents=True, exist_ok=True)
        (workdir / "replica").mkdir(parents=True, exist_ok=True)
        self.primary = OwnRedis(workdir / "primary")
        self.replica = OwnRedis(
            workdir / "replica",
            "--replicaof",
            "127.0.0.1",
            str(self.primary.port),
            persist=persistent_replica,
        )
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.port}/{self.service}/0"

    def start(self) -> None:
        self.primary.start()
        self.replica.start()
        config = self.workdir / "sentinel.conf"
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.workdir}\n"
            f"sentinel monitor {self.service} 127.0.0.1 {self.primary.port} 1\n"
            f"sentinel down-after-milliseconds {self.service} 1000\n"
            f"sentinel failover-timeout {self.service} 5000\n"
        )
        self.process = subprocess.Popen(
            [self.primary.binary, str(config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Ready once the Sentinel knows the replica, synced: a primary killed before that has
        # nothing to fail over to (the Sentinel finds replicas through the primary's INFO, which
        # a loaded machine delays).
        deadline = time.monotonic() + 60
        while True:
            try:
                with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.5) as client:
                    if client.execute_command(
                        "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service
                    ) and self._replica_ready(client):
                        return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("redis-server --sentinel did not start (or found no replica)")
            time.sleep(0.1)

    def _replica_ready(self, client: redis.Redis) -> bool:
        """The Sentinel lists a replica that is up and whose link to the primary is up."""
        for raw in client.execute_command("SENTINEL", "REPLICAS", self.service) or ():
            pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=False)
            fields = {_text(key): _text(value) for key, value in pairs}
            flags = fields.get("flags", "")
            link = fields.get("master-link-status", fields.get("master_link_status", ""))
            if "s_down" not in flags and "disconnected" not in flags and link == "ok":
                return True
        return False

    def primary_port(self) -> int:
        with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.5) as client:
            _, port = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        return int(port)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.replica.stop()
        self.primary.stop()


@pytest.fixture(scope="session")
def redis_sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnSentinel]:
    """A Sentinel-managed primary with one replica, started once for the session."""
    sentinel = OwnSentinel(tmp_path_factory.mktemp("redis-sentinel"))
    try:
        sentinel.start()
    except (OSError, RuntimeError) as exc:
        sentinel.stop()
        unavailable(f"could not start Redis Sentinel ({type(exc).__name__}: {exc})")
    yield sentinel
    sentinel.stop()
