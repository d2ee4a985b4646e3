"""OpenAI-compatible chat recordings: DeepSeek, DashScope (Qwen), Z.ai and others."""

from __future__ import annotations

from .common import (
    DEEPSEEK_API_BASE,
    PYDANTIC_AI,
    VERCEL_AI,
    Json,
    Spec,
    build_pydantic,
    build_vercel_chunks,
)

# ---------------------------------------------------------------- the cassettes

_TURN_FALSE_NOTE = (
    "synthesized client request: request 1's messages, the recorded reply with its reasoning "
    "(as a client that keeps reasoning sends it) and a user note with `turn: false` (this "
    "package's flag for a message that does not start a new turn; it never reaches the wire); "
    "the reply is synthesized"
)


def _weather_tool_result(reply: Json) -> list[Json]:
    call = reply["tool_calls"][0]
    return [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": '{"location":"San Francisco","weather":"sunny","temperature_f":68}',
        }
    ]


OPENAI_COMPATIBLE_SPECS: tuple[Spec, ...] = (
    Spec(
        name="deepseek_thinking_part",
        source="pydantic-ai/test_deepseek/test_deepseek_model_thinking_part.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_model_thinking_part.yaml",
        build=build_pydantic,
        summary="DeepSeek deepseek-reasoner, non-streaming, message.reasoning_content",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "follow_up": [{"role": "user", "content": "Is it any different at night?"}],
            "follow_up_note": (
                "synthesized client request: request 1's messages, the recorded reply with its "
                "reasoning (as a client that keeps reasoning sends it) and a new user question; "
                "the reply is synthesized"
            ),
        },
    ),
    Spec(
        name="deepseek_thinking_stream",
        source="pydantic-ai/test_deepseek/test_deepseek_model_thinking_stream.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_model_thinking_stream.yaml",
        build=build_pydantic,
        summary="DeepSeek deepseek-reasoner, SSE stream: delta.reasoning_content, then content",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "follow_up": [{"role": "user", "content": "Reply in one sentence.", "turn": False}],
            "follow_up_note": _TURN_FALSE_NOTE,
        },
    ),
    Spec(
        name="deepseek_tool_loop",
        source="pydantic-ai/test_deepseek/test_deepseek_deferred_capability_with_thinking.yaml",
        origin=PYDANTIC_AI,
        original_path="test_deepseek/test_deepseek_deferred_capability_with_thinking.yaml",
        build=build_pydantic,
        summary=(
            "DeepSeek deepseek-reasoner (served as deepseek-v4-flash), 3-request tool loop; "
            "requests 2 and 3 send reasoning_content back (one assistant message with an empty one)"
        ),
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
    ),
    Spec(
        name="zai_preserved_thinking",
        source="pydantic-ai/test_zai/test_zai_preserved_thinking_round_trip.yaml",
        origin=PYDANTIC_AI,
        original_path="test_zai/test_zai_preserved_thinking_round_trip.yaml",
        build=build_pydantic,
        summary=(
            "Z.ai glm-4.7, thinking {type: enabled, clear_thinking: false}; request 2 sends "
            "turn 1's reasoning_content back"
        ),
        provider="zai",
    ),
    Spec(
        name="dashscope_qwen3_max_stream",
        source="vercel-ai/alibaba/alibaba-reasoning.chunks.txt",
        origin=VERCEL_AI,
        original_path="alibaba/src/__fixtures__/alibaba-reasoning.chunks.txt",
        build=build_vercel_chunks,
        summary="Alibaba DashScope qwen3-max, SSE stream, delta.reasoning_content then content",
        provider="dashscope",
        extra={
            "model": "qwen3-max",
            "uri": "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions",
            "request": {
                "model": "qwen3-max",
                "messages": [
                    {"role": "user", "content": "How many 'r's are in the word 'strawberry'?"}
                ],
                "stream": True,
                "stream_options": {"include_usage": True},
            },
            "follow_up": [{"role": "user", "content": "Now spell it backwards.", "turn": False}],
            "follow_up_note": _TURN_FALSE_NOTE,
        },
    ),
    Spec(
        name="deepseek_tool_call_stream",
        source="vercel-ai/deepseek/deepseek-tool-call.chunks.txt",
        origin=VERCEL_AI,
        original_path="deepseek/src/__fixtures__/deepseek-tool-call.chunks.txt",
        build=build_vercel_chunks,
        summary="DeepSeek deepseek-reasoner, SSE stream: delta.reasoning_content, then tool_calls",
        provider="deepseek",
        api_base=DEEPSEEK_API_BASE,
        extra={
            "model": "deepseek-reasoner",
            "uri": "https://api.deepseek.com/chat/completions",
            "request": {
                "model": "deepseek-reasoner",
                "messages": [{"role": "user", "content": "What is the weather in San Francisco?"}],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "weather",
                            "description": "Get the weather in a location",
                            "parameters": {
                                "type": "object",
                                "properties": {"location": {"type": "string"}},
                                "required": ["location"],
                            },
                        },
                    }
                ],
                "stream": True,
            },
            "follow_up": _weather_tool_result,
            "follow_up_note": (
                "synthesized client request: request 1's messages and tools, the recorded "
                "tool-call reply with its reasoning (as a client that keeps reasoning sends it) "
                "and a tool result; the reply is synthesized"
            ),
        },
    ),
)
