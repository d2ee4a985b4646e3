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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OwnRedis:
    """A private `redis-server` (no persistence) that a test may kill, freeze and restart."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("no redis-server binary to start a private Redis")
        self.binary = str(binary)
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
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
