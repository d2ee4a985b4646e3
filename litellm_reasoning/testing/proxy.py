"""Run the real LiteLLM proxy as a subprocess (tests, `litellm-reasoning demo --proxy`).

`run_proxy(config, workdir)` writes `config` as `config.yaml` into `workdir`, starts
`<interpreter bin dir>/litellm --config ... --port <free port> --host 127.0.0.1` in its own
process group with a generated master key, waits (bounded) until every worker is live, yields a
`Proxy`, and stops the whole process group at the end. The proxy's stdout and stderr go to
`proxy.log` next to the config; its tail is part of every failure message.

`start_proxy` / `Proxy.wait_ready` / `Proxy.stop` are the same steps one by one, so several
proxies can boot at the same time (startup is mostly CPU-bound imports, ~10-20 s each).
A `launcher` replaces how the process is started (the tests fork proxies from a process that has
imported LiteLLM already); the default is a new `litellm` process.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

CALLBACK = "litellm_reasoning.callback"
REASONING_ENV_PREFIX = "LITELLM_REASONING_"
READY_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 10.0
INSTALL_HINT = "pip install 'litellm-reasoning[proxy]'"

# What `litellm --config` imports before it serves anything (from litellm[proxy]).
_PROXY_MODULES = ("fastapi", "uvicorn", "backoff", "orjson", "apscheduler")
_WORKER_READY = re.compile(rb"Application startup complete")


class ProxyUnavailable(RuntimeError):
    """The LiteLLM proxy cannot run from this interpreter (the proxy extra is missing)."""


def litellm_executable() -> Path:
    """The `litellm` CLI installed next to the running interpreter (same environment)."""
    missing = [name for name in _PROXY_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ProxyUnavailable(
            f"the LiteLLM proxy is not installed for {sys.executable} (missing: "
            f"{', '.join(missing)}); install it with: {INSTALL_HINT}"
        )
    bin_dir = Path(sys.executable).parent
    for name in ("litellm", "litellm.exe"):
        candidate = bin_dir / name
        if candidate.exists():
            return candidate
    raise ProxyUnavailable(
        f"no `litellm` executable in {bin_dir} (next to {sys.executable}); "
        f"install it with: {INSTALL_HINT}"
    )


def new_master_key() -> str:
    return "sk-" + secrets.token_hex(32)


def _ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for source ports of outgoing connections (and for port 0)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A port nothing listens on now, for a server that binds it seconds later. Drawn outside
    the kernel's ephemeral range: there every outgoing connection made meanwhile takes its
    source port (a proxy of a parallel test line lost its port so, "address already in use",
    beside two CPU hogs); port 0 only when no other is free."""
    low, high = _ephemeral_ports()
    first, last = (10_000, low - 1) if low > 12_000 else (high + 1, 65_535)
    for _ in range(64):
        port = secrets.randbelow(last - first + 1) + first
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def openai_compatible_deployment(
    model_name: str, upstream_model: str, api_base: str, **litellm_params: Any
) -> dict[str, Any]:
    """A `model_list` entry for an OpenAI-compatible upstream (`openai/<upstream_model>`)."""
    return {
        "model_name": model_name,
        "litellm_params": {
            "model": f"openai/{upstream_model}",
            "api_base": api_base,
            "api_key": "x",
            **litellm_params,
        },
    }


