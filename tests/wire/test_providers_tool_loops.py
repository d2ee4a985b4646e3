"""Tool loops over two turns behind a client that keeps only role, content and tool calls, for
the OpenAI-compatible providers whose rules differ (provider rules §5, §6, §10, §11): through
real LiteLLM to a local server, every request body read back.

* Kimi (`moonshot/`): `reasoning_content` on every earlier tool-call message, current turn too;
  an earlier plain answer carries none.
* DeepSeek V4 with tools (`deepseek/`): the field on every assistant message of every turn (an
  empty one where nothing is known).
* vLLM (`hosted_vllm/`): `reasoning`, current turn only.
* xAI chat (`xai/`): nothing.
* Kimi K2.7 Code (Preserved Thinking always on) and Kimi with `thinking: {"keep": "all"}`: every
  historical assistant message, the earlier turn's plain answer too (against a server refusing
  as Kimi does), for a client that drops reasoning and one that keeps `reasoning_content`.
* Xiaomi MiMo (`xiaomi_mimo/`, `openai/` at its api_base): every tool-call message (MiMo
  documents a 400 but not its text: the wire is asserted, no refusal imitated).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest
from clients import complete, dropping_client
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.refusals import kimi_reasoning_required
from litellm_reasoning.testing.upstream import Reply, Upstream

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    yield register(ReasoningCallback(capture_wait_seconds=10.0))
    litellm.logging_callback_manager._reset_all_callbacks()


def _tool_reply(reasoning: str, call_id: str) -> Reply:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    return Reply(message={"content": "", "reasoning_content": reasoning, "tool_calls": [call]})


def keeping_text_client(message: Any) -> dict[str, Any]:
    """A client that keeps `reasoning_content` beside content and tool calls."""
    out = dropping_client(message)
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        out["reasoning_content"] = reasoning
    return out


CLIENTS = {"drops": dropping_client, "keeps": keeping_text_client}


async def _two_turns(
    how: str,
    provider: str,
    upstream: Upstream,
    stream: bool,
    *,
    name: str | None = None,
    client: str = "drops",
    path: str = "",
    system: str | None = None,
    cut: int = 0,
    **extra: Any,
) -> list[Any]:
    """Turn 1: a tool call, its result, an answer. Turn 2: a tool call and its result. Returns
    the assistant messages of the last request as they reached the wire. `name`: the model's
    name before its unique suffix; `client`: what the client keeps (`CLIENTS`); `extra`: more
    request parameters; `path`: appended to the server's base URL (an endpoint of its own);
    `system`: a system prompt first; `cut`: how many messages after it the last request drops
    from the head of its history (an agent that cut its history)."""
    model = f"{name or provider + '-loop'}-{uuid.uuid4().hex[:8]}"
    upstream.script(
        model,
        _tool_reply("R1 call", f"c1_{model}"),
        Reply(message={"content": "Answer one.", "reasoning_content": "R1 answer"}),
        _tool_reply("R2 call", f"c2_{model}"),
        Reply(message={"content": "Answer two.", "reasoning_content": "R2 answer"}),
    )
    full = f"{provider}/{model}"
    keep = CLIENTS[client]

    async def send(history: list[Any]) -> dict[str, Any]:
        base = upstream.base_url + path
        message = await complete(
            how, full, base, list(history), stream=stream, tools=[TOOL], **extra
        )
        return keep(message)

    head: list[Any] = [{"role": "system", "content": system}] if system else []
    history: list[Any] = [*head, {"role": "user", "content": "Fix a.py."}]
    history.append(await send(history))
    history.append({"role": "tool", "tool_call_id": f"c1_{model}", "content": "x"})
    history.append(await send(history))
    history.append({"role": "user", "content": "Now b.py."})
    history.append(await send(history))
    history.append({"role": "tool", "tool_call_id": f"c2_{model}", "content": "y"})
    await send([*head, *history[len(head) + cut :]])
    bodies = upstream.bodies(model)
    assert len(bodies) == 4
    return [m for m in bodies[-1]["messages"] if m["role"] == "assistant"]


CALLS = ["acompletion", "completion", "router.acompletion", "router.completion"]
streams = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
calls = pytest.mark.parametrize("how", CALLS)


@calls
@streams
async def test_kimi_keeps_every_earlier_tool_call_reasoning(
    how: str, stream: bool, upstream: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(how, "moonshot", upstream, stream)
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", None, "R2 call"]
    assert callback.stats["errors"] == 0


@calls
@streams
async def test_deepseek_with_tools_sends_the_field_on_every_assistant_message(
    how: str, stream: bool, upstream: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(how, "deepseek", upstream, stream)
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", "R1 answer", "R2 call"]


@calls
@streams
async def test_vllm_gets_reasoning_for_the_current_turn_only(
    how: str, stream: bool, upstream: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(how, "hosted_vllm", upstream, stream)
    assert [m.get("reasoning") for m in sent] == [None, None, "R2 call"]
    assert not any("reasoning_content" in m for m in sent)


@calls
async def test_xai_chat_gets_no_reasoning(
    how: str, upstream: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(how, "xai", upstream, False)
    reasoning_keys = {"reasoning_content", "reasoning", "thinking_blocks", "reasoning_details"}
    assert not any(set(m) & reasoning_keys for m in sent)


@pytest.mark.parametrize("keeps", [True, False], ids=["keeps", "drops"])
async def test_deepseek_through_an_openai_compatible_route_keeps_every_turn(
    upstream: Upstream, keeps: bool
) -> None:
    """`openai/deepseek-reasoner` at an api_base (how agent frameworks reach DeepSeek): with
    tools, every turn's reasoning_content goes back (DeepSeek's rule), never stripped from what
    a client kept, restored for one that dropped it."""
    callback = register(ReasoningCallback())
    model = f"deepseek-reasoner-route-{uuid.uuid4().hex[:6]}"
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    call = {"id": "call_r1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    upstream.script(
        model,
        Reply(message={"content": "", "reasoning_content": "turn 1 plan", "tool_calls": [call]}),
        Reply(message={"content": "Done.", "reasoning_content": "turn 1 answer"}),
        Reply(message={"content": "Again.", "reasoning_content": "turn 2"}),
    )
    common = {
        "model": f"openai/{model}",
        "api_base": upstream.base_url,
        "api_key": "k",
        "tools": [tool],
    }

    def kept(message: dict[str, Any], reasoning: str) -> dict[str, Any]:
        return {**message, "reasoning_content": reasoning} if keeps else message

    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    try:
        await litellm.acompletion(messages=list(history), **common)
        history += [
            kept({"role": "assistant", "content": "", "tool_calls": [call]}, "turn 1 plan"),
            {"role": "tool", "tool_call_id": "call_r1", "content": "ok"},
        ]
        await litellm.acompletion(messages=list(history), **common)
        history += [
            kept({"role": "assistant", "content": "Done."}, "turn 1 answer"),
            {"role": "user", "content": "once more"},
        ]
        await litellm.acompletion(messages=list(history), **common)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    wire = upstream.bodies(model)[-1]["messages"]
    sent = [m.get("reasoning_content") for m in wire if m["role"] == "assistant"]
    assert sent == ["turn 1 plan", "turn 1 answer"]
    assert callback.stats["stripped"] == 0


@pytest.fixture(scope="module")
def kimi() -> Iterator[Upstream]:
    """Refuses a tool-call message without its `reasoning_content`, with Kimi's own text."""
    with Upstream(refuse=[kimi_reasoning_required]) as up:
        yield up


