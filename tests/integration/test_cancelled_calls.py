"""A cancelled call leaves no capture open: the caller's task cancelled while the provider is
still answering (a client that went away, `asyncio.wait_for` around `acompletion`) never
reaches a reply hook, and its open capture made the conversation's next request wait
`capture_wait_seconds` for a reply that never came (held-out run: 300 of 300 cancelled calls
left one open; a later step waited 4 s)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from conftest import register

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Reply, Upstream


class SlowFirst(Upstream):
    """Answers its first request only when `release` is set (the provider still thinking)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self._first = True

    def answer(self, body: dict[str, Any], reply: Reply | None) -> tuple[int, str, bytes]:
        first, self._first = self._first, False
        if first:
            self.release.wait(30)
        return super().answer(body, reply)


@pytest.fixture
def slow() -> Iterator[SlowFirst]:
    with SlowFirst() as up:
        yield up
        up.release.set()


async def test_a_cancelled_call_leaves_no_capture_open(slow: SlowFirst) -> None:
    callback = register(ReasoningCallback(capture_wait_seconds=30.0))
    model = f"deepseek-reasoner-{uuid.uuid4().hex[:6]}"
    slow.always(model, Reply(message={"reasoning_content": "Think.", "content": "ok"}))
    params: dict[str, Any] = {
        "model": f"deepseek/{model}",
        "api_base": slow.base_url,
        "api_key": "k",
        "messages": [{"role": "user", "content": "Hello?"}],
    }
    call = asyncio.create_task(litellm.acompletion(**params))
    for _ in range(3000):  # until the request reached the provider
        if slow.received:
            break
        await asyncio.sleep(0.01)
    assert callback.open_captures == 1
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert callback.open_captures == 0
    slow.release.set()
    # The same conversation again: nothing to wait for (30 s if the capture were open).
    reply = await asyncio.wait_for(litellm.acompletion(**params), timeout=20)
    assert reply.choices[0].message.content == "ok"
    assert callback.stats["waited"] == 0
    litellm.logging_callback_manager._reset_all_callbacks()
