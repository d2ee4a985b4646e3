"""A pytest plugin for running LiteLLM's own tests with a `ReasoningCallback` registered
(`scripts/litellm_own_tests.py` loads it with `-p litellm_reasoning_registered`): before every
test the callback is put at the front of `litellm.callbacks`, as a proxy or SDK user registers
it, and removed afterwards. Its patches of LiteLLM's internals are then in place and active for
every test, which must pass as they do without the callback.

At the end it prints how many tests ran with the callback registered and how many of them made
LiteLLM call its hooks (`litellm-reasoning: registered in N tests; hooks ran in M`), so a run
where LiteLLM's fixtures removed it is seen, not counted as a pass."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from litellm_reasoning import ReasoningCallback

_HOOKS = (
    "async_pre_call_hook",
    "async_pre_call_deployment_hook",
    "async_pre_request_hook",
    "log_pre_api_call",
    "async_post_call_success_deployment_hook",
    "async_post_call_streaming_deployment_hook",
    "async_post_call_streaming_iterator_hook",
    "async_log_success_event",
    "log_success_event",
    "async_log_failure_event",
    "log_failure_event",
)
COUNTS: Counter[str] = Counter()
"""Hook calls of the current test; `TESTS`: tests registered / tests whose hooks ran."""
TESTS: Counter[str] = Counter()


def _counted(name: str, method: Any) -> Any:
    def hook(*args: Any, **kwargs: Any) -> Any:
        COUNTS[name] += 1
        return method(*args, **kwargs)

    return hook


_CALLBACKS: list[ReasoningCallback] = []
"""The run's one callback, made on first use (not on import)."""


@pytest.fixture(autouse=True)
def _litellm_reasoning_registered() -> Iterator[None]:
    if not _CALLBACKS:
        made = ReasoningCallback()
        for name in _HOOKS:  # on the instance: LiteLLM calls what it finds there
            setattr(made, name, _counted(name, getattr(made, name)))
        _CALLBACKS.append(made)
    callback = _CALLBACKS[0]
    if not any(cb is callback for cb in litellm.callbacks):
        litellm.callbacks = [callback, *litellm.callbacks]
    COUNTS.clear()
    yield
    if any(cb is callback for cb in litellm.callbacks):
        TESTS["registered"] += 1
    if COUNTS:
        TESTS["hooks ran"] += 1
    litellm.callbacks = [cb for cb in litellm.callbacks if cb is not callback]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(
        f"litellm-reasoning: registered at the end of {TESTS['registered']} tests; "
        f"hooks ran in {TESTS['hooks ran']}"
    )
