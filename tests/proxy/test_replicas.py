"""Two processes, one store: proxy replicas sharing Redis, and a restart on one SQLite file.

Each replica is a separate Python process running real LiteLLM with `ReasoningCallback(store=…)`
against the local upstream started here. A captures a reply; B (another process) sends the next
request with the reasoning dropped, first under another tenant (nothing may be restored), then
as A's tenant (the reasoning must be restored on the wire).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from forkserver import run_python

from litellm_reasoning.testing.upstream import Reply, Upstream

pytest_plugins = ["store_fixtures"]

_REPLICA = """
import asyncio, json, os, sys
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm
from litellm_reasoning import ReasoningCallback

spec = json.loads(sys.argv[1])
callback = ReasoningCallback(store=spec["store"])
litellm.callbacks = [callback]

async def main():
    out = []
    for namespace in spec["namespaces"]:  # one request per tenant, in order
        before = callback.stats.copy()
        reply = await litellm.acompletion(
            model="openai/" + spec["model"], api_base=spec["base_url"], api_key="k",
            messages=spec["messages"], metadata={"reasoning_namespace": namespace},
        )
        stats = {k: v - before[k] for k, v in callback.stats.items()}
        out.append({"message": reply.choices[0].message.model_dump(), "stats": stats})
    print(json.dumps(out))
    callback.store.close()

asyncio.run(main())
"""


def replica(
    upstream: Upstream, store: str, model: str, messages: list[Any], *namespaces: str
) -> list[Any]:
    """Runs one process that sends `messages` once per tenant namespace, in order."""
    spec = {
        "store": store,
        "namespaces": namespaces,
        "model": model,
        "base_url": upstream.base_url,
        "messages": messages,
    }
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = run_python(_REPLICA, json.dumps(spec), env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(params=["redis", "redis-cluster", "redis-sentinel", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # A generous timeout: these tests are about sharing records between processes, and a
    # loaded CI machine can take longer than the default 0.2 s for a fresh process's first write.
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url")) + "&timeout=5"
    if request.param != "sqlite":
        server = request.getfixturevalue(request.param.replace("-", "_"))
        return f"{server.url}?prefix=lr:replicas:{uuid.uuid4().hex[:8]}:&timeout=5"
    return f"sqlite:///{tmp_path / 'proxy' / 'reasoning.db'}?timeout=5"


def test_next_request_restored_by_another_process(upstream: Upstream, store_url: str) -> None:
    model = f"replica-{uuid.uuid4().hex[:8]}"
    call_id = "call_" + uuid.uuid4().hex[:12]
    tool_call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    upstream.script(
        model,
        Reply(
            message={
                "content": "",
                "reasoning_content": "Read a.py first.",
                "tool_calls": [tool_call],
            }
        ),
        Reply(message={"content": "Fixed."}),
        Reply(message={"content": "Fixed too."}),
    )
    first = [{"role": "user", "content": "Fix a.py"}]
    [a] = replica(upstream, store_url, model, first, "team-a")
    assert a["message"]["reasoning_content"] == "Read a.py first."
    assert a["stats"]["captured"] == 1

    # The client drops the reasoning; B (a new process: another replica, or after a restart).
    follow = [
        *first,
        {"role": "assistant", "content": a["message"]["content"], "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": call_id, "content": "x = 1"},
    ]
    # In process B: first another tenant sending the very same conversation (it gets nothing of
    # team-a's), then team-a itself (restored).
    c, b = replica(upstream, store_url, model, follow, "team-b", "team-a")
    assert c["stats"].get("restored", 0) == 0
    wire = upstream.bodies(model)[1]["messages"]
    assert "reasoning_content" not in wire[1]

    assert b["message"]["content"] == "Fixed too."
    assert b["stats"]["restored"] == 1
    wire = upstream.bodies(model)[2]["messages"]
    assert wire[1]["reasoning_content"] == "Read a.py first."
    assert wire[1]["tool_calls"][0]["id"] == call_id
