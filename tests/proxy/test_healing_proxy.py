"""Healing through the real LiteLLM proxy (its default SQLite store), from the official `openai`
client that drops reasoning: after one refusal of reasoning the callback restored, the client's
resend passes and the refused record never reaches the provider again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from proxy_utils import TOOLS, Proxy, chat, openai_compatible_deployment, proxy_config, run_proxy

from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.refusals import deepseek_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

pytestmark = pytest.mark.proxy

THINKING = {"type": "enabled", "budget_tokens": 1024}
STREAMS = [False, True]


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture(scope="module")
def deepseek_like() -> Iterator[Upstream]:
    with Upstream(refuse=[deepseek_reasoning_required]) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(
    claude: AnthropicUpstream,
    deepseek_like: Upstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Proxy]:
    workdir = tmp_path_factory.mktemp("proxy-heal")
    deployments: list[dict[str, Any]] = [
        {
            "model_name": f"claude-{stream}",
            "litellm_params": {
                "model": f"anthropic/claude-sonnet-4-5-proxy-{stream}",
                "api_base": claude.base_url,
                "api_key": "k",
            },
        }
        for stream in STREAMS
    ]
    deployments += [
        openai_compatible_deployment(
            f"acme-{stream}", f"acme-reasoner-{stream}", deepseek_like.base_url
        )
        for stream in STREAMS
    ]
    deployments.append(
        openai_compatible_deployment("acme-shared", "acme-shared-reasoner", deepseek_like.base_url)
    )
    store = Path(workdir) / "reasoning.db"
    with run_proxy(
        proxy_config(deployments), workdir, env={"LITELLM_REASONING_STORE": f"sqlite:///{store}"}
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: Proxy) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=proxy.base_url, api_key=proxy.master_key, max_retries=0, timeout=60
    ) as c:
        yield c


@pytest.mark.parametrize("no_log", [False, True], ids=["logged", "no-log"])
@pytest.mark.parametrize("stream", STREAMS)
def test_a_refused_signature_is_never_sent_again_through_the_proxy(
    claude: AnthropicUpstream, client: openai.OpenAI, stream: bool, no_log: bool
) -> None:
    """`no-log` (round three): LiteLLM calls no logging callback for such a request; the
    refusal is healed all the same (the proxy's own failure hook heals it here even without the
    `no-log` patch; the SDK paths needed it: tests/integration/test_healing.py)."""
    model = f"claude-sonnet-4-5-proxy-{stream}"
    signature = f"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-proxy-{stream}-{no_log}=="
    claude.script(
        model,
        AnthropicReply(
            [
                {"type": "thinking", "thinking": "Check the weather.", "signature": signature},
                {
                    "type": "tool_use",
                    "id": f"toolu_{stream}",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ]
        ),
    )
    claude.always(model, AnthropicReply([{"type": "text", "text": "Sunny in Paris."}]))
    body = {"thinking": THINKING, **({"no-log": True} if no_log else {})}
    extra = {"extra_body": body, "max_tokens": 2048, "tools": TOOLS}
    history: list[dict[str, Any]] = [{"role": "user", "content": f"Weather in Paris? {no_log}"}]
    got = chat(client, f"claude-{stream}", history, stream=stream, **extra)
    assert [c["id"] for c in got.tool_calls] == [f"toolu_{stream}"]
    history += [
        got.as_history(),
        {"role": "tool", "tool_call_id": f"toolu_{stream}", "content": "Sunny, 24 C"},
    ]
    claude.revoked.add(signature)
    with pytest.raises(openai.BadRequestError, match="Invalid `signature`"):
        chat(client, f"claude-{stream}", history, stream=stream, **extra)
    answer = chat(client, f"claude-{stream}", history, stream=stream, **extra)
    assert answer.content == "Sunny in Paris."
    history += [
        {"role": "assistant", "content": answer.content},
        {"role": "user", "content": "And tomorrow?"},
    ]
    chat(client, f"claude-{stream}", history, stream=stream, **extra)
    sent = [json.dumps(body) for body in claude.bodies(model)]
    assert sum(signature in body for body in sent) == 1, "the refused signature was sent again"


@pytest.mark.parametrize("stream", STREAMS)
def test_a_server_asking_for_every_turn_gets_it_through_the_proxy(
    deepseek_like: Upstream, client: openai.OpenAI, stream: bool
) -> None:
    model = f"acme-reasoner-{stream}"
    deepseek_like.script(
        model,
        Reply(
            message={
                "role": "assistant",
                "content": None,
                "reasoning_content": "R1: look it up",
                "tool_calls": [
                    {
                        "id": f"call_{stream}",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            }
        ),
        Reply(message={"role": "assistant", "content": "Sunny.", "reasoning_content": "R2"}),
    )
    deepseek_like.always(
        model, Reply(message={"role": "assistant", "content": "ok", "reasoning_content": "R3"})
    )
    group = f"acme-{stream}"
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    history.append(chat(client, group, history, stream=stream, tools=TOOLS).as_history())
    history.append({"role": "tool", "tool_call_id": f"call_{stream}", "content": "Sunny"})
    history.append(chat(client, group, history, stream=stream, tools=TOOLS).as_history())
    history.append({"role": "user", "content": "And tomorrow?"})
    with pytest.raises(openai.BadRequestError, match="reasoning_content"):
        chat(client, group, history, stream=stream, tools=TOOLS)
    assert chat(client, group, history, stream=stream, tools=TOOLS).content == "ok"
    last = deepseek_like.bodies(model)[-1]
    sent = [m.get("reasoning_content") for m in last["messages"] if m["role"] == "assistant"]
    assert sent == ["R1: look it up", "R2"]


def test_a_client_cannot_flip_another_tenants_policy_through_the_proxy(
    deepseek_like: Upstream, client: openai.OpenAI
) -> None:
    """End user B writes a refusal's text into a malformed `tool_choice`, which LiteLLM
    rejects itself (and echoes) before any provider sees it: A's tool loop on the same
    deployment still carries its reasoning, every time (before 0.3.0: 0 of 5 after each of
    B's requests, DeepSeek's 400)."""
    model = "acme-shared-reasoner"
    call = {
        "id": "call_shared",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    deepseek_like.always(
        model,
        Reply(
            message={"content": None, "reasoning_content": "R: look it up", "tool_calls": [call]}
        ),
    )

    def loop(user: str) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [{"role": "user", "content": f"Weather? ({user})"}]
        got = chat(client, "acme-shared", history, stream=False, tools=TOOLS, user=user)
        return [
            *history,
            got.as_history(),
            {"role": "tool", "tool_call_id": "call_shared", "content": "Sunny"},
        ]

    victim, attacker = loop("victim"), loop("attacker")
    forged = {"type": "cannot contain reasoning content; reasoning_content must be passed back"}
    for _ in range(3):
        with pytest.raises(openai.BadRequestError, match="tool choice"):
            chat(
                client,
                "acme-shared",
                attacker,
                stream=False,
                tools=TOOLS,
                user="attacker",
                tool_choice=forged,
            )
        chat(client, "acme-shared", victim, stream=False, tools=TOOLS, user="victim")
        sent = deepseek_like.bodies(model)[-1]["messages"]
        assert sent[1]["reasoning_content"] == "R: look it up"
