"""Diagnostic callbacks for `diag_workers.py` (measurements, not designs). The proxies load them
as `diag_callbacks.hollow`, `.sleepy`, `.inplace`, `.updated`, `.onloop`, `.nosummary`,
`.untracked`, `.holding`, `.nocapture` and `.timed`, on the store in `LITELLM_REASONING_STORE`."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from litellm_reasoning import ReasoningCallback
from litellm_reasoning.accelerator import NATIVE
from litellm_reasoning.integration.calls import state_of
from litellm_reasoning.stores.redis import RedisStore

T = TypeVar("T")


class HollowCallback(ReasoningCallback):
    """The real class with every hook it overrides returning at once: what LiteLLM itself costs
    for this hook set, none of the callback's own work (run it with a client keeping its
    reasoning, so the wire is the same). The failure hooks stay the callback's: the bench's
    calls do not fail."""

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: Any, call_type: Any, **_: Any
    ) -> Any:
        return data

    async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any, **_: Any) -> Any:
        return None

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any, **_: Any) -> None:
        return None

    async def async_post_call_success_deployment_hook(
        self, request_data: Any, response: Any, call_type: Any, **_: Any
    ) -> Any:
        return None

    async def async_post_call_streaming_deployment_hook(
        self, request_data: Any, response_chunk: Any, call_type: Any, **_: Any
    ) -> Any:
        return None

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: Any, **_: Any
    ) -> AsyncIterator[Any]:
        async for chunk in response:
            yield chunk

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        return None

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        return None


class SleepyCallback(HollowCallback):
    """`HollowCallback` whose pre-call hook only waits (`DIAG_SLEEP_MS`, default 5 ms, on the
    event loop's timer: no CPU): what a request's longer stay in a busy worker costs LiteLLM
    itself, its in-flight objects living through more of the collector's young collections
    (measured: nothing; bench/README.md)."""

    async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any, **_: Any) -> Any:
        await asyncio.sleep(_SLEEP)
        return None


class InPlaceCallback(ReasoningCallback):
    """The real callback, whose rendered messages are then copied into the caller's own dicts
    (which take their places in the rendered list): the rendered dicts are freed when the hook
    returns instead of living through the request. A measurement of what the rendered messages
    cost the collector, not a design (a retry would see the restored reasoning as the client's
    own)."""

    @staticmethod
    def take(mine: dict[str, Any], made: dict[str, Any]) -> None:
        """The caller's dict `mine` made equal to its rendered message `made`."""
        mine.clear()
        mine.update(made)

    async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any, **_: Any) -> Any:
        original = kwargs.get("messages")
        out = await super().async_pre_call_deployment_hook(kwargs, call_type)
        rendered = out.get("messages") if isinstance(out, dict) else None
        if type(original) is list and type(rendered) is list and len(original) == len(rendered):
            for mine, made in zip(original, rendered, strict=True):
                if mine is not made and type(mine) is dict and type(made) is dict:
                    self.take(mine, made)
            # The call's state (its body patch, its summary) holds the rendered list: the
            # caller's dicts in it, so no rendered dict outlives the hook.
            rendered[:] = original
        return out


class UpdatedCallback(InPlaceCallback):
    """`InPlaceCallback` whose caller's dicts take the rendered fields by one `dict.update`
    each (no `clear`: the dict keeps its table, and only the restored field is new), as an
    in-place render would add them. Assumes rendering only adds or replaces fields (a client
    that drops reasoning); a measurement, not a design."""

    @staticmethod
    def take(mine: dict[str, Any], made: dict[str, Any]) -> None:
        mine.update(made)


class UntrackedCallback(ReasoningCallback):
    """The real callback whose rendered messages (the new dicts it sends in place of the
    caller's) are then taken off the collector's lists: what their promotion to the oldest
    generation costs (a measurement, not a design)."""

    async def async_pre_call_deployment_hook(self, kwargs: Any, call_type: Any, **_: Any) -> Any:
        original = kwargs.get("messages")
        out = await super().async_pre_call_deployment_hook(kwargs, call_type)
        rendered = out.get("messages") if isinstance(out, dict) else None
        if NATIVE is not None and type(original) is list and type(rendered) is list:
            NATIVE.untrack([m for m, o in zip(rendered, original, strict=False) if m is not o])
        return out


class NoCaptureCallback(ReasoningCallback):
    """The real callback that captures no reply (its open capture closed at once, so the next
    request does not wait for it): what the capture and the write cost (a measurement, not a
    design: each request then goes without its newest reply's reasoning)."""

    async def async_post_call_success_deployment_hook(
        self, request_data: Any, response: Any, call_type: Any, **_: Any
    ) -> Any:
        state = state_of(request_data)
        if state is not None:
            state.claim(self.engine)
            self.engine.pending.close(state.id)
        return None

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        return None


TIMED: dict[str, list[float]] = {}
"""`timed` arm: per wrapped function, [calls, thread CPU seconds, of which the garbage
collector's (collections the function's allocations set off)] in this worker."""

_COLLECTING = threading.local()
"""Per thread: [thread CPU seconds spent in collections so far, when the current one began]."""


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    figures = getattr(_COLLECTING, "figures", None)
    if figures is None:
        figures = _COLLECTING.figures = [0.0, 0.0]
    if phase == "start":
        figures[1] = time.thread_time()
    else:
        figures[0] += time.thread_time() - figures[1]


