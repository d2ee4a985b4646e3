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


@pytest.mark.proxy  # the proxy section starts the real `litellm` proxy
@pytest.mark.once  # a tool's smoke run: one LiteLLM line is enough
def test_bench_quick_run_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env = {k: v for k, v in env.items() if not k.startswith("LITELLM_REASONING_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--out", str(out)],
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
    for name, title in TITLES.items():
        assert title in text, f"section {name} missing from {out}"
        assert f"{name}: FAILED" not in text
