"""What clients send back of a LiteLLM reply: the shapes the tests play."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm

from litellm_reasoning.testing.upstream import Reply, Upstream

Json = dict[str, Any]

THINKING = {"type": "enabled", "budget_tokens": 1024}
"""Claude's extended thinking, as the tests ask for it."""
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
"""The one tool of the tool-loop tests (OpenAI format)."""


def dropping_client(message: Any) -> dict[str, Any]:
    """A client that keeps only role, content and tool calls (ids verbatim) of the reply
    `message` (a LiteLLM `Message`): every reasoning field is thrown away, as the openai SDK,
    agent frameworks and UIs do."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in message.tool_calls
        ]
    return out


def joining_client(message: Any) -> dict[str, Any]:
    """A client that builds its message from a stream's deltas itself (`async for`, joining
    `delta.content`): reasoning dropped, and content `""` where the reply had no text (not
    None, as LiteLLM's assembled message has it)."""
    out = dropping_client(message)
    out["content"] = message.content or ""
    return out


def keeping_client(message: Any) -> dict[str, Any]:
    """A client that sends back what LiteLLM gave it: content, tool calls, `thinking_blocks`
    (LiteLLM's list: every thinking block, none of their places)."""
    out = dropping_client(message)
    blocks = getattr(message, "thinking_blocks", None)
    if blocks:
        out["thinking_blocks"] = [
            {k: v for k, v in dict(b).items() if k in ("type", "thinking", "signature", "data")}
            for b in blocks
        ]
    return out


def claude_thinking(text: str, signature: str) -> dict[str, Any]:
    """A signed Claude thinking block."""
    return {"type": "thinking", "thinking": text, "signature": signature}


def claude_tool_use(call_id: str, path: str) -> dict[str, Any]:
    """A Claude `tool_use` block calling `READ_FILE`."""
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": path}}


def tool_result(call_id: str) -> dict[str, Any]:
    """The client's answer to a tool call (OpenAI format)."""
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


async def complete(
    how: str,
    model: str,
    api_base: str,
    messages: list[Any],
    *,
    stream: bool,
    retries: int = 0,
    **extra: Any,
) -> Any:
    """One request by call path (`acompletion`, `completion`, `router.acompletion`,
    `router.completion`; a stream read to its end); LiteLLM's reply message. `retries`:
    LiteLLM's own (`num_retries` of the call, or of the Router); `api_key` in `extra`: the
    deployment's credential (default "k")."""
    key = extra.pop("api_key", "k")
    params: dict[str, Any] = {"messages": messages, "stream": stream, **extra}
    target: Any = litellm
    if how.startswith("router."):
        target = litellm.Router(
            model_list=[
                {
                    "model_name": "group",
                    "litellm_params": {"model": model, "api_base": api_base, "api_key": key},
                }
            ],
            num_retries=retries,
        )
        params["model"] = "group"
    else:
        params.update(model=model, api_base=api_base, api_key=key)
        if retries:
            params["num_retries"] = retries

    def assemble(chunks: list[Any]) -> Any:
        built = litellm.stream_chunk_builder(chunks)
        assert built is not None
        return built.choices[0].message

    if how.endswith("acompletion"):
        response = await target.acompletion(**params)
        return assemble([c async for c in response]) if stream else response.choices[0].message

    def run() -> Any:
        response = target.completion(**params)
        return assemble(list(response)) if stream else response.choices[0].message

    return await asyncio.to_thread(run)


TOOL_F = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
"""The one tool of the hosted-family tests (Fireworks, Volcano Engine Ark)."""


async def tool_loop_and_new_turn(
    how: str, prefix: str, model: str, upstream: Upstream, call: Json
) -> list[Json]:
    """A client that drops reasoning, on `prefix/model` at `upstream` by call path `how`:
    turn 1 calls `f` (`call`, with reasoning) and answers, turn 2 asks again. The bodies
    `upstream` received for `model`."""
    upstream.script(
        model,
        Reply(message={"reasoning_content": "Call f first.", "content": "", "tool_calls": [call]}),
        Reply(message={"reasoning_content": "f answered.", "content": "Done."}),
    )
    upstream.always(model, Reply(message={"reasoning_content": "Again.", "content": "Ok."}))
    target = (f"{prefix}/{model}", upstream.base_url)
    messages: list[Json] = [{"role": "user", "content": "Use f."}]
    first = await complete(how, *target, messages, stream=False, tools=TOOL_F)
    made = first.tool_calls[0]
    messages += [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": made.id,
                    "type": "function",
                    "function": {"name": "f", "arguments": made.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": made.id, "content": "42"},
    ]
    second = await complete(how, *target, messages, stream=False, tools=TOOL_F)
    messages += [
        {"role": "assistant", "content": second.content},
        {"role": "user", "content": "And again?"},
    ]
    await complete(how, *target, messages, stream=False, tools=TOOL_F)
    return upstream.bodies(model)


async def tool_loop_first_step(
    prefix: str, model: str, upstream: Upstream, call: Json
) -> tuple[Json, list[Json]]:
    """A tool loop's first request on `prefix/model` at `upstream` (`acompletion`, the reply
    calls `f` with reasoning); the next request's parameters and messages, from a client that
    dropped that reasoning: what a strict upstream refuses when the provider is passed through."""
    upstream.script(
        model, Reply(message={"reasoning_content": "R", "content": "", "tool_calls": [call]})
    )
    params: Json = {
        "model": f"{prefix}/{model}",
        "api_base": upstream.base_url,
        "api_key": "k",
        "tools": TOOL_F,
    }
    messages: list[Json] = [{"role": "user", "content": "Use f."}]
    await litellm.acompletion(messages=messages, **params)
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "42"},
    ]
    return params, messages


async def send_messages(api_base: str, model: str, messages: list[Any], **extra: Any) -> Any:
    """One Anthropic-format request (`litellm.anthropic.messages.acreate`, what the proxy's
    `/v1/messages` calls) with extended thinking; the reply."""
    return await litellm.anthropic.messages.acreate(
        model=f"anthropic/{model}",
        messages=messages,
        api_base=api_base,
        api_key="k",
        max_tokens=2048,
        thinking=THINKING,
        **extra,
    )


# ------------------------------------------------------------------ Responses to a chat-only model

RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def chat_only_tool_loop(upstream: Upstream, model: str) -> None:
    """A DeepSeek tool call, then its answer (what the strict upstream serves `model`)."""
    call = {
        "id": "call_paris",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    upstream.script(
        model,
        Reply(message={"content": "", "reasoning_content": "Look up Paris.", "tool_calls": [call]}),
        Reply(message={"content": "Sunny.", "reasoning_content": "It answered."}),
    )


def next_input(first_input: list[Json], output: list[Json], keep: bool) -> list[Json]:
    """The client's next input: the reply's items (without its reasoning items unless `keep`,
    as a client that drops them does) and the tool's result."""
    kept = [item for item in output if keep or item.get("type") != "reasoning"]
    call = next(item for item in output if item.get("type") == "function_call")
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    return [*first_input, *kept, result]
