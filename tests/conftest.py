"""Shared fixtures: an offline LiteLLM, a local upstream, and a freshly registered callback."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from collections.abc import Iterator

import litellm
import pytest

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.testing.upstream import Upstream


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    """A local OpenAI-compatible server; tests script replies under their own model names."""
    with Upstream() as up:
        yield up


def register(callback: ReasoningCallback) -> ReasoningCallback:
    """Make `callback` the only one LiteLLM calls (its internal event lists included)."""
    litellm.logging_callback_manager._reset_all_callbacks()
    litellm.callbacks = [callback]
    return callback


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    """A registered callback on its own in-memory store, unregistered afterwards."""
    yield register(ReasoningCallback())
    litellm.logging_callback_manager._reset_all_callbacks()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close LiteLLM's pooled async HTTP clients, so interpreter exit stays quiet."""
    import asyncio
    import contextlib

    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    with contextlib.suppress(Exception):  # cleanup only; the run's result is already decided
        asyncio.run(close_litellm_async_clients())
