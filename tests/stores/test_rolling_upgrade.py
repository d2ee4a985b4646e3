"""A rolling upgrade: an earlier release (0.1.0, 0.2.0, 0.3.0, and 0.4.0, the previous one:
their own code checked out from git) and this release share one SQLite file or one Redis, and each
restores what the other captured (0.1.0 and 0.2.0: this release restores what they captured;
the previous release also restores what this one captures).

Each side runs in its own process through real LiteLLM against its own local upstream: the
writer captures a tool loop (a tool-call message, whose key changed in this release, and a text
answer, whose key did not); the reader then continues the conversation from a client that
dropped every reasoning field and reports what reached its wire.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import uuid
from io import BytesIO
from pathlib import Path

import pytest
from forkserver import run_python
from paths import REPO

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

ROOT = REPO
RELEASES = {"0.1.0": "e62144a", "0.2.0": "8d2aebf", "0.3.0": "ad69d5b", "0.4.0": "e8f3255"}
"""Earlier releases and their commits on main (0.2.0: the last commit before 0.3.0's store
changes: threads for Redis, required reads, the decode cache; 0.4.0 writes Redis records
without the size kept beside them since)."""

SCRIPT = r"""
import asyncio, json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

url, phase, tag = sys.argv[1], sys.argv[2], sys.argv[3]
call = {"id": "call_" + tag, "type": "function", "function": {"name": "f", "arguments": "{}"}}
history = [
    {"role": "system", "content": "system prompt " + tag},
    {"role": "user", "content": "task " + tag},
    {"role": "assistant", "content": "", "tool_calls": [call]},
    {"role": "tool", "tool_call_id": call["id"], "content": "ok"},
    {"role": "assistant", "content": "answer " + tag},
    {"role": "user", "content": "a note", "turn": False},
]

async def main():
    callback = ReasoningCallback(store=url, capture_wait_seconds=0.5)
    litellm.callbacks = [callback]
    with Upstream() as upstream:
        common = {"model": "openai/m-" + tag, "api_base": upstream.base_url, "api_key": "k"}
        if phase == "write":
            upstream.script(
                "m-" + tag,
                Reply(message={"content": "", "reasoning_content": "R1 " + tag,
                               "tool_calls": [call]}),
                Reply(message={"content": "answer " + tag, "reasoning_content": "R2 " + tag}),
            )
            await litellm.acompletion(messages=history[:2], **common)
            await litellm.acompletion(messages=history[:4], **common)
            await asyncio.sleep(0.2)
            sent = None
        else:
            if phase == "read-bridge":
                # the reply's empty content as LiteLLM's Responses bridge sends it back
                history[2] = {**history[2], "content": [{"type": "text", "text": ""}]}
            upstream.script("m-" + tag, Reply(message={"content": "done"}))
            await litellm.acompletion(messages=history, **common)
            body = upstream.bodies("m-" + tag)[-1]
            sent = [m.get("reasoning_content") for m in body["messages"]]
    callback.store.close()
    print(json.dumps({"sent": sent, "captured": callback.stats["captured"]}))

asyncio.run(main())
"""


@pytest.fixture(scope="module", params=sorted(RELEASES))
def previous_release(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """An earlier release and its package, from this repository's history."""
    release = request.param
    return release, _release_tree(release, tmp_path_factory)


