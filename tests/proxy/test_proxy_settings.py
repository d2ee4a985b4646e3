"""A mistake in the proxy's settings: the real `litellm` proxy stops at startup with one line
naming the setting, its value and the closest valid name, and a non-zero exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from proxy_utils import run_proxy, start_proxy

from litellm_reasoning.testing.proxy import proxy_config

pytestmark = pytest.mark.proxy

EXIT_TIMEOUT = 300.0
"""Bound on the proxy's start and exit, far above a loaded machine's boot time."""


@pytest.mark.parametrize(
    ("section", "env", "named"),
    [
        ({"namspace": "acme"}, {}, ["'namspace'", "did you mean 'namespace'"]),
        ({"store": "redis://127.0.0.1:6379/0?tll=60"}, {}, ["'tll'", "did you mean 'ttl'"]),
        ({}, {"LITELLM_REASONING_LEGACY_KEYS": "maybe"}, ["LEGACY_KEYS", "'maybe'"]),
    ],
)
def test_a_bad_setting_stops_the_proxy_with_one_line(
    section: dict[str, str], env: dict[str, str], named: list[str], tmp_path: Path
) -> None:
    config = proxy_config([], callback_settings=section)
    proxy = start_proxy(config, tmp_path, env=env)
    try:
        code = proxy.process.wait(timeout=EXIT_TIMEOUT)
    finally:
        proxy.stop()
    log = proxy.log_path.read_text(errors="replace")
    ours = [line for line in log.splitlines() if "litellm-reasoning: invalid setting" in line]
    assert code == 2, log[-3000:]
    assert len(ours) == 1, log[-3000:]
    assert all(part in ours[0] for part in named), ours
    assert "Traceback" not in log, log[-3000:]


def test_the_proxy_says_once_that_the_callback_is_active(tmp_path: Path) -> None:
    """The sign of life at the default level: one line in LiteLLM's log format with the
    version, the store and whether it persists, and the policy overrides."""
    import litellm_reasoning

    config = proxy_config(
        [],
        callback_settings={"store": f"sqlite:///{tmp_path / 'r.db'}", "policies": {"x/*": "none"}},
    )
    with run_proxy(config, tmp_path / "proxy") as proxy:
        log = proxy.log_path.read_text(errors="replace")
    lines = [line for line in log.splitlines() if "litellm-reasoning" in line and "active" in line]
    assert len(lines) == 1, log[-3000:]
    line = lines[0]
    assert f"litellm-reasoning {litellm_reasoning.__version__} active" in line
    assert f"sqlite:///{tmp_path / 'r.db'} (persistent" in line
    assert "x/*: none" in line
    assert "INFO" in line  # LiteLLM's own format: "<time> - LiteLLM:INFO: ..."
