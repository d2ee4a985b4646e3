"""The prompt cache a reply's usage reports, in each recorded shape (pure: the core's reader and
the Anthropic Messages adapter's)."""

from __future__ import annotations

import pytest

from litellm_reasoning.core.usage import PromptCache, prompt_cache_of
from litellm_reasoning.wire.anthropic.messages import (
    prompt_cache_of_usage as anthropic_prompt_cache_of,
)

pytestmark = pytest.mark.once  # see the marker in pyproject.toml


def test_deepseek_chat_usage() -> None:
    # shared/realdata/vercel-ai/deepseek/deepseek-tool-call.chunks.txt
    usage = {
        "prompt_tokens": 339,
        "completion_tokens": 83,
        "prompt_tokens_details": {"cached_tokens": 320},
        "prompt_cache_hit_tokens": 320,
        "prompt_cache_miss_tokens": 19,
    }
    assert prompt_cache_of(usage) == PromptCache(read=320, write=0, uncached=19)
    # DeepSeek's own field alone (LiteLLM versions that do not copy it into the details)
    bare = {"prompt_tokens": 339, "prompt_cache_hit_tokens": 320}
    assert prompt_cache_of(bare) == PromptCache(read=320, write=0, uncached=19)


def test_litellm_chat_usage_of_a_claude_reply() -> None:
    """LiteLLM counts Claude's cache reads and writes in `prompt_tokens`."""
    usage = {
        "prompt_tokens": 1100,
        "prompt_tokens_details": {"cached_tokens": 900, "cache_write_tokens": 150},
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 150,
    }
    assert prompt_cache_of(usage) == PromptCache(read=900, write=150, uncached=50)


def test_responses_usage() -> None:
    # shared/realdata/vercel-ai/openai/openai-reasoning-encrypted-content.1.json
    usage = {"input_tokens": 865, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1}
    assert prompt_cache_of(usage) == PromptCache(read=0, write=0, uncached=865)


def test_anthropic_messages_usage() -> None:
    # shared/realdata/vercel-ai/anthropic/anthropic-claude-opus-5-reasoning-high.1.json
    usage = {
        "input_tokens": 51,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1699,
    }
    assert anthropic_prompt_cache_of(usage) == PromptCache(read=0, write=0, uncached=51)
    warm = {"input_tokens": 12, "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 80}
    assert anthropic_prompt_cache_of(warm) == PromptCache(read=4000, write=80, uncached=12)


@pytest.mark.parametrize("usage", [None, {}, {"prompt_tokens": "12"}, [1], {"input_tokens": None}])
def test_no_input_count_is_no_prompt_cache(usage: object) -> None:
    assert prompt_cache_of(usage) is None
    assert anthropic_prompt_cache_of(usage) is None


def test_a_streamed_anthropic_replys_usage_is_read_from_its_events() -> None:
    from litellm_reasoning.testing.anthropic_upstream import AnthropicReply, sse_from_reply
    from litellm_reasoning.wire.anthropic.messages import usage_of_stream

    usage = {"input_tokens": 12, "cache_read_input_tokens": 4000, "output_tokens": 1}
    reply = AnthropicReply([{"type": "text", "text": "hi"}], extra={"usage": usage})
    for api_style in (False, True):
        found = usage_of_stream(sse_from_reply("claude", reply, api_style=api_style))
        assert found is not None and found["output_tokens"] == 10  # message_delta's, later
        assert anthropic_prompt_cache_of(found) == PromptCache(read=4000, write=0, uncached=12)
    assert usage_of_stream('data: {"type": "ping"}\n\n') is None
