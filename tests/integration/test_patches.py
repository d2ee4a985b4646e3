"""The patches of LiteLLM's internals keep each patched function's identity: anything that
inspects them (LiteLLM's own session-reuse code and tests, debuggers) sees the function LiteLLM
wrote, with its name, signature, source and `__wrapped__`."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from litellm_reasoning import ReasoningCallback


def _patched() -> list[tuple[str, Any]]:
    """(where, function) of every function the callback's patches replaced in this LiteLLM."""
    import litellm
    from litellm.litellm_core_utils.litellm_logging import Logging
    from litellm.litellm_core_utils.prompt_templates import factory
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
    from litellm.llms.bedrock.chat.converse_handler import BedrockConverseLLM
    from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig
    from litellm.llms.custom_httpx.llm_http_handler import BaseLLMHTTPHandler
    from litellm.llms.openrouter.chat import transformation

    places: list[tuple[Any, str]] = [
        (BedrockConverseLLM, "completion"),
        (BaseLLMHTTPHandler, "completion"),
        (AmazonConverseConfig, "_transform_request"),
        (AmazonConverseConfig, "_async_transform_request"),
        (litellm.AmazonAnthropicClaudeConfig, "transform_request"),
        (CustomStreamWrapper, "__init__"),
        (Logging, "should_run_callback"),
        (transformation.OpenRouterChatCompletionStreamingHandler, "chunk_parser"),
        (
            factory.BedrockConverseMessagesProcessor,
            "translate_thinking_blocks_to_reasoning_content_blocks",
        ),
    ]
    try:
        from litellm.proxy.pass_through_endpoints.streaming_handler import (
            PassThroughStreamingHandler,
        )

        places.append((PassThroughStreamingHandler, "route_streaming_logging_to_handler"))
    except ImportError:  # the SDK without the proxy extra: not patched
        pass
    found = [(f"{owner.__name__}.{name}", getattr(owner, name, None)) for owner, name in places]
    return [(where, fn) for where, fn in found if getattr(fn, "_litellm_reasoning", False)]


def test_every_patched_function_keeps_its_name_signature_and_source() -> None:
    ReasoningCallback()  # applies the patches (once per process)
    patched = _patched()
    # Bedrock's converter is only patched on LiteLLM lines that lack redacted blocks (1.106).
    assert len(patched) >= 8, [where for where, _ in patched]
    for where, function in patched:
        original = function.__wrapped__
        assert not getattr(original, "_litellm_reasoning", False), where
        assert function.__name__ == original.__name__, where
        assert function.__qualname__ == original.__qualname__, where
        assert inspect.signature(function) == inspect.signature(original), where
        assert inspect.getsource(function) == inspect.getsource(original), where


def test_the_shared_http_handler_still_shows_litellms_parameters() -> None:
    """The held-out finding: `BaseLLMHTTPHandler.completion` (every provider's path) lost
    `shared_session` from its signature once a callback was constructed."""
    from litellm.llms.custom_httpx.llm_http_handler import BaseLLMHTTPHandler

    ReasoningCallback()
    parameters = inspect.signature(BaseLLMHTTPHandler.completion).parameters
    if (
        "shared_session"
        not in inspect.signature(inspect.unwrap(BaseLLMHTTPHandler.completion)).parameters
    ):
        pytest.skip("this LiteLLM's handler takes no shared_session")
    assert "shared_session" in parameters


def test_the_patches_change_nothing_until_a_callback_is_registered() -> None:
    """Constructing a callback installs the patches (once per process) but they act only while
    one is in `litellm.callbacks`: on LiteLLM 1.106 the Bedrock converter sent redacted blocks
    for every Bedrock call of the process as soon as a callback was merely constructed."""
    import litellm
    from litellm.litellm_core_utils.prompt_templates import factory

    callback = ReasoningCallback()
    processor = factory.BedrockConverseMessagesProcessor
    convert = processor.translate_thinking_blocks_to_reasoning_content_blocks
    if not getattr(convert, "_litellm_reasoning", False):
        pytest.skip("this LiteLLM's converter knows redacted blocks: not patched")
    blocks = [
        {
            "type": "redacted_thinking",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        }
    ]
    saved = list(litellm.callbacks)
    try:
        litellm.callbacks = []
        assert convert(blocks) == convert.__wrapped__(blocks)  # LiteLLM's own behaviour
        litellm.callbacks = [callback]
        assert convert(blocks) != convert.__wrapped__(blocks)
        assert "redactedContent" in str(convert(blocks))
        litellm.callbacks = []
        assert convert(blocks) == convert.__wrapped__(blocks)
    finally:
        litellm.callbacks = saved