two_paths = pytest.mark.parametrize("how", ["acompletion", "router.completion"])
clients = pytest.mark.parametrize("client", sorted(CLIENTS))


@two_paths
@clients
async def test_kimi_k2_7_code_gets_every_turns_reasoning(
    how: str, client: str, kimi: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(how, "moonshot", kimi, False, name="kimi-k2.7-code", client=client)
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", "R1 answer", "R2 call"]
    assert callback.stats["stripped"] == 0
    assert callback.stats["errors"] == 0


@two_paths
@clients
async def test_kimi_with_preserved_thinking_gets_every_turns_reasoning(
    how: str, client: str, kimi: Upstream, callback: ReasoningCallback
) -> None:
    sent = await _two_turns(
        how,
        "moonshot",
        kimi,
        False,
        name="kimi-k2.6",
        client=client,
        extra_body={"thinking": {"keep": "all"}},
    )
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", "R1 answer", "R2 call"]


@two_paths
@clients
async def test_kimi_without_preserved_thinking_keeps_its_tool_call_rule(
    how: str, client: str, kimi: Upstream, callback: ReasoningCallback
) -> None:
    """The same K2.6 loop without `keep`: the tool-call messages only (a kept plain answer of
    the earlier turn is stripped, as before)."""
    sent = await _two_turns(how, "moonshot", kimi, False, name="kimi-k2.6", client=client)
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", None, "R2 call"]


@two_paths
@clients
@pytest.mark.parametrize("provider", ["xiaomi_mimo", "openai"])
async def test_mimo_gets_every_tool_call_messages_reasoning(
    how: str, client: str, provider: str, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """LiteLLM's `xiaomi_mimo/` provider (which takes `tools` only for models its map knows,
    or as `allowed_openai_params`), and the OpenAI-compatible route at MiMo's api_base."""
    sent = await _two_turns(
        how,
        provider,
        upstream,
        False,
        name="mimo-v2.5-pro",
        client=client,
        allowed_openai_params=["tools"],
    )
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", None, "R2 call"]
    assert callback.stats["errors"] == 0


@two_paths
async def test_a_history_cut_at_its_head_keeps_its_tool_call_reasoning(
    how: str, kimi: Upstream, callback: ReasoningCallback
) -> None:
    """A coding agent drops the head of a long history (the first turn) and goes on: the
    messages it kept are the same tool calls after the same user message, so Kimi's tool-call
    message gets its reasoning back and Kimi refuses nothing (a tool-call message's key is its
    calls, the user message it follows and the system prompt, not the whole prefix)."""
    sent = await _two_turns(
        how, "moonshot", kimi, False, name="kimi-k2.6-head", system="You are a coding agent.", cut=4
    )
    assert [m.get("reasoning_content") for m in sent] == ["R2 call"]


@two_paths
@clients
async def test_glm_on_the_coding_plan_endpoint_gets_every_turns_reasoning(
    how: str, client: str, upstream: Upstream, callback: ReasoningCallback
) -> None:
    """Z.ai's Coding Plan endpoint keeps earlier thinking by default (its standard endpoint
    does not): every historical message's reasoning_content goes back, complete."""
    sent = await _two_turns(
        how, "zai", upstream, False, name="glm-5.3", client=client, path="/api/coding/paas/v4"
    )
    assert [m.get("reasoning_content") for m in sent] == ["R1 call", "R1 answer", "R2 call"]
    standard = await _two_turns(
        how, "zai", upstream, False, name="glm-5.3", client=client, path="/api/paas/v4"
    )
    assert [m.get("reasoning_content") for m in standard] == [None, None, "R2 call"]


def _counter_id_reply(reasoning: str) -> Reply:
    """Kimi's tool-call ids count per reply (`functions.<name>:<idx>`): the same in every
    conversation that makes the same call first."""
    return _tool_reply(reasoning, "functions.read_file:0")


STORES = ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)]


