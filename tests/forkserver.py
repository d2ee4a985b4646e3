"""Fork the test suite's LiteLLM processes instead of starting each from nothing.

A new `litellm` proxy spends ~10 s of CPU importing LiteLLM's proxy server before it reads its
config, a new `python -c` replica ~5 s importing LiteLLM; the suite starts dozens of each on two
cores shared by three LiteLLM lines. The fork server (`forkserver_main.py`, one per test
session, started on first use) imports LiteLLM once; each process is then a fork of it that runs
exactly what a new process would: LiteLLM's `litellm` entry point (`proxy_cli.run_server`) with
the same command line, or the script, with the same environment, working directory, path,
stdin/stdout/stderr and session. The proxy still reads its config, imports this package through
`callbacks:`, starts uvicorn and serves on its own port in its own process.

A process is forked only when nothing LiteLLM reads while importing can differ: its environment
is the fork server's but for `FORKABLE_ENV` (this package's settings, the master key, provider
API keys, paths the tests hand it): there is one fork server per such environment (at most
three), started with exactly it. A proxy must have one worker (more workers are new processes
anyway). Anything else starts as a new process; `TESTS_FORK_LITELLM=0` starts every process
that way.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from litellm_reasoning.testing.proxy import ProcessHandle, launch_process

MAIN = Path(__file__).with_name("forkserver_main.py")
FORKABLE_ENV = frozenset(
    {"LITELLM_MASTER_KEY", "PYTHONPATH", "PYTEST_CURRENT_TEST", "XDG_DATA_HOME"}
)
FORKABLE_ENV_PREFIXES = ("LITELLM_REASONING_", "DECISIONS_PROBE_")
FORKABLE_ENV_SUFFIXES = ("_API_KEY",)  # LiteLLM reads provider keys per request
ENABLED = os.environ.get("TESTS_FORK_LITELLM", "1") != "0"


class ForkedProcess:
    """A process forked by the fork server: what `subprocess.Popen` offers `Proxy` and
    `run_python` (the fork server reaps it and writes its exit code to `status_path`)."""

    def __init__(
        self, pid: int, status_path: Path, args: Sequence[str], server: subprocess.Popen[str]
    ) -> None:
        self.pid = pid
        self.status_path = status_path
        self.args = list(args)
        self.returncode: int | None = None
        self._server = server

    def poll(self) -> int | None:
        if self.returncode is None:
            if self.status_path.exists():
                self.returncode = int(self.status_path.read_text())
            elif self._server.poll() is not None and not Path(f"/proc/{self.pid}").exists():
                self.returncode = -1  # its fork server is gone: nobody will tell its exit code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.05)
        return code


def _forkable(key: str) -> bool:
    return (
        key in FORKABLE_ENV
        or key.startswith(FORKABLE_ENV_PREFIXES)
        or key.endswith(FORKABLE_ENV_SUFFIXES)
    )


class ForkServer:
    """Fork servers by environment: a process is forked from the one whose environment
    differs from its own only in `FORKABLE_ENV` (started on first use, at most `MAX_SERVERS`)."""

    MAX_SERVERS = 3

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[frozenset[tuple[str, str]], subprocess.Popen[str]] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="lr-forkserver-"))
        self._count = 0
        self.forked = 0

    @staticmethod
    def _key(env: Mapping[str, str]) -> frozenset[tuple[str, str]]:
        return frozenset((k, v) for k, v in env.items() if not _forkable(k))

    def can_fork(self, env: Mapping[str, str]) -> bool:
        return ENABLED and (
            self._key(env) in self._servers or len(self._servers) < self.MAX_SERVERS
        )

    def _server(self, env: Mapping[str, str]) -> subprocess.Popen[str]:
        key = self._key(env)
        server = self._servers.get(key)
        if server is None or server.poll() is not None:
            server = self._servers[key] = subprocess.Popen(
                [sys.executable, str(MAIN)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=dict(key),
                cwd=self._dir,
                text=True,
            )
        return server

    def spawn(
        self,
        kind: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        stdout: Path,
        stderr: Path,
        path: Sequence[str],
        code: str = "",
        stdin: Path | None = None,
    ) -> ForkedProcess:
        with self._lock:
            server = self._server(env)
            self._count += 1
            status = self._dir / f"{self._count}.status"
            request = {
                "kind": kind,
                "argv": list(argv),
                "env": dict(env),
                "cwd": str(cwd),
                "stdin": None if stdin is None else str(stdin),
                "stdout": str(stdout),
                "stderr": str(stderr),
                "path": list(path),
                "code": code,
                "status": str(status),
            }
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            answer = server.stdout.readline()
            if not answer:
                raise RuntimeError(f"the fork server exited with code {server.wait()}")
            self.forked += 1
            return ForkedProcess(int(json.loads(answer)["pid"]), status, argv, server)

    def close(self) -> None:
        for server in self._servers.values():
            if server.poll() is None:
                assert server.stdin is not None
                server.stdin.close()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait(10)
        shutil.rmtree(self._dir, ignore_errors=True)


FORK_SERVER = ForkServer()
atexit.register(FORK_SERVER.close)


def launch(command: list[str], env: Mapping[str, str], cwd: Path, log_path: Path) -> ProcessHandle:
    """A `Launcher` for `start_proxy`: forks a one-worker proxy, starts anything else anew."""
    forkable = (
        FORK_SERVER.can_fork(env)
        and Path(command[0]).name == "litellm"  # what `start_proxy` runs
        and "--num_workers" not in command
    )
    if not forkable:
        return launch_process(command, env, cwd, log_path)
    # the console script's directory comes first on a new process's path
    path = [str(Path(command[0]).parent), *_python_path(env)]
    return FORK_SERVER.spawn("litellm", command, env, cwd, log_path, log_path, path)


def _python_path(env: Mapping[str, str]) -> list[str]:
    return [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]


def run_python(
    code: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    input: str | None = None,  # the name `subprocess.run` gives it
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)`,
    forked when it can be."""
    env = dict(os.environ if env is None else env)
    if not FORK_SERVER.can_fork(env):
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            env=env,
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    with tempfile.TemporaryDirectory(prefix="lr-forked-") as scratch:
        out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
        stdin = None
        if input is not None:
            stdin = Path(scratch) / "stdin"
            stdin.write_text(input)
        # `python -c` puts "" (its working directory) first, then PYTHONPATH
        path = ["", *_python_path(env)]
        child = FORK_SERVER.spawn(
            "python", ["-c", *args], env, cwd or Path.cwd(), out, err, path, code, stdin
        )
        try:
            returncode = child.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
            raise
        return subprocess.CompletedProcess(
            [sys.executable, "-c", code, *args],
            returncode,
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
        )
