"""Reasoning only one organisation, account or project can read goes back only to a deployment
of that origin: a Router model group of two Claude accounts (or two OpenAI organisations)
never sends one's signed blocks (or encrypted items) to the other. Each local server refuses the
other's reasoning as the provider would; asserted on what reached each server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import yaml
from clients import READ_FILE, THINKING, dropping_client
from conftest import register
from paths import REPO

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.core import identity
from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream
from litellm_reasoning.testing.refusals import openai_encrypted_content
from litellm_reasoning.testing.upstream import Reply, Upstream

TOOL = READ_FILE
CASSETTES = REPO / "cassettes"
SIG_A = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgx-issued-by-account-a=="


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


def test_the_origin_is_a_one_way_fingerprint_of_the_credential() -> None:
    a = identity.origin_of("anthropic", ["sk-ant-org-a", None])
    assert a == identity.origin_of("anthropic", ["sk-ant-org-a", None])
    assert a != identity.origin_of("anthropic", ["sk-ant-org-b", None])
    assert a != identity.origin_of("bedrock", ["sk-ant-org-a", None])
    assert "sk-ant" not in a and len(a) == 16
    record = Reasoning(parts=(ReasoningPart(text="t", signature="s"),), origin=a, deployment="d1")
    assert Reasoning.from_json(record.to_json()) == record
    assert Reasoning.from_json({**record.to_json(), "origin": 7}).origin is None


def _deployment(name: str, server: Any, key: str, model: str) -> dict[str, Any]:
    return {
        "model_name": "group",
        "litellm_params": {"model": model, "api_base": server.base_url, "api_key": key},
        "model_info": {"id": name},
    }


def _script_accounts(
    model: str, account_a: AnthropicUpstream, account_b: AnthropicUpstream
) -> None:
    """Account A answers with a block signed by A and a tool call; then both answer in text."""
    account_a.script(
        model,
        AnthropicReply(
            [
                {"type": "thinking", "thinking": "Read a.py.", "signature": SIG_A},
                {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}},
            ]
        ),
    )
    for server in (account_a, account_b):
        server.always(model, AnthropicReply([{"type": "text", "text": "one line"}]))


@pytest.mark.parametrize("sync", [False, True], ids=["acompletion", "completion"])
async def test_a_router_group_of_two_claude_accounts_keeps_each_accounts_blocks(
    callback: ReasoningCallback, sync: bool
) -> None:
    model = f"claude-sonnet-4-5-origin-{sync}"
    with AnthropicUpstream(strict=True) as account_a, AnthropicUpstream(strict=True) as account_b:
        account_b.revoked.add(SIG_A)  # account B cannot read account A's blocks
        _script_accounts(model, account_a, account_b)
        router = litellm.Router(
            model_list=[
                _deployment("account-a", account_a, "sk-ant-org-a", f"anthropic/{model}"),
                _deployment("account-b", account_b, "sk-ant-org-b", f"anthropic/{model}"),
            ],
            num_retries=0,
        )

        async def call(deployment: str, messages: list[Any]) -> Any:
            # A deployment id as the model: the Router sends it to that deployment only.
            params = {
                "model": deployment,
                "messages": messages,
                "tools": [TOOL],
                "thinking": THINKING,
                "max_tokens": 2048,
            }
            if sync:
                import asyncio

                return (await asyncio.to_thread(router.completion, **params)).choices[0].message
            return (await router.acompletion(**params)).choices[0].message

        messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
        first = await call("account-a", messages)
        messages += [
            dropping_client(first),
            {"role": "tool", "tool_call_id": "toolu_a", "content": "one line"},
        ]
        assert (await call("account-b", messages)).content == "one line"
        assert (await call("account-a", messages)).content == "one line"
        to_b = json.dumps(account_b.bodies(model))
        to_a = [json.dumps(body) for body in account_a.bodies(model)]
    assert SIG_A not in to_b, "account A's signed block reached account B"
    assert account_b.refusals == []
    assert SIG_A in to_a[-1], "account A gets its own block back"
    assert callback.stats["foreign_origin"] == 1
    assert callback.stats["thinking_disabled"] == 1  # B's tool loop had no block it can read


async def test_a_router_group_of_two_openai_organisations_keeps_each_ones_items(
    callback: ReasoningCallback,
) -> None:
    first, second = (
        item
        for item in yaml.safe_load(
            (CASSETTES / "openai_responses_tool_loop.yaml").read_text(encoding="utf-8")
        )["interactions"]
    )
    reply1 = json.loads(first["response"]["body"]["string"])
    (item,) = [i for i in reply1["output"] if i["type"] == "reasoning"]
    request1, request2 = json.loads(first["request"]["body"]), json.loads(second["request"]["body"])
    dropped = [i for i in request2["input"] if i.get("type") != "reasoning"]
    refuse_a = openai_encrypted_content({item["encrypted_content"]})
    with Upstream() as org_a, Upstream(refuse=[refuse_a]) as org_b:
        org_a.script("gpt-5", Reply(raw_body=first["response"]["body"]["string"]))
        for server in (org_a, org_b):
            server.always("gpt-5", Reply(raw_body=second["response"]["body"]["string"]))
        router = litellm.Router(
            model_list=[
                _deployment("org-a", org_a, "sk-org-a", "openai/gpt-5"),
                _deployment("org-b", org_b, "sk-org-b", "openai/gpt-5"),
            ],
            num_retries=0,
        )
        params = {k: v for k, v in request1.items() if k not in ("model", "input", "stream")}
        await router.aresponses(model="org-a", input=request1["input"], **params)
        await router.aresponses(model="org-b", input=dropped, **params)
        await router.aresponses(model="org-a", input=dropped, **params)
        to_b = json.dumps(org_b.bodies("gpt-5"))
        to_a = json.dumps(org_a.bodies("gpt-5")[-1])
    assert item["encrypted_content"] not in to_b
    assert org_b.refusals == []
    assert item["encrypted_content"] in to_a
    assert callback.stats["foreign_origin"] == 1


@pytest.fixture
def two_named_credentials() -> Iterator[tuple[AnthropicUpstream, AnthropicUpstream]]:
    """Two Claude accounts known only by LiteLLM credential name (`litellm.credential_list`):
    `acct-a` and `acct-b`, each with its own key and server."""
    from litellm.types.utils import CredentialItem

    saved = list(litellm.credential_list)
    with AnthropicUpstream(strict=True) as account_a, AnthropicUpstream(strict=True) as account_b:
        account_b.revoked.add(SIG_A)  # account B cannot read account A's blocks
        litellm.credential_list = [
            CredentialItem(
                credential_name=name,
                credential_values={"api_key": key, "api_base": server.base_url},
                credential_info={},
            )
            for name, key, server in (
                ("acct-a", "sk-ant-org-a", account_a),
                ("acct-b", "sk-ant-org-b", account_b),
            )
        ]
        try:
            yield account_a, account_b
        finally:
            litellm.credential_list = saved


@pytest.mark.parametrize("how", ["acompletion", "completion", "router"])
async def test_named_credentials_of_two_accounts_keep_each_accounts_blocks(
    callback: ReasoningCallback,
    two_named_credentials: tuple[AnthropicUpstream, AnthropicUpstream],
    how: str,
) -> None:
    """`litellm_credential_name` picks the account; LiteLLM resolves it after the deployment
    hook, so the fingerprint once saw no key at all and account A's signed block went to
    account B ("Invalid `signature`"). The call's own credential is fingerprinted now."""
    account_a, account_b = two_named_credentials
    model = f"claude-sonnet-4-5-named-{how}"
    _script_accounts(model, account_a, account_b)
    router = litellm.Router(
        model_list=[
            {
                "model_name": f"claude-{name}",
                "litellm_params": {
                    "model": f"anthropic/{model}",
                    "litellm_credential_name": f"acct-{name}",
                },
            }
            for name in ("a", "b")
        ],
        num_retries=0,
    )

    async def call(account: str, messages: list[Any]) -> Any:
        params: dict[str, Any] = {
            "messages": messages,
            "tools": [TOOL],
            "thinking": THINKING,
            "max_tokens": 2048,
        }
        if how == "router":
            reply = await router.acompletion(model=f"claude-{account}", **params)
        else:
            params.update(model=f"anthropic/{model}", litellm_credential_name=f"acct-{account}")
            if how == "completion":
                import asyncio

                reply = await asyncio.to_thread(litellm.completion, **params)
            else:
                reply = await litellm.acompletion(**params)
        return reply.choices[0].message

    messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    first = await call("a", messages)
    messages += [
        dropping_client(first),
        {"role": "tool", "tool_call_id": "toolu_a", "content": "one line"},
    ]
    assert (await call("b", messages)).content == "one line"
    assert (await call("a", messages)).content == "one line"
    assert SIG_A not in json.dumps(account_b.bodies(model)), "account A's block reached B"
    assert account_b.refusals == []
    assert SIG_A in json.dumps(account_a.bodies(model)[-1]), "account A gets its own block back"
