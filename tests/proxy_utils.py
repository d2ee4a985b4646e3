"""The real LiteLLM proxy for end-to-end tests: the runner is `litellm_reasoning.testing.proxy`
(the demo uses it too), here with its processes forked from the test session's fork server
(`forkserver.py`), plus the client-side helpers the proxy tests share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import openai
from forkserver import launch

from litellm_reasoning.testing import proxy as _runner
from litellm_reasoning.testing.proxy import (
    CALLBACK,
    Proxy,
    ProxyUnavailable,
    free_port,
    litellm_executable,
    new_master_key,
    openai_compatible_deployment,
    proxy_config,
)
from litellm_reasoning.testing.upstream import Reply, Upstream

start_proxy = partial(_runner.start_proxy, launcher=launch)
run_proxy = partial(_runner.run_proxy, launcher=launch)
run_proxies = partial(_runner.run_proxies, launcher=launch)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def upstream_model(group: str) -> str:
    return f"{group}-upstream"


def tool_call(call_id: str, city: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }


def tool_reply(reasoning: str, call_id: str, city: str) -> Reply:
    return Reply(
        message={
            "role": "assistant",
            "content": "",
            "reasoning_content": reasoning,
            "tool_calls": [tool_call(call_id, city)],
        }
    )


def text_reply(reasoning: str, content: str) -> Reply:
    return Reply(message={"role": "assistant", "content": content, "reasoning_content": reasoning})


@dataclass
class Received:
    """What the client got back, as an openai SDK user sees it."""

    content: str | None
    reasoning_content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    """The proxy's response headers."""

    def as_history(self) -> dict[str, Any]:
        """The assistant message as an openai SDK user sends it back: role, content and tool
        calls only (`reasoning_content` is not an SDK field and gets dropped)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


def chat(
    client: openai.OpenAI,
    group: str,
    messages: list[dict[str, Any]],
    *,
    stream: bool,
    **kwargs: Any,
) -> Received:
    """One request through the proxy; a stream is read to its end before this returns. The
    proxy's response headers are kept on `Received.headers`."""
    if not stream:
        raw = client.chat.completions.with_raw_response.create(
            model=group, messages=messages, stream=False, **kwargs
        )
        response = raw.parse()
        message = response.choices[0].message
        extra = message.model_extra or {}
        return Received(
            content=message.content,
            reasoning_content=extra.get(
                "reasoning_content", getattr(message, "reasoning_content", None)
            ),
            tool_calls=[
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls or []
            ],
            headers=dict(raw.headers),
        )
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    with client.chat.completions.with_streaming_response.create(
        model=group, messages=messages, stream=True, **kwargs
    ) as raw_stream:
        headers = dict(raw_stream.headers)
        for chunk in raw_stream.parse():
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    content.append(delta.content)
                piece = (delta.model_extra or {}).get("reasoning_content")
                if piece:
                    reasoning.append(piece)
                for call in delta.tool_calls or []:
                    entry = calls.setdefault(
                        call.index,
                        {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    if call.id:
                        entry["id"] = call.id
                    if call.function is not None:
                        if call.function.name:
                            entry["function"]["name"] += call.function.name
                        if call.function.arguments:
                            entry["function"]["arguments"] += call.function.arguments
    return Received(
        content="".join(content) or None,
        reasoning_content="".join(reasoning) or None,
        tool_calls=[calls[i] for i in sorted(calls)],
        headers=headers,
    )


def assistant_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "assistant"]


def assert_no_turn_key(body: dict[str, Any]) -> None:
    leaked = [m for m in body["messages"] if "turn" in m]
    assert not leaked, f"`turn` reached the upstream: {leaked}"


def wire_ids(message: dict[str, Any]) -> list[str]:
    return [c["id"] for c in message.get("tool_calls") or []]


def tool_loop(
    client: openai.OpenAI,
    upstream: Upstream,
    group: str,
    *,
    stream: bool,
    reasoning: str,
    call_id: str,
    user: str = "alice",
) -> list[dict[str, Any]]:
    """Request 1 of a tool loop: returns the history the client sends next (reasoning dropped,
    tool result appended)."""
    model = upstream_model(group)
    upstream.script(model, tool_reply(reasoning, call_id, "Paris"))
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    got = chat(client, group, history, stream=stream, tools=TOOLS, user=user)
    assert got.reasoning_content == reasoning, "the client must receive the upstream's reasoning"
    assert [c["id"] for c in got.tool_calls] == [call_id]
    return [
        *history,
        got.as_history(),
        {"role": "tool", "tool_call_id": call_id, "content": "Sunny, 24 C"},
    ]


__all__ = [
    "CALLBACK",
    "TOOLS",
    "Received",
    "assert_no_turn_key",
    "assistant_messages",
    "chat",
    "text_reply",
    "tool_call",
    "tool_loop",
    "tool_reply",
    "upstream_model",
    "wire_ids",
    "Proxy",
    "ProxyUnavailable",
    "free_port",
    "litellm_executable",
    "new_master_key",
    "openai_compatible_deployment",
    "proxy_config",
    "run_proxies",
    "run_proxy",
    "start_proxy",
]
