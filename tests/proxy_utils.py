"""Run the real LiteLLM proxy as a subprocess for end-to-end tests.

`run_proxy(...)` writes a config.yaml into a directory, starts
`<interpreter bin dir>/litellm --config ... --port ... --host 127.0.0.1` in its own process group,
waits (bounded) until `/health/liveliness` answers, yields a `Proxy`, and kills the process group
at the end. The proxy's stdout and stderr go to `proxy.log` next to the config; its tail is part of
every failure message.
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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CALLBACK = "litellm_reasoning.callback"
REASONING_ENV_PREFIX = "LITELLM_REASONING_"
READY_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 10.0


def litellm_executable() -> Path:
    """The `litellm` CLI installed next to the running interpreter (same venv as the tests)."""
    bin_dir = Path(sys.executable).parent
    for name in ("litellm", "litellm.exe"):
        candidate = bin_dir / name
        if candidate.exists():
            return candidate
    raise RuntimeError(
        f"no `litellm` executable in {bin_dir}; install litellm[proxy] into the interpreter "
        f"running the tests ({sys.executable})"
    )


def free_port() -> int:
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
    model_list: Iterable[Mapping[str, Any]], *, callbacks: str | list[str] = CALLBACK
) -> dict[str, Any]:
    return {
        "model_list": [dict(entry) for entry in model_list],
        "litellm_settings": {"callbacks": callbacks},
    }


@dataclass
class Proxy:
    url: str
    """`http://127.0.0.1:PORT`"""
    master_key: str
    process: subprocess.Popen[bytes]
    config_path: Path
    log_path: Path
    startup_seconds: float

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


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the proxy's process group (it was started as the leader of a new session)."""
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


@contextlib.contextmanager
def run_proxy(
    config: Mapping[str, Any],
    workdir: Path,
    *,
    env: Mapping[str, str] | None = None,
    ready_timeout: float = READY_TIMEOUT_SECONDS,
) -> Iterator[Proxy]:
    """Start the LiteLLM proxy with `config`; yield it once it is live; stop it afterwards.

    The proxy inherits the environment without any `LITELLM_REASONING_*` variable (a developer's
    own settings must not change what a test sees); `env` adds to it, e.g. those settings.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "config.yaml"
    config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    log_path = workdir / "proxy.log"
    port = free_port()
    master_key = "sk-" + secrets.token_hex(32)
    no_proxy = ",".join(
        filter(
            None, [os.environ.get("NO_PROXY") or os.environ.get("no_proxy"), "127.0.0.1,localhost"]
        )
    )
    child_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(REASONING_ENV_PREFIX)},
        "LITELLM_MASTER_KEY": master_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # the proxy reaches the local upstream directly, whatever HTTP proxy the environment sets
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
        **(env or {}),
    }
    command = [
        str(litellm_executable()),
        "--config",
        str(config_path),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
    ]
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the whole tree can be stopped
        )
    proxy = Proxy(
        url=f"http://127.0.0.1:{port}",
        master_key=master_key,
        process=process,
        config_path=config_path,
        log_path=log_path,
        startup_seconds=float("nan"),
    )
    try:
        deadline = started + ready_timeout
        while True:
            code = process.poll()
            if code is not None:
                raise RuntimeError(
                    f"the litellm proxy exited with code {code} before it was ready "
                    f"({' '.join(command)}); log tail:\n{proxy.log_tail()}"
                )
            if _get_status(proxy.url + "/health/liveliness", timeout=2.0) == 200:
                break
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"the litellm proxy was not live on {proxy.url} after {ready_timeout:.0f} s "
                    f"({' '.join(command)}); log tail:\n{proxy.log_tail()}"
                )
            time.sleep(0.2)  # readiness polling, bounded by `deadline`
        proxy.startup_seconds = time.monotonic() - started
        yield proxy
    finally:
        _stop(process)
