"""Shared fixtures: an offline LiteLLM, a local upstream, and a freshly registered callback."""

from __future__ import annotations

import asyncio
import gc
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


async def settled(callback: ReasoningCallback, timeout: float = 60.0) -> None:
    """Until no capture of `callback` is open any more: sync calls and streams are captured on
    LiteLLM's logging thread after the caller has the reply (the bound is far above noise)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while callback.open_captures:
        assert asyncio.get_running_loop().time() < deadline, "captures still open"
        await asyncio.sleep(0.02)


@pytest.fixture
def fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS credentials for local servers only (nothing here reaches AWS)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLELOCALONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-only-secret")
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def callback() -> Iterator[ReasoningCallback]:
    """A registered callback on its own in-memory store, unregistered afterwards."""
    yield register(ReasoningCallback())
    litellm.logging_callback_manager._reset_all_callbacks()


_RETIRED_CLIENTS: list[object] = []


@pytest.fixture(autouse=True)
def _fresh_litellm_clients() -> Iterator[None]:
    """Forget LiteLLM's cached HTTP clients after each test.

    LiteLLM keys its async clients by `id()` of the running event loop; each test has its own
    loop, and a new loop can get a dead one's id, handing the test a client bound to a closed
    loop (a request that never completes).

    The cyclic GC is paused during a test and run after it: LiteLLM stops reading a sync stream
    at its last event and leaves httpx's line generator suspended in a reference cycle; if the
    GC finalises it inside httpcore's pool lock, during a later request on the same client, that
    thread deadlocks on the lock it already holds (seen in the conformance tests). Objects made
    during the test stay in generation 0, so `gc.collect(0)` afterwards finds all of them."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
    cached = getattr(getattr(litellm, "in_memory_llm_clients_cache", None), "cache_dict", None)
    if isinstance(cached, dict):
        # Kept, not dropped: the session's end closes them (unclosed ones are noisy at exit).
        _RETIRED_CLIENTS.extend(cached.values())
        litellm.in_memory_llm_clients_cache.flush_cache()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close LiteLLM's pooled async HTTP clients, so interpreter exit stays quiet."""
    import asyncio
    import contextlib

    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    with contextlib.suppress(Exception):  # cleanup only; the run's result is already decided
        cache = litellm.in_memory_llm_clients_cache
        for index, client in enumerate(_RETIRED_CLIENTS):
            cache.cache_dict[f"retired-{index}"] = client
        asyncio.run(close_litellm_async_clients())
