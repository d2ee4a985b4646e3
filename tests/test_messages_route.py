"""The proxy's Anthropic-format `/v1/messages` (Claude Code, the Anthropic SDKs), with the
official `anthropic` client: the callback never floods the proxy log. Its streams reach the
proxy's iterator hook as raw SSE bytes, which release 0.1.0 handed to LiteLLM's chunk builder
(an ERROR line and a traceback for every streamed request)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

pytestmark = pytest.mark.proxy

THINKING = {"type": "enabled", "budget_tokens": 1024}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(claude: AnthropicUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from proxy_utils import proxy_config, run_proxy

    deployment = {"model": "anthropic/claude-sonnet-4-5", "api_base": claude.base_url}
    config = proxy_config(
        [{"model_name": "claude", "litellm_params": {**deployment, "api_key": "k"}}]
    )
    with run_proxy(
        config, tmp_path_factory.mktemp("messages"), env={"LITELLM_REASONING_STORE": "memory://"}
    ) as running:
        yield running


def test_messages_json_and_streams_leave_no_error_in_the_proxy_log(
    claude: AnthropicUpstream, proxy: Any
) -> None:
    import anthropic

    claude.always(
        "claude-sonnet-4-5",
        AnthropicReply(
            [
                {"type": "thinking", "thinking": "Easy.", "signature": SIGNATURE},
                {"type": "text", "text": "Hi."},
            ]
        ),
    )
    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    reply = client.messages.create(
        model="claude", max_tokens=2048, messages=messages, thinking=THINKING
    )
    assert [b.type for b in reply.content] == ["thinking", "text"]
    for _ in range(3):
        with client.messages.stream(
            model="claude", max_tokens=2048, messages=messages, thinking=THINKING
        ) as stream:
            final = stream.get_final_message()
        assert [b.type for b in final.content] == ["thinking", "text"]
    log = proxy.log_path.read_text(errors="replace")
    errors = [line for line in log.splitlines() if "ERROR" in line or "litellm-reasoning:" in line]
    assert errors == [] and "Traceback" not in log, "\n".join(errors) or log[-3000:]
