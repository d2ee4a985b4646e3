"""`litellm-reasoning explain`: a conversation's assistant messages, what is stored for each and
what the callback would send, read from the store a real callback filled through LiteLLM."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import litellm
from conftest import register
from forkserver import run_python

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

MODEL = "deepseek-v4-pro"
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
RUN_AS_MAIN = (
    "import runpy; runpy.run_module('litellm_reasoning', run_name='__main__', alter_sys=True)"
)
"""What `python -m litellm_reasoning` runs."""
CALL = {"id": "call_00_explain", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _explain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m litellm_reasoning explain ARGS` (forked, see `forkserver.py`)."""
    return run_python(
        RUN_AS_MAIN,
        "explain",
        *args,
        input=stdin,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


async def test_explain_shows_what_is_stored_and_what_would_be_sent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'explain.db'}"
    callback = register(ReasoningCallback(store=url, namespace="team-a"))
    try:
        with Upstream() as deepseek:
            deepseek.script(
                MODEL,
                Reply(
                    message={"reasoning_content": "Call f.", "content": "", "tool_calls": [CALL]}
                ),
            )
            await litellm.acompletion(
                model=f"deepseek/{MODEL}",
                api_base=deepseek.base_url,
                api_key="k",
                tools=TOOLS,
                messages=[{"role": "user", "content": "Use f."}],
            )
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        callback.store.close()
    request: dict[str, Any] = {
        "model": f"deepseek/{MODEL}",
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": "Use f."},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},  # reasoning dropped
            {"role": "tool", "tool_call_id": CALL["id"], "content": "42"},
            {"role": "assistant", "content": "It is 42."},  # never had a record
            {"role": "user", "content": "Thanks."},
        ],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), "utf-8")

    done = _explain(str(path), "--store", url, "--namespace", "team-a")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "dialect openai_chat_required, policy all_turns" in lines[0]
    rows = {line.split()[0]: line.split()[1:4] for line in lines[3:8]}
    assert rows["1"] == ["assistant", "yes", "restored"]
    assert rows["3"] == ["assistant", "no", "missing"]
    assert rows["0"][:2] == ["user", "-"]

    as_json = json.loads(
        _explain(
            "-", "--store", url, "--namespace", "team-a", "--json", stdin=json.dumps(request)
        ).stdout
    )
    assert as_json["counts"]["restored"] == 1 and as_json["counts"]["missing"] == 1
    # another tenant sees nothing of team-a's
    other = json.loads(
        _explain(str(path), "--store", url, "--namespace", "team-b", "--json").stdout
    )
    assert other["counts"]["restored"] == 0 and not any(r["stored"] for r in other["messages"])


def test_explain_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    missing = _explain(str(tmp_path / "nope.json"), "--model", "deepseek/x")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([{"role": "user", "content": "hi"}]), "utf-8")
    no_model = _explain(str(bare), "--store", "memory://")
    assert no_model.returncode == 2 and "no model" in no_model.stderr
