"""What clients send back of a LiteLLM reply: the shapes the tests play."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm

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
    LiteLLM's own (`num_retries` of the call, or of the Router)."""
    params: dict[str, Any] = {"messages": messages, "stream": stream, **extra}
    target: Any = litellm
    if how.startswith("router."):
        target = litellm.Router(
            model_list=[
                {
                    "model_name": "group",
                    "litellm_params": {"model": model, "api_base": api_base, "api_key": "k"},
                }
            ],
            num_retries=retries,
        )
        params["model"] = "group"
    else:
        params.update(model=model, api_base=api_base, api_key="k")
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
