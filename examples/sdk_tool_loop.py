"""A tool loop through the LiteLLM SDK whose client keeps only role, content and tool calls.

With DEEPSEEK_API_KEY set it talks to DeepSeek; without, to a local server that answers like a
reasoning model, so it runs anywhere. Either way the provider gets each step's reasoning back.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no cost-map download

import litellm

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream

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


def run(model: str, **params: object) -> None:
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Weather in Paris?"}]
    for _ in range(4):
        reply = litellm.completion(model=model, messages=messages, tools=TOOLS, **params)
        message = reply.choices[0].message
        # What most clients keep: no reasoning_content.
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": message.tool_calls
                and [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls
                ],
            }
        )
        if not message.tool_calls:
            print("answer:", message.content)
            break
        for call in message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 12})}
            )
    print("callback stats:", dict(callback.stats))


if __name__ == "__main__":
    if os.environ.get("DEEPSEEK_API_KEY"):
        run("deepseek/deepseek-chat", extra_body={"thinking": {"type": "enabled"}})
    else:
        with Upstream() as upstream:
            call = {
                "id": "call_weather_7f3a9c",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
            upstream.script(
                "local-reasoner",
                Reply(
                    message={
                        "content": "",
                        "reasoning_content": "I need the weather tool.",
                        "tool_calls": [call],
                    }
                ),
                Reply(
                    message={"content": "12 °C in Paris.", "reasoning_content": "The tool said 12."}
                ),
            )
            run("openai/local-reasoner", api_base=upstream.base_url, api_key="none")
            sent = upstream.bodies("local-reasoner")[1]["messages"][1]
            print("step 2 sent back:", sent.get("reasoning_content"))
