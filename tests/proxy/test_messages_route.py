"""The proxy's Anthropic-format `/v1/messages` (Claude Code, the Anthropic SDKs), with the
official `anthropic` client: the callback never floods the proxy log. Its streams reach the
proxy's iterator hook as raw SSE bytes, which release 0.1.0 handed to LiteLLM's chunk builder
(an ERROR line and a traceback for every streamed request)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from litellm_reasoning.testing.anthropic_upstream import (
    AnthropicReply,
    AnthropicUpstream,
    DeepSeekAnthropicUpstream,
)
from litellm_reasoning.testing.upstream import Reply, Upstream

pytestmark = pytest.mark.proxy

THINKING = {"type": "enabled", "budget_tokens": 1024}
GROUPS = {
    "claude": "claude-sonnet-4-5",
    "claude-loop": "claude-sonnet-4-5-loop",
    "claude-loop-stream": "claude-sonnet-4-5-loop-stream",
    "claude-current": "claude-sonnet-4-5-current",
    "claude-code": "claude-opus-4-6-code",
    "claude-code-stream": "claude-opus-4-6-code-stream",
}
"""Model group -> the upstream model (one script each). `claude-current*`: policy current_turn."""
TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsAAAA+/="


@pytest.fixture(scope="module")
def claude() -> Iterator[AnthropicUpstream]:
    with AnthropicUpstream(strict=True) as up:
        yield up


@pytest.fixture(scope="module")
def deepseek() -> Iterator[DeepSeekAnthropicUpstream]:
    with DeepSeekAnthropicUpstream() as up:
        yield up


@pytest.fixture(scope="module")
def chat_server() -> Iterator[Upstream]:
    with Upstream() as up:
        yield up


@pytest.fixture(scope="module")
def proxy(
    claude: AnthropicUpstream,
    deepseek: DeepSeekAnthropicUpstream,
    chat_server: Upstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    from proxy_utils import proxy_config, run_proxy

    adapter = {
        "model_name": "qwen-adapter",
        "litellm_params": {
            "model": "hosted_vllm/qwen3-32b",
            "api_base": chat_server.base_url,
            "api_key": "k",
        },
    }

    native = [
        {
            "model_name": f"deepseek-{how}",
            "litellm_params": {
                "model": f"deepseek/deepseek-v4-pro-{how}",
                "api_base": deepseek.base_url,
                "api_key": "k",
            },
        }
        for how in ("create", "stream")
    ]
    config = proxy_config(
        [
            {
                "model_name": group,
                "litellm_params": {
                    "model": f"anthropic/{model}",
                    "api_base": claude.base_url,
                    "api_key": "k",
                },
            }
            for group, model in GROUPS.items()
        ]
        + native
        + [adapter]
    )
    workdir = tmp_path_factory.mktemp("messages")
    env = {
        "LITELLM_REASONING_STORE": f"sqlite:///{workdir / 'reasoning.db'}",
        "LITELLM_REASONING_POLICIES": json.dumps({"claude-current*": "current_turn"}),
    }
    with run_proxy(config, workdir, env=env) as running:
        running.store_url = env["LITELLM_REASONING_STORE"]  # type: ignore[attr-defined]
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


def _blocks(message: Any) -> list[dict[str, Any]]:
    return [b.model_dump(exclude_none=True) for b in message.content]


def _dropping(message: Any) -> dict[str, Any]:
    """What a client that keeps only text and tool uses sends back of a reply."""
    return {
        "role": "assistant",
        "content": [b for b in _blocks(message) if b["type"] in ("text", "tool_use")],
    }


def _sender(proxy: Any, group: str, stream: bool, **extra: Any) -> Any:
    """`send(messages)`: one `/v1/messages` request with the official client, with the read
    tool (`messages.stream` read to its final message, or `messages.create`)."""
    import anthropic

    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    params = {"model": group, "max_tokens": 2048, "tools": [TOOL], **extra}

    def send(messages: list[Any]) -> Any:
        if stream:
            with client.messages.stream(messages=messages, **params) as events:
                return events.get_final_message()
        return client.messages.create(messages=messages, **params)

    return send


def _keeping(message: Any) -> dict[str, Any]:
    """What a client that keeps the whole reply sends back of it."""
    return {"role": "assistant", "content": _blocks(message)}


def _result(call_id: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "one line"}, *extra],
    }


def _interleaved(tag: str) -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": "Read a.py first.", "signature": f"{SIGNATURE}{tag}a"},
        {"type": "text", "text": "Reading a.py."},
        {"type": "tool_use", "id": f"toolu_{tag}_1", "name": "read_file", "input": {"path": "a"}},
    ]


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_client_that_drops_thinking_completes_its_tool_loop(
    claude: AnthropicUpstream, proxy: Any, stream: bool, keeps: bool
) -> None:
    """`messages.create` / `messages.stream` through the proxy to a strict Claude: the client
    sends tool uses back without their thinking blocks; the callback puts them back where they
    stood, Claude accepts the loop; a reminder beside the tool result still continues the
    turn; the client that keeps its blocks sends exactly what it got."""

    group = "claude-loop-stream" if stream else "claude-loop"
    model, tag = GROUPS[group], ("s" if stream else "c") + ("k" if keeps else "")
    back = _keeping if keeps else _dropping
    second = [
        {"type": "thinking", "thinking": "Now b.py.", "signature": f"{SIGNATURE}{tag}b"},
        {"type": "tool_use", "id": f"toolu_{tag}_2", "name": "read_file", "input": {"path": "b"}},
    ]
    claude.script(model, AnthropicReply(_interleaved(tag)), AnthropicReply(second))
    claude.always(model, AnthropicReply([{"type": "text", "text": "Both hold one line."}]))
    send = _sender(proxy, group, stream, thinking=THINKING)

    messages: list[Any] = [{"role": "user", "content": "What is in a.py and b.py?"}]
    first = send(messages)
    assert _blocks(first) == _interleaved(tag)
    reminder = {"type": "text", "text": "<system-reminder>keep going</system-reminder>"}
    messages += [back(first), _result(f"toolu_{tag}_1", reminder)]
    reply = send(messages)
    messages += [back(reply), _result(f"toolu_{tag}_2")]
    final = send(messages)
    assert final.content[0].text == "Both hold one line."
    assert claude.refusals == []
    wire = claude.bodies(model)[-1]["messages"]
    assert wire[1]["content"] == _interleaved(tag), "blocks not back where they stood"
    assert wire[3]["content"] == second


def test_a_delivery_keeps_the_turn_and_a_new_turn_starts_one(
    claude: AnthropicUpstream, proxy: Any
) -> None:
    """Policy current_turn: a user message with `"turn": false` (a delivery at a step boundary)
    does not start a turn, so the tool loop before it keeps its blocks; a real new question
    does, and the earlier turn's blocks stay out. `turn` never reaches Claude."""
    import anthropic

    group, tag = "claude-current", "d"
    model = GROUPS[group]
    claude.script(
        model,
        AnthropicReply(_interleaved(tag)),
        AnthropicReply([{"type": "text", "text": "a.py holds one line."}]),
    )
    claude.always(model, AnthropicReply([{"type": "text", "text": "b.py too."}]))
    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    params: dict[str, Any] = {"model": group, "max_tokens": 2048, "thinking": THINKING}
    messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    first = client.messages.create(messages=messages, tools=[TOOL], **params)
    delivery = {"role": "user", "content": "(build finished)", "turn": False}
    messages += [_dropping(first), _result(f"toolu_{tag}_1"), delivery]
    second = client.messages.create(messages=messages, tools=[TOOL], **params)
    messages += [_dropping(second), {"role": "user", "content": "And b.py?"}]
    client.messages.create(messages=messages, tools=[TOOL], **params)
    during, after = claude.bodies(model)[1:]
    assert during["messages"][1]["content"] == _interleaved(tag)
    assert after["messages"][1]["content"] == _dropping(first)["content"]
    for body in (during, after):
        assert not any("turn" in m for m in body["messages"])
    assert claude.refusals == []


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_native_deepseek_deployment_gets_its_own_blocks_back(
    deepseek: DeepSeekAnthropicUpstream, proxy: Any, stream: bool, keeps: bool
) -> None:
    """DeepSeek's Anthropic-compatible API behind `/v1/messages` (LiteLLM forwards the body
    natively): a client that drops DeepSeek's thinking blocks completes its tool loop, with a
    delivery in it, and goes on after a new turn; the blocks go back as DeepSeek issued them
    (a keeping client sends what it got); the proxy log stays clean."""

    how = ("stream" if stream else "create") + ("-keeps" if keeps else "")
    back = _keeping if keeps else _dropping
    route = "stream" if stream else "create"
    group, model = f"deepseek-{route}", f"deepseek-v4-pro-{route}"
    first = [
        {"type": "thinking", "thinking": "Read a.py first."},
        {"type": "tool_use", "id": f"call_{how}_1", "name": "read_file", "input": {"path": "a"}},
    ]
    deepseek.script(
        model,
        AnthropicReply(first),
        AnthropicReply([{"type": "text", "text": "a.py holds one line."}]),
    )
    deepseek.always(model, AnthropicReply([{"type": "text", "text": "So does b.py."}]))
    send = _sender(proxy, group, stream, thinking=THINKING)

    messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    delivery = {"role": "user", "content": "(build finished)", "turn": False}
    messages += [back(send(messages)), _result(f"call_{how}_1"), delivery]
    messages += [back(send(messages)), {"role": "user", "content": "And b.py?"}]
    final = send(messages)
    assert final.content[0].text == "So does b.py."
    assert deepseek.refusals == []
    wire = deepseek.bodies(model)[-1]["messages"]
    # An earlier turn now: DeepSeek with tools needs it too (a keeping client's own copy: the
    # SDK's streamed message carries an empty `signature`).
    assert wire[1]["content"] == (messages[1]["content"] if keeps else first)
    assert not any("turn" in m for m in wire)
    log = proxy.log_path.read_text(errors="replace")
    assert "Traceback" not in log and not [line for line in log.splitlines() if "ERROR" in line]


