"""The harness that runs LiteLLM's own tests with the callback registered
(`scripts/litellm_own_tests.py`, CONTRIBUTING.md): it tells a test that fails only with the
callback from one that fails either way, on a tree of its own making."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

pytestmark = pytest.mark.once

SCRIPT = REPO / "scripts" / "litellm_own_tests.py"


def test_a_test_that_fails_only_with_the_callback_is_named(tmp_path: Path) -> None:
    tests = tmp_path / "tests" / "test_litellm"
    tests.mkdir(parents=True)
    (tests / "test_seen.py").write_text(
        "import inspect, litellm\n"
        "from litellm.llms.custom_httpx.llm_http_handler import BaseLLMHTTPHandler\n"
        "def test_signature_kept():\n"
        "    assert 'self' in inspect.signature(BaseLLMHTTPHandler.completion).parameters\n"
        "def test_fails_anyway():\n"
        "    assert False\n"
        "def test_no_callback_in_the_list():\n"
        "    assert not any(type(cb).__name__ == 'ReasoningCallback' for cb in litellm.callbacks)\n"
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "tests/test_litellm/test_seen.py"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 pass only without it" in done.stdout
    assert (
        "FAILS WITH THE CALLBACK" in done.stdout and "test_no_callback_in_the_list" in done.stdout
    )
    assert "test_signature_kept" not in done.stdout.split("FAILS WITH THE CALLBACK", 1)[1]