def proxy_config(
    model_list: Iterable[Mapping[str, Any]],
    *,
    callbacks: str | list[str] = CALLBACK,
    callback_settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A proxy config: `model_list`, the callback, and optionally its `callback_settings`
    section (`{"store": ..., "namespace": ...}` under `callback_settings.litellm_reasoning`)."""
    config: dict[str, Any] = {
        "model_list": [dict(entry) for entry in model_list],
        "litellm_settings": {"callbacks": callbacks},
    }
    if callback_settings is not None:
        config["callback_settings"] = {"litellm_reasoning": dict(callback_settings)}
    return config


def _get_status(url: str, timeout: float) -> int | None:
    # The proxy is local: never go through an HTTP proxy from the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None


class ProcessHandle(Protocol):
    """What `Proxy` needs of its process (`subprocess.Popen` is one)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


Launcher = Callable[[list[str], Mapping[str, str], Path, Path], ProcessHandle]
"""Starts `command` with exactly the environment given, in the directory given, its stdout and
stderr into the log file given, as the leader of a session of its own."""


def launch_process(
    command: list[str], env: Mapping[str, str], cwd: Path, log_path: Path
) -> ProcessHandle:
    """The default `Launcher`: a new process."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the whole tree can be stopped
        )


@dataclass
class Proxy:
    url: str
    """`http://127.0.0.1:PORT`"""
    master_key: str
    process: ProcessHandle
    config_path: Path
    log_path: Path
    command: list[str] = field(default_factory=list)
    num_workers: int = 1
    started_at: float = field(default_factory=time.monotonic)
    startup_seconds: float = float("nan")
    """Seconds from the start of the process until every worker was live."""

    @property
    def base_url(self) -> str:
        """What `openai.OpenAI(base_url=...)` takes."""
        return self.url + "/v1"

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<no proxy log: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def _workers_started(self) -> int:
        try:
            return len(_WORKER_READY.findall(self.log_path.read_bytes()))
        except OSError:
            return 0

    def wait_ready(self, timeout: float = READY_TIMEOUT_SECONDS) -> Proxy:
        """Wait (bounded) until `/health/liveliness` answers and, with several workers, every
        worker has logged its startup; raise with the log tail if the proxy dies or is late."""
        deadline = self.started_at + timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise RuntimeError(
                    f"the litellm proxy exited with code {code} before it was ready "
                    f"({' '.join(self.command)}); log tail:\n{self.log_tail()}"
                )
            live = _get_status(self.url + "/health/liveliness", timeout=2.0) == 200
            if live and (self.num_workers <= 1 or self._workers_started() >= self.num_workers):
                break
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"the litellm proxy was not live on {self.url} after {timeout:.0f} s "
                    f"({' '.join(self.command)}); log tail:\n{self.log_tail()}"
                )
            time.sleep(0.2)  # readiness polling, bounded by `deadline`
        self.startup_seconds = time.monotonic() - self.started_at
        return self

    def stop(self) -> None:
        """Terminate the proxy's process group (it leads a session of its own)."""
        process = self.process
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        # Workers of a multi-worker proxy are in the same group; make sure none outlives it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def start_proxy(
    config: Mapping[str, Any],
    workdir: Path,
    *,
    env: Mapping[str, str] | None = None,
    num_workers: int = 1,
    master_key: str | None = None,
    extra_args: Iterable[str] = (),
    launcher: Launcher = launch_process,
) -> Proxy:
    """Start the LiteLLM proxy with `config` (not yet ready: call `wait_ready`, then `stop`).

    The proxy inherits the environment without any `LITELLM_REASONING_*` variable (a developer's
    own settings must not change what it does); `env` adds to it, e.g. those settings.
    `master_key` defaults to a fresh random one; pass the same key to proxies that must share
    stored reasoning (records are scoped per key) or to a restarted proxy.
    """
    executable = litellm_executable()
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "config.yaml"
    config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    log_path = workdir / "proxy.log"
    port = free_port()
    master_key = master_key or new_master_key()
    no_proxy = ",".join(
        filter(
            None, [os.environ.get("NO_PROXY") or os.environ.get("no_proxy"), "127.0.0.1,localhost"]
        )
    )
    child_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(REASONING_ENV_PREFIX)},
        "LITELLM_MASTER_KEY": master_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # the proxy reaches local upstreams directly, whatever HTTP proxy the environment sets
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
        **(env or {}),
    }
    command = [
        str(executable),
        "--config",
        str(config_path),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
    ]
    if num_workers > 1:
        # uvicorn kills a worker that does not answer its health check within 5 s, and a worker
        # importing LiteLLM on a loaded machine can take longer: it would be restarted forever.
        command += ["--num_workers", str(num_workers), "--timeout_worker_healthcheck", "120"]
    command += list(extra_args)
    process = launcher(command, child_env, workdir, log_path)
    return Proxy(
        url=f"http://127.0.0.1:{port}",
        master_key=master_key,
        process=process,
        config_path=config_path,
        log_path=log_path,
        command=command,
        num_workers=num_workers,
    )


@contextlib.contextmanager
def run_proxy(
    config: Mapping[str, Any],
    workdir: Path,
    *,
    env: Mapping[str, str] | None = None,
    num_workers: int = 1,
    master_key: str | None = None,
    ready_timeout: float = READY_TIMEOUT_SECONDS,
    launcher: Launcher = launch_process,
) -> Iterator[Proxy]:
    """Start the LiteLLM proxy with `config`; yield it once it is live; stop it afterwards."""
    proxy = start_proxy(
        config,
        workdir,
        env=env,
        num_workers=num_workers,
        master_key=master_key,
        launcher=launcher,
    )
    try:
        yield proxy.wait_ready(ready_timeout)
    finally:
        proxy.stop()


@contextlib.contextmanager
def run_proxies(
    *specs: tuple[Mapping[str, Any], Path, Mapping[str, str] | None],
    master_key: str | None = None,
    ready_timeout: float = READY_TIMEOUT_SECONDS,
    launcher: Launcher = launch_process,
) -> Iterator[list[Proxy]]:
    """Several proxies `(config, workdir, env)`, booted at the same time, all with one master
    key (`master_key`, default a fresh one); all stopped at the end."""
    master_key = master_key or new_master_key()
    proxies: list[Proxy] = []
    try:
        for config, workdir, env in specs:
            proxies.append(
                start_proxy(config, workdir, env=env, master_key=master_key, launcher=launcher)
            )
        for proxy in proxies:
            proxy.wait_ready(ready_timeout)
        yield proxies
    finally:
        for proxy in proxies:
            proxy.stop()


__all__ = [
    "CALLBACK",
    "INSTALL_HINT",
    "Launcher",
    "ProcessHandle",
    "Proxy",
    "ProxyUnavailable",
    "free_port",
    "launch_process",
    "litellm_executable",
    "new_master_key",
    "openai_compatible_deployment",
    "proxy_config",
    "run_proxies",
    "run_proxy",
    "start_proxy",
]
