"""The proxy's stream hook when the client goes away mid-stream: nothing is captured, and the
conversation's next request finds no open capture to wait for (it would wait
`capture_wait_seconds` for a capture that never comes)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

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
    call_id, scope, digest = "call-1", "ns=default", "d" * 64
    callback._pending.open(call_id, scope, digest)  # what rendering the request opened
    stream = callback.async_post_call_streaming_iterator_hook(
        None, _upstream(), {"litellm_call_id": call_id}
    )
    first = await stream.__anext__()
    assert first.choices[0].delta.reasoning_content == "first half of the thinking"
    assert callback._pending.pending(scope, digest)  # still streaming: a next request waits
    await stream.aclose()  # the proxy closes the generator when the client disconnects
    assert callback._pending.pending(scope, digest) == []
    assert callback.stats["captured"] == 0