@pytest.mark.parametrize("keeps", [False, True], ids=["drops", "keeps"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_an_adapter_deployment_keeps_the_turn_across_a_delivery_and_a_reminder(
    chat_server: Upstream, proxy: Any, stream: bool, keeps: bool
) -> None:
    """`/v1/messages` to a chat-completions model (Qwen on vLLM, current_turn): LiteLLM's
    adapter translates the request and drops `turn`; the callback tells the chat call which of
    its user messages start a turn, so a tool result with a reminder beside it and a delivery
    (`"turn": false`) keep the tool loop's reasoning, and a real new question leaves it out."""

    model = "qwen3-32b"
    tag = ("s" if stream else "c") + ("k" if keeps else "d")
    call = {"id": f"call_q{tag}", "type": "function", "function": {"name": "read_file"}}
    call["function"]["arguments"] = '{"path": "a"}'
    chat_server.script(
        model,
        Reply(
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Read a.",
                "tool_calls": [call],
            }
        ),
        Reply({"role": "assistant", "content": "a holds one line."}),
    )
    chat_server.always(model, Reply({"role": "assistant", "content": "b holds one too."}))
    send = _sender(proxy, "qwen-adapter", stream)

    before = len(chat_server.bodies(model))
    messages: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    first = send(messages)
    assert [b.type for b in first.content][-1] == "tool_use"
    reminder = {"type": "text", "text": "<system-reminder>keep going</system-reminder>"}
    delivery = {"role": "user", "content": "(build finished)", "turn": False}
    messages += [(_keeping if keeps else _dropping)(first), _result(call["id"], reminder)]
    messages.append(delivery)
    send(messages)
    messages += [{"role": "assistant", "content": "a holds one line."}]
    messages += [{"role": "user", "content": "And b.py?"}]
    send(messages)
    during, after = chat_server.bodies(model)[before + 1 :]

    def reasoning(body: dict[str, Any]) -> Any:
        loop = next(m for m in body["messages"] if m.get("tool_calls"))
        return loop.get("reasoning_content") or loop.get("reasoning")

    assert reasoning(during) == "Read a."  # the delivery and the reminder started no turn
    assert not reasoning(after)  # a new question did: current_turn leaves it out
    for body in (during, after):
        assert not any("turn" in m for m in body["messages"])
    log = proxy.log_path.read_text(errors="replace")
    assert "Traceback" not in log and not [line for line in log.splitlines() if "ERROR" in line]


def _claude_code_request() -> dict[str, Any]:
    from paths import REPO

    path = REPO / "tests" / "fixtures" / "claude_code_reordered.json"
    fixture: dict[str, Any] = json.loads(path.read_text())
    return fixture


@pytest.mark.parametrize("alter", [False, True], ids=["exact", "one-block-differs"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_claude_codes_reordered_blocks_go_out_as_claude_issued_them(
    claude: AnthropicUpstream, proxy: Any, stream: bool, alter: bool
) -> None:
    """Claude Code sends an interleaved reply back as `[thinking, text, thinking, tool_use,
    tool_use]` (`tests/fixtures/claude_code_reordered.json`): the exact blocks go out in the
    order Claude issued them, and Claude accepts the request; when one block differs, the
    message goes out as the client sent it (and Claude refuses it, as it would anyway)."""
    import anthropic

    fixture = _claude_code_request()
    reply, request = fixture["reply"], fixture["request"]
    group = "claude-code-stream" if stream else "claude-code"
    model = GROUPS[group]
    claude.script(model, AnthropicReply(reply))
    claude.always(model, AnthropicReply([{"type": "text", "text": "Fixed."}]))
    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.master_key, max_retries=0)
    params = {k: v for k, v in request.items() if k != "messages"}

    def send(messages: list[Any]) -> Any:
        if stream:
            with client.messages.stream(model=group, messages=messages, **params) as events:
                return events.get_final_message()
        # an explicit timeout: the SDK refuses a non-streamed 32 000-token request without one
        return client.messages.create(model=group, messages=messages, timeout=120, **params)

    refused = len(claude.refusals)
    assert _blocks(send(request["messages"][:1])) == reply
    messages = request["messages"]
    if alter:
        messages = json.loads(json.dumps(messages))
        block = messages[1]["content"][2]
        block["thinking"] = block["thinking"].replace("parallel", "sequence")
        with pytest.raises(anthropic.BadRequestError, match="cannot be modified"):
            send(messages)
    else:
        assert send(messages).content[0].text == "Fixed."
        assert claude.refusals[refused:] == []
    sent = claude.bodies(model)[-1]["messages"][1]["content"]
    assert sent == (messages[1]["content"] if alter else reply)


def test_records_of_messages_calls_are_filed_under_the_virtual_key(proxy: Any) -> None:
    """The tenant boundary holds on `/v1/messages` too: every record this route wrote (the
    tests above) is scoped by the hashed virtual key the proxy authenticated."""
    from litellm_reasoning.stores import open_backend

    store = open_backend(proxy.store_url)
    try:
        tenants = store.tenants()
    finally:
        store.close()
    assert tenants, "the tests above captured nothing"
    assert all("|key=" in tenant.scope for tenant in tenants), [t.scope for t in tenants]