@two_paths
@pytest.mark.parametrize("store", STORES)
async def test_counter_ids_never_give_one_conversation_anothers_reasoning(
    how: str, store: str, kimi: Upstream, upstream: Upstream, tmp_path: Path
) -> None:
    """Two conversations of one tenant with different first turns reach the same step (the same
    user message, the same call with Kimi's counter id): the same tool-call key. Each gets its
    own reasoning back and Kimi refuses neither; the history cut at its head that could be
    either conversation's gets none, counted. On every store kind (each places the second
    conversation's record itself)."""
    urls = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'store.db'}",
        "redis": f"redis://127.0.0.1:6379/0?prefix=lr-shared-{uuid.uuid4().hex[:8]}:",
    }
    callback = register(ReasoningCallback(store=urls[store], capture_wait_seconds=10.0))
    try:
        await _two_conversations_one_key(how, kimi, upstream, callback)
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
        callback.store.close()


async def _two_conversations_one_key(
    how: str, kimi: Upstream, upstream: Upstream, callback: ReasoningCallback
) -> None:
    model = f"kimi-k2.6-shared-{uuid.uuid4().hex[:8]}"
    kimi.script(
        model,
        _counter_id_reply("A1 call"),
        Reply(message={"content": "A one.", "reasoning_content": "A1 answer"}),
        _counter_id_reply("B1 call"),
        Reply(message={"content": "B one.", "reasoning_content": "B1 answer"}),
        _counter_id_reply("A2 call"),
        _counter_id_reply("B2 call"),
        Reply(message={"content": "A two.", "reasoning_content": "A2 answer"}),
        Reply(message={"content": "B two.", "reasoning_content": "B2 answer"}),
    )
    system = {"role": "system", "content": "You are a coding agent."}

    async def send(server: Upstream, history: list[Any]) -> None:
        reply = await complete(
            how, f"moonshot/{model}", server.base_url, list(history), stream=False, tools=[TOOL]
        )
        history.append(dropping_client(reply))

    a: list[Any] = [system, {"role": "user", "content": "Fix a.py."}]
    b: list[Any] = [system, {"role": "user", "content": "Fix b.py."}]
    for history in (a, b):
        await send(kimi, history)
        history.append({"role": "tool", "tool_call_id": "functions.read_file:0", "content": "x"})
        await send(kimi, history)
        history.append({"role": "user", "content": "Go on."})
    await send(kimi, a)
    await send(kimi, b)  # the same message after the same user message: the same key
    for history in (a, b):
        history.append({"role": "tool", "tool_call_id": "functions.read_file:0", "content": "y"})
        await send(kimi, history)
    bodies = kimi.bodies(model)
    assert len(bodies) == 8
    sent = [
        [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
        for body in bodies[-2:]
    ]
    assert sent == [["A1 call", None, "A2 call"], ["B1 call", None, "B2 call"]]
    assert callback.stats["shared_key_own"] == 1  # B read its copy; A is the key's first writer
    assert callback.stats["shared_key_ambiguous"] == 0

    # A history cut at its head, after the step both conversations share: either one's.
    upstream.script(model, Reply(message={"content": "Done.", "reasoning_content": "cut"}))
    cut = [system, *a[5:8]]
    assert [m["role"] for m in cut] == ["system", "user", "assistant", "tool"]
    await send(upstream, cut)
    wire = upstream.bodies(model)[-1]["messages"]
    assert [m.get("reasoning_content") for m in wire if m["role"] == "assistant"] == [None]
    assert callback.stats["shared_key_ambiguous"] == 1
    assert callback.stats["errors"] == 0