def _collected() -> float:
    figures = getattr(_COLLECTING, "figures", None)
    return figures[0] if figures is not None else 0.0


def _timed(owner: Any, name: str, label: str) -> None:
    function = getattr(owner, name)
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, collected = time.thread_time(), _collected()
        try:
            return function(*args, **kwargs)
        finally:
            figures = TIMED.setdefault(label, [0.0, 0.0, 0.0])
            figures[0] += 1
            figures[1] += time.thread_time() - start
            figures[2] += _collected() - collected

    setattr(owner, name, wrapper)


def _timed_callback() -> ReasoningCallback:
    """The real callback with its synchronous parts timed in thread CPU (the store's calls run
    on its own threads, so each is timed alone; the loop's are not awaited)."""
    from litellm_reasoning.integration import capture, chat_messages, sync_body
    from litellm_reasoning.memo.prefix_cache import PrefixCache
    from litellm_reasoning.stores import _codec
    from litellm_reasoning.stores._codec import DecodedRecords

    for name in ("get_many", "get_required", "put_many", "put_required", "_read"):
        _timed(RedisStore, name, f"store.{name}")
    _timed(_codec, "records_of", "store.records_of")
    _timed(DecodedRecords, "decode_many", "codec.decode_many")
    _timed(capture, "_records_of", "capture._records_of")
    _timed(sync_body, "rewrite", "log_pre_api_call")
    # The pre-call hook's synchronous parts on the event loop's thread.
    _timed(PrefixCache, "walk", "pre-call: prefix walk")
    _timed(chat_messages.ChatMessages, "prepare", "pre-call: prepare (walk included)")
    _timed(chat_messages.ChatMessages, "rendered", "pre-call: render and limits")
    return ReasoningCallback(_STORE)


class _OnLoopRedis(RedisStore):
    async def _off_loop(self, call: Callable[[], T]) -> T:
        return call()  # blocks the event loop for the round trip: a measurement only


class _HeldRedis(RedisStore):
    """Reads from Redis only the keys it has not found before (per scope, unbounded): the
    ceiling of a design that does not re-read a worker's held records. Unsafe (a record
    deleted or rewritten in Redis is still answered from here): a measurement only."""

    def _held_first(
        self, read: Callable[[str, Any], dict[str, Any]], scope: str, keys: Any
    ) -> dict[str, Any]:
        held = self.__dict__.setdefault("_held_records", {}).setdefault(scope, {})
        missing = [key for key in keys if key not in held]
        if missing:
            held.update(read(scope, missing))
        return {key: held[key] for key in keys if key in held}

    def get_many(self, scope: str, keys: Any) -> dict[str, Any]:
        return self._held_first(super().get_many, scope, keys)

    def get_required(self, scope: str, keys: Any) -> dict[str, Any]:
        return self._held_first(super().get_required, scope, keys)


def _on_redis_class(redis_class: type[RedisStore]) -> ReasoningCallback:
    """The real callback whose Redis store (behind the fail-open layer) is a `redis_class`."""
    callback = ReasoningCallback(_STORE)
    backend = getattr(callback.store, "backend", None)
    assert isinstance(backend, RedisStore)
    backend.__class__ = redis_class
    return callback


def _no_summary() -> ReasoningCallback:
    """The real callback whose decisions summary never reaches LiteLLM's logging metadata:
    what the summary costs LiteLLM's logging and the proxy (a measurement, not a design; the
    patch is this process's: only this arm's proxy imports it)."""
    from litellm_reasoning.integration import reporting

    reporting.attach_summary = lambda litellm_params, summary: None
    return ReasoningCallback(_STORE)


_STORE = os.environ.get("LITELLM_REASONING_STORE", "")
_SLEEP = float(os.environ.get("DIAG_SLEEP_MS", "5")) / 1000

_ARMS: dict[str, Callable[[], ReasoningCallback]] = {
    "hollow": lambda: HollowCallback(_STORE),
    "sleepy": lambda: SleepyCallback(_STORE),
    "inplace": lambda: InPlaceCallback(_STORE),
    "updated": lambda: UpdatedCallback(_STORE),
    # the Redis calls on the event loop's own thread (no hand-off to the store's threads)
    "onloop": lambda: _on_redis_class(_OnLoopRedis),
    "nosummary": _no_summary,
    "untracked": lambda: UntrackedCallback(_STORE),
    # a Redis store that does not read again what it found before
    "holding": lambda: _on_redis_class(_HeldRedis),
    "nocapture": lambda: NoCaptureCallback(_STORE),
    "timed": _timed_callback,
}
_MADE: dict[str, ReasoningCallback] = {}


def __getattr__(name: str) -> ReasoningCallback:
    """The arm a proxy names (`diag_callbacks.<arm>`), made on first use: only that one, so
    one arm's patches (`nosummary`'s, `timed`'s) never reach another arm's proxy."""
    if name not in _ARMS or not _STORE:
        raise AttributeError(name)
    if name not in _MADE:
        _MADE[name] = _ARMS[name]()
    return _MADE[name]
