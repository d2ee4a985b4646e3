"""The benchmark runs: `python bench/run.py --quick` exits 0 and writes every section.

No timing assertions: the numbers of a smoke run mean nothing (see bench/README.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

ROOT = REPO
TITLES = {
    "rewrite": "## Rewrite cost vs its floor",
    "e2e": "## End to end in LiteLLM",
    "stores": "## Store round trips",
    "proxy": "## Proxy throughput",
    "workers": "## Proxy workers and Redis",
    "tokens": "## Tokens and prompt-cache prefix",
    "profile": "## Profile of the hot paths",
}


IN_PROCESS = ("rewrite", "e2e", "stores", "tokens", "profile")
PROXIES = ("proxy", "workers", "gateway", "saturation")
TITLES["saturation"] = "## Saturation:"
TITLES["gateway"] = "## Gateway latency"


def _quick_run(tmp_path: Path, sections: tuple[str, ...]) -> None:
    out = tmp_path / "results.md"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env = {k: v for k, v in env.items() if not k.startswith("LITELLM_REASONING_")}
    # One-worker proxies forked from the suite's fork server, as the suite's own are (a dozen
    # proxies each importing LiteLLM's proxy anew were the suite's longest item).
    env["BENCH_FORK_PROXIES"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--quick",
            "--sections",
            ",".join(sections),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    text = out.read_text()
    assert "## Headline" in text
    for name in sections:
        assert TITLES[name] in text, f"section {name} missing from {out}"
        assert f"{name}: FAILED" not in text


# One smoke run of a tool: one LiteLLM line is enough. The sections that start the real proxy
# run where the proxy is installed, the others on the SDK line (the longest line is shorter).
@pytest.mark.once
def test_bench_quick_run_writes_every_in_process_section(tmp_path: Path) -> None:
    _quick_run(tmp_path, IN_PROCESS)


@pytest.mark.proxy
@pytest.mark.once
def test_bench_quick_run_writes_every_proxy_section(tmp_path: Path) -> None:
    _quick_run(tmp_path, PROXIES)
