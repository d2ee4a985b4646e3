"""One tenant's ordinary traffic never costs another tenant its calls, through the real proxy.

The held-out attack: an attacker key's ordinary requests filled the store's global cap, the
victim's tool loop record was the least recently used and went first, and Kimi refused the
victim's next step ("reasoning_content is missing in assistant tool call message"). The caps
are now shared fairly: the tenant holding the most loses its own oldest records first. Here
the tenants are two end users (`user=`, a scope part the proxy sets, like the virtual key) of a
proxy whose store holds 20 records; the attacker sends 60 requests between the victim's steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from proxy_utils import (
    TOOLS,
    Proxy,
    chat,
    openai_compatible_deployment,
    proxy_config,
    run_proxy,
    tool_call,
)

from litellm_reasoning.testing.refusals import kimi_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

pytestmark = pytest.mark.proxy

GROUP = "quota-kimi"
FLOOD = 60
"""The attacker's requests: three times what the store holds."""


@pytest.fixture(scope="module")
def kimi() -> Iterator[Upstream]:
    with Upstream(refuse=[kimi_reasoning_required]) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(kimi: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """The proxy's default store kind, SQLite, holding 20 records (`memory://` shares its caps
    the same way: the store contract test runs every backend)."""
    workdir: Path = tmp_path_factory.mktemp("quota")
    store = f"sqlite:///{workdir / 'reasoning.db'}?max_records=20"
    # Kimi K2 Thinking behind an OpenAI-compatible route: the model table's Kimi row
    # (`tool_calls_all_turns`) matches the upstream model's name.
    deployment = openai_compatible_deployment(GROUP, "kimi-k2-thinking", kimi.base_url)
    config = proxy_config([deployment])
    with run_proxy(config, workdir, env={"LITELLM_REASONING_STORE": store}) as running:
        yield running


def test_a_flooding_tenant_evicts_its_own_records_not_the_victims(
    proxy: Proxy, kimi: Upstream
) -> None:
    model = "kimi-k2-thinking"
    call = tool_call("call_victim_1", "Paris")
    kimi.script(
        model,
        Reply(message={"reasoning_content": "Look up Paris.", "content": "", "tool_calls": [call]}),
    )
    client = openai.OpenAI(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = chat(client, GROUP, history, stream=False, tools=TOOLS, user="victim")
    history += [first.as_history(), {"role": "tool", "tool_call_id": call["id"], "content": "9 C"}]

    for i in range(FLOOD):  # ordinary requests, each leaving a record of the attacker's
        kimi.script(model, Reply(message={"reasoning_content": f"Noise {i}.", "content": "ok"}))
        question = [{"role": "user", "content": f"Question {i}?"}]
        chat(client, GROUP, question, stream=False, user="attacker")

    kimi.script(model, Reply(message={"reasoning_content": "Answer.", "content": "9 C."}))
    done = chat(client, GROUP, history, stream=False, tools=TOOLS, user="victim")
    assert done.content == "9 C."
    assert kimi.bodies(model)[-1]["messages"][1]["reasoning_content"] == "Look up Paris."
    _assert_attacker_capped(proxy.config_path.parent / "reasoning.db")


def _assert_attacker_capped(database: Path) -> None:
    """The file holds at most its cap, and the attacker holds the most of it."""
    from litellm_reasoning.stores import open_backend

    store = open_backend(f"sqlite:///{database}")
    try:
        tenants = {t.scope.rsplit("user=", 1)[-1]: t.records for t in store.tenants()}
    finally:
        store.close()
    assert sum(tenants.values()) <= 20
    assert tenants.get("victim", 0) >= 1
    assert tenants["attacker"] == max(tenants.values())
