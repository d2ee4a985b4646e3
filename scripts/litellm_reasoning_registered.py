"""A pytest plugin for running LiteLLM's own tests with a `ReasoningCallback` registered
(`scripts/litellm_own_tests.py` loads it with `-p litellm_reasoning_registered`): before every
test the callback is put at the front of `litellm.callbacks`, as a proxy or SDK user registers
it, and removed afterwards. Its patches of LiteLLM's internals are then in place and active for
every test, which must pass as they do without the callback."""

from __future__ import annotations

from collections.abc import Iterator

import litellm
import pytest

from litellm_reasoning import ReasoningCallback

_CALLBACKS: list[ReasoningCallback] = []
"""The run's one callback, made on first use (not on import)."""


@pytest.fixture(autouse=True)
def _litellm_reasoning_registered() -> Iterator[None]:
    if not _CALLBACKS:
        _CALLBACKS.append(ReasoningCallback())
    callback = _CALLBACKS[0]
    if not any(cb is callback for cb in litellm.callbacks):
        litellm.callbacks = [callback, *litellm.callbacks]
    yield
    litellm.callbacks = [cb for cb in litellm.callbacks if cb is not callback]