def _release_tree(release: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`release`'s package, from this repository's history."""
    out = tmp_path_factory.mktemp(f"release-{release}")
    done = subprocess.run(
        ["git", "archive", "--format=tar", RELEASES[release], "litellm_reasoning"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, (
        f"release {release} ({RELEASES[release]}) is not in this clone's history: {done.stderr!r}"
    )
    with tarfile.open(fileobj=BytesIO(done.stdout)) as archive:
        archive.extractall(out, filter="data")
    return out


def _run(code_root: Path, url: str, phase: str, tag: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_REASONING_")}
    env["PYTHONPATH"] = str(code_root)
    done = run_python(SCRIPT, url, phase, tag, env=env, cwd=code_root, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _which(code_root: Path) -> str:
    probe = "import litellm_reasoning, sys; print(litellm_reasoning.__file__)"
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=code_root, capture_output=True, text=True
    )
    return out.stdout.strip()


def _stores(tmp_path: Path) -> list[str]:
    prefix = f"lr-upgrade-{uuid.uuid4().hex[:8]}:"
    return [f"sqlite:///{tmp_path / 'shared.db'}", f"redis://127.0.0.1:6379/0?prefix={prefix}"]


@pytest.mark.redis
@pytest.mark.parametrize("direction", ["old-writes-new-reads", "new-writes-old-reads"])
def test_old_and_new_releases_restore_each_others_records(
    direction: str, previous_release: tuple[str, Path], tmp_path: Path
) -> None:
    release, old = previous_release
    new = ROOT
    assert _which(old).startswith(str(old)) and _which(new).startswith(str(new))
    writer, reader = (old, new) if direction == "old-writes-new-reads" else (new, old)
    if direction == "new-writes-old-reads" and release == "0.1.0":
        # The copies this release writes for older replicas are under 0.2.0/0.3.0's tool-call
        # key: 0.1.0 (two releases back) finds the text answer only.
        expected = [None, None, None, None, "R2", None]
    else:
        expected = [None, None, "R1", None, "R2", None]
    for url in _stores(tmp_path):
        tag = uuid.uuid4().hex[:8]
        wrote = _run(writer, url, "write", tag)
        assert wrote["captured"] == 2, (url, wrote)
        read = _run(reader, url, "read", tag)
        # system, user, tool-call message (R1), tool result, text answer (R2), the delivery
        assert read["sent"] == [x and f"{x} {tag}" for x in expected], (url, read)


@pytest.mark.redis
def test_this_release_finds_an_earlier_releases_record_under_the_bridges_shape(
    previous_release: tuple[str, Path], tmp_path: Path
) -> None:
    """0.3.0 gives an empty text part the identity of empty content (the Responses bridge's
    shape of a reply's ""): a tool-call record an earlier release captured is found under it.
    (The earlier release itself still misses it: that was the bug.)"""
    for url in _stores(tmp_path):
        tag = uuid.uuid4().hex[:8]
        wrote = _run(previous_release[1], url, "write", tag)
        assert wrote["captured"] == 2, (url, wrote)
        read = _run(ROOT, url, "read-bridge", tag)
        assert read["sent"] == [None, None, f"R1 {tag}", None, f"R2 {tag}", None], (url, read)


MESSAGES_SCRIPT = r"""
import asyncio, json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from litellm_reasoning import ReasoningCallback

url, phase, tag, base = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
question = {"role": "user", "content": "read a " + tag}
tool = {"name": "read_file", "input_schema": {"type": "object"}}
use = {"type": "tool_use", "id": "toolu_read_0", "name": "read_file", "input": {}}

async def main():
    callback = ReasoningCallback(store=url, capture_wait_seconds=0.5)
    litellm.callbacks = [callback]
    messages = [question]
    if phase == "read":
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "x"}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    await litellm.anthropic.messages.acreate(
        model="anthropic/claude-sonnet-4-5-" + tag, messages=messages, api_base=base,
        api_key="k", max_tokens=2048, tools=[tool], system="system prompt " + tag,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    await asyncio.sleep(0.2)
    callback.store.close()
    print(json.dumps({"captured": callback.stats["captured"]}))

asyncio.run(main())
"""


@pytest.mark.redis
@pytest.mark.parametrize("release", ["0.2.0", "0.3.0"])  # 0.1.0 had no /v1/messages route
@pytest.mark.parametrize("direction", ["old-writes-new-reads", "new-writes-old-reads"])
def test_anthropic_format_records_cross_the_upgrade(
    direction: str, release: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """`/v1/messages` (`litellm.anthropic.messages.acreate`): a tool-use message's key changed in
    this release (the system prompt and its place are key material); the previous release and
    this one restore each other's thinking blocks (0.2.0 keyed them as 0.3.0 did)."""
    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, AnthropicUpstream

    old = _release_tree(release, tmp_path_factory)
    writer, reader = (old, ROOT) if direction == "old-writes-new-reads" else (ROOT, old)
    for url in _stores(tmp_path):
        tag = uuid.uuid4().hex[:8]
        model = "claude-sonnet-4-5-" + tag
        thinking = {"type": "thinking", "thinking": "R1 " + tag, "signature": "sig-" + tag}
        use = {"type": "tool_use", "id": "toolu_read_0", "name": "read_file", "input": {}}
        with AnthropicUpstream(strict=True) as claude:
            claude.script(model, AnthropicReply([thinking, use]))
            claude.always(model, AnthropicReply([{"type": "text", "text": "done"}]))
            env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_REASONING_")}
            for code_root, phase in ((writer, "write"), (reader, "read")):
                done = run_python(
                    MESSAGES_SCRIPT,
                    url,
                    phase,
                    tag,
                    claude.base_url,
                    env={**env, "PYTHONPATH": str(code_root)},
                    cwd=code_root,
                    timeout=300,
                )
                assert done.returncode == 0, done.stderr[-3000:]
            wire = claude.bodies(model)[-1]["messages"]
            refusals = list(claude.refusals)
        assert refusals == [], (url, refusals)
        assert wire[1]["content"] == [thinking, use], (url, wire[1])
