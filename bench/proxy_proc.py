"""Start the real `litellm` proxy (the CLI next to this interpreter) as a subprocess.

A trimmed copy of what `tests/proxy_utils.py` does, so the benchmark does not import from tests
(but for the smoke run's `BENCH_FORK_PROXIES`): its own process group, a random master key,
readiness on `/health/liveliness`, and the whole group stopped afterwards. The log goes to
`proxy.log` in the work directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from litellm_reasoning.testing.proxy import Launcher, ProcessHandle, launch_process


@dataclass
class Proxy:
    url: str
    master_key: str
    log_path: Path
    startup_seconds: float
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU time of the proxy process so far (all its threads)."""
        return _cpu_seconds(_stat(Path(f"/proc/{self.pid}/stat")))

    def group_cpu_seconds(self) -> float:
        """User + system CPU time so far of every live process of the proxy's process group
        (its workers too: the proxy runs in a session of its own)."""
        total = 0.0
        for path in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = _stat(path)
            except OSError:  # ended meanwhile
                continue
            if int(fields[2]) == self.pid:  # the process group id
                total += _cpu_seconds(fields)
        return total


def _stat(path: Path) -> list[str]:
    """The fields of a `/proc/<pid>/stat` after the command name (state first)."""
    return path.read_text().rsplit(")", 1)[1].split()


def _cpu_seconds(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


FORK_ENV = "BENCH_FORK_PROXIES"
"""Set (to anything but 0) by the test suite's smoke run: each one-worker proxy is forked from
the tests' fork server (`tests/forkserver.py`), which imports LiteLLM's proxy once, where a new
process spends ~10 s of CPU on it; the smoke run starts a dozen proxies beside the suite's other
two lines on two cores. A measured run never sets it: each proxy starts as a new process."""


def _launcher() -> Launcher:
    if os.environ.get(FORK_ENV, "0") == "0":
        return launch_process
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.append(tests)
    from forkserver import launch  # the tests' own; only in the smoke run

    return cast(Launcher, launch)


def _live(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url + "/health/liveliness", timeout=2.0) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


class ProxyProcess:
    """`start()` launches without waiting, `wait_ready()` blocks until live: two proxies can
    start side by side."""

    def __init__(
        self,
        config: Mapping[str, Any],
        workdir: Path,
        env: Mapping[str, str] | None = None,
        num_workers: int = 1,
    ) -> None:
        self.num_workers = num_workers
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
        self.log_path = workdir / "proxy.log"
        self.port = _free_port()
        self.master_key = "sk-" + secrets.token_hex(16)
        self.workdir = workdir
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LITELLM_REASONING_")},
            "LITELLM_MASTER_KEY": self.master_key,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            **(env or {}),
        }
        self.process: ProcessHandle | None = None
        self.started = 0.0

    def start(self) -> ProxyProcess:
        litellm_cli = Path(sys.executable).parent / "litellm"
        command = [str(litellm_cli), "--config", str(self.config_path), "--port", str(self.port)]
        command += ["--host", "127.0.0.1"]
        if self.num_workers > 1:
            # uvicorn kills a worker that does not answer its health ping within 5 s, and a
            # worker importing LiteLLM on a loaded machine takes longer (LiteLLM's own flag).
            command += ["--num_workers", str(self.num_workers)]
            command += ["--timeout_worker_healthcheck", "120"]
        self.started = time.monotonic()
        self.process = _launcher()(command, self.env, self.workdir, self.log_path)
        return self

    def wait_ready(self, timeout: float = 120.0) -> Proxy:
        assert self.process is not None
        url = f"http://127.0.0.1:{self.port}"
        deadline = self.started + timeout
        while not _live(url) or (
            self.log_path.read_bytes().count(b"Application startup complete") < self.num_workers
        ):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])
                raise RuntimeError(f"the litellm proxy did not start; log tail:\n{tail}")
            time.sleep(0.2)
        started = time.monotonic() - self.started
        return Proxy(url, self.master_key, self.log_path, started, self.process.pid)

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@contextlib.contextmanager
def proxies(
    specs: Mapping[str, ProxyProcess], timeout: float = 120.0
) -> Iterator[dict[str, Proxy]]:
    """Start every proxy at once, wait for all, stop all afterwards."""
    try:
        for spec in specs.values():
            spec.start()
        yield {name: spec.wait_ready(timeout) for name, spec in specs.items()}
    finally:
        for spec in specs.values():
            spec.stop()
