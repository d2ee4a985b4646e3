"""The proxy's stream hook when the client goes away mid-stream: nothing is captured, and the
conversation's next request finds no open capture to wait for (it would wait
`capture_wait_seconds` for a capture that never comes)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import litellm
from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices

from litellm_reasoning import ReasoningCallback


def _chunk(text: str) -> ModelResponseStream:
    return ModelResponseStream(
        choices=[StreamingChoices(index=0, delta=Delta(reasoning_content=text, content=None))]
    )


async def _upstream() -> AsyncIterator[Any]:
    for text in ("first half of the thinking", " second half"):
        yield _chunk(text)


async def test_client_disconnect_closes_the_open_capture_and_stores_nothing() -> None:
    callback = ReasoningCallback()
    litellm.callbacks = [callback]
    try:
        logging_obj = SimpleNamespace(model_call_details={})  # LiteLLM's per-call logging object
        request = {
            "model": "deepseek/deepseek-reasoner",
            "messages": [{"role": "user", "content": "hi"}],
            "litellm_logging_obj": logging_obj,
        }
        await callback.async_pre_call_deployment_hook(request, "acompletion")
        assert callback.open_captures == 1  # what rendering the request opened
        stream = callback.async_post_call_streaming_iterator_hook(
            None, _upstream(), {"litellm_logging_obj": logging_obj}
        )
        first = await stream.__anext__()
        assert first.choices[0].delta.reasoning_content == "first half of the thinking"
        assert callback.open_captures == 1  # still streaming: a next request waits
        await stream.aclose()  # the proxy closes the generator when the client disconnects
        assert callback.open_captures == 0
        # LiteLLM's success event for the cut stream stores nothing either.
        await callback.async_log_success_event(
            logging_obj.model_call_details, _chunk("partial"), None, None
        )
        assert callback.stats["captured"] == 0
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
