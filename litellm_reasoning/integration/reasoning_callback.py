"""`ReasoningCallback`: the LiteLLM custom callback, and the only module that touches LiteLLM.

Where it acts (measured on LiteLLM 1.106.12 and 1.110.2):

* async SDK, Router and proxy: `async_pre_call_deployment_hook` rewrites `messages` after
  routing, on every attempt, so retries and fallbacks are rendered for the deployment they hit;
* sync `completion` / `Router.completion` have no pre-call hook that can rewrite messages, so
  `log_pre_api_call` rewrites the provider body LiteLLM is about to send (the same dict it then
  serialises). This also covers async calls whose `messages` were passed positionally;
* capture: non-streaming async replies in `async_post_call_success_deployment_hook`, before the
  caller gets them; streams and sync replies from the assembled reply in the success events. Those
  run after the caller has the reply, so the next request of the same conversation waits briefly
  for an open capture (see `_pending`).

Fail-open: every hook catches everything, logs one warning per kind of failure and per minute,
and lets the request through with only `turn` removed.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections import Counter
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger

from ..core.limits import TokenCounter, estimate_tokens
from ..core.policy import TurnPolicy
from ..core.spelling import did_you_mean
from ..core.targets import Override, parse_overrides
from ..core.turns import without_turn
from ..memo.pending import PendingCaptures
from ..memo.prefix_cache import PrefixCache
from ..stores import MemoryStore, ReasoningStore, store_from_url
from . import blocks_format, capture, items_format, patches, pipeline, refusals, sync_body
from .calls import details_of, state_in, state_of
from .engine import Engine
from .fallback import Contained
from .flows import adrive, drive
from .kwargs import (
    COMPLETION_CALL_TYPES,
    MESSAGES_CALL_TYPES,
    RESPONSES_CALL_TYPES,
    as_dict,
    call_type_name,
)
from .reporting import Reporter
from .streams import Output, assemble, finished_stream, finishes, responses_output

_NOT_ASSEMBLED: Any = object()
"""What `assembled` holds where assembling a stream failed (LiteLLM's builder may give None)."""

_LOGGER_KEYWORDS = ("turn_off_message_logging", "message_logging")
"""What `CustomLogger.__init__` takes besides `**kwargs` (which it ignores)."""


def _check_keywords(kwargs: Mapping[str, Any]) -> None:
    """An unknown keyword is a mistake (`stor=` for `store=`), never passed on to LiteLLM's
    `CustomLogger`, which would swallow it and leave the default in place."""
    unknown = [name for name in kwargs if name not in _LOGGER_KEYWORDS]
    if unknown:
        known = [*inspect.signature(ReasoningCallback.__init__).parameters, *_LOGGER_KEYWORDS]
        known = [k for k in known if k not in ("self", "kwargs")]
        raise TypeError(
            f"ReasoningCallback() got an unexpected keyword argument {unknown[0]!r}"
            f"{did_you_mean(unknown[0], known)}"
        )


class ReasoningCallback(CustomLogger):
    """Keeps every LiteLLM-routed model's reasoning right across requests.

    Args:
        store: a `ReasoningStore`, or a URL (`memory://`, `sqlite:///path`,
            `redis://host:port/db`). Default: an in-memory store.
        namespace: tenant scope for SDK use; a call can set its own with
            `metadata={"reasoning_namespace": ...}`. The proxy adds key, team and end user.
        dialects: `{model pattern: dialect name}` overrides (fnmatch on the model, the
            `provider/model` name or the Router model group).
        policies: `{model pattern: turn policy}` overrides (`current_turn`, `all_turns`,
            `tool_calls_all_turns`, `none`).
        capture_wait_seconds: how long a request waits for the capture of the reply it continues
            when that capture is still running (streams, sync calls).
        max_reasoning_tokens: the most reasoning (estimated tokens) one request carries; earlier
            turns' reasoning is left out oldest first to fit, where the provider allows it.
        count_reasoning_tokens: the estimator for that budget and for the decisions summary
            (default `limits.estimate_tokens`: characters / 4).
        scope_from_client: honour the scope parts a client chooses itself, the end user
            (`user`) and `metadata.reasoning_namespace`. In the proxy the virtual key and team
            are the tenant boundary; these only separate cooperating clients of one key. False:
            only the namespace setting, key and team scope the records.
        legacy_keys: on a SQLite or Redis store, also read tool-call records missing under
            their own key under the keys earlier releases used (0.2.0/0.3.0's, then 0.1.0's),
            and write a marked copy under 0.2.0/0.3.0's (which this release never restores),
            so the previous release and this one sharing a store keep restoring each other's
            records during a rolling upgrade. Turn off once all are upgraded and a TTL passed.
    """

    _litellm_reasoning_callback = True
    """What the patches of LiteLLM look for in `litellm.callbacks` (`patches.registered`)."""

    def __init__(
        self,
        store: ReasoningStore | str | None = None,
        *,
        namespace: str = "default",
        dialects: Mapping[str, str] | None = None,
        policies: Mapping[str, str] | None = None,
        capture_wait_seconds: float = 2.0,
        max_tracked_calls: int = 10_000,
        max_reasoning_tokens: int | None = None,
        count_reasoning_tokens: TokenCounter | None = None,
        scope_from_client: bool = True,
        legacy_keys: bool = True,
        **kwargs: Any,
    ) -> None:
        _check_keywords(kwargs)
        super().__init__(**kwargs)
        self.instance_id = uuid.uuid4().hex
        """Public on purpose: LiteLLM keeps one instance per class and public fields, so a second
        callback (another store, another test) would otherwise never receive events."""
        if isinstance(store, str):
            store = store_from_url(store)
        if max_reasoning_tokens is not None and max_reasoning_tokens < 0:
            raise ValueError("max_reasoning_tokens must be >= 0")
        self._report = Reporter()
        self.engine = Engine(
            store=store if store is not None else MemoryStore(),
            report=self._report,
            namespace=namespace,
            overrides=[
                *parse_overrides(dialects, kind="dialect"),
                *parse_overrides(policies, kind="policy"),
            ],
            capture_wait_seconds=capture_wait_seconds,
            max_reasoning_tokens=max_reasoning_tokens,
            count_tokens=count_reasoning_tokens or estimate_tokens,
            scope_from_client=scope_from_client,
            legacy_keys=legacy_keys,
            pending=PendingCaptures(max_open=max_tracked_calls),
        )
        """The request and reply pipeline and what it keeps between requests."""
        self._tasks: set[asyncio.Task[None]] = set()  # store deletes under way
        patches.apply(self._report.fail, self._render_before_build)

    # ------------------------------------------------------------------ public state

    @property
    def stats(self) -> Counter[str]:
        """What the callback did: restored, stripped, captured, missing, waited, errors."""
        return self._report.stats

    @property
    def store(self) -> ReasoningStore:
        return self.engine.store

    @store.setter
    def store(self, store: ReasoningStore) -> None:
        self.engine.store = store

    @property
    def namespace(self) -> str:
        return self.engine.namespace

    @namespace.setter
    def namespace(self, namespace: str) -> None:
        self.engine.namespace = namespace

    @property
    def overrides(self) -> list[Override]:
        return self.engine.overrides

    @overrides.setter
    def overrides(self, overrides: list[Override]) -> None:
        self.engine.overrides = overrides

    @property
    def capture_wait_seconds(self) -> float:
        return self.engine.capture_wait_seconds

    @capture_wait_seconds.setter
    def capture_wait_seconds(self, seconds: float) -> None:
        self.engine.capture_wait_seconds = seconds

    @property
    def max_reasoning_tokens(self) -> int | None:
        return self.engine.max_reasoning_tokens

    @property
    def scope_from_client(self) -> bool:
        return self.engine.scope_from_client

    @property
    def legacy_keys(self) -> bool:
        return self.engine.legacy_keys

    @property
    def prefix_cache(self) -> PrefixCache:
        """What this process remembers of each conversation's previous request."""
        return self.engine.histories

    @prefix_cache.setter
    def prefix_cache(self, cache: PrefixCache) -> None:
        self.engine.histories = cache

    @property
    def open_captures(self) -> int:
        """Calls whose reply is not captured yet (what a next request may wait for)."""
        return len(self.engine.pending)

    @property
    def active(self) -> bool:
        """Registered in `litellm.callbacks`. LiteLLM keeps replaced instances in its internal
        event lists; a replaced instance must not touch requests any more."""
        return any(cb is self for cb in litellm.callbacks)

    # ------------------------------------------------------------------ request side

    async def async_pre_call_hook(
        self,
        user_api_key_dict: Any,
        cache: Any,
        data: dict[str, Any],
        call_type: Any,
        **_: Any,
    ) -> dict[str, Any] | None:
        """Proxy, before routing. Chat, Responses and Anthropic-format calls are rendered after
        routing (the deployment hook, which also removes `turn`: it must still be there for
        the turn rule); other endpoints get the turn rule's one hard guarantee: `turn` never
        reaches them."""
        with Contained(self._report.fail, "the proxy pre-call hook"):
            if call_type_name(call_type) in pipeline.ENTRIES:
                return None
            for field in ("messages", "input"):
                value = data.get(field)
                if isinstance(value, list):
                    data[field] = without_turn(value)
        return data

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any, **_: Any
    ) -> dict[str, Any] | None:
        """Async SDK, Router and proxy, after routing, on every attempt: retries and fallbacks
        are rendered for the deployment they hit."""
        if not self.active:
            return None
        return await pipeline.dispatch(self.engine, kwargs, call_type_name(call_type))

    async def async_pre_request_hook(
        self, model: str, messages: list[Any], kwargs: dict[str, Any], **_: Any
    ) -> dict[str, Any] | None:
        """Changes nothing. Defined because LiteLLM 1.110+ keeps an async Anthropic-format call
        on its Python path when a callback defines it: its opt-in Rust core (`LITELLM_RUST`)
        runs the deployment hook but not the reply hooks, so a reply would never be captured
        (measured: a dropping client's tool loop then gets Claude's 400)."""
        return None

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any, **_: Any) -> None:
        """Sync calls (and positional-`messages` async calls), and every further attempt of a
        call LiteLLM retries itself: the provider body (`sync_body`)."""
        sync_body.rewrite(
            self.engine, model, messages, kwargs, active=self.active, tasks=self._tasks
        )

    def _render_before_build(
        self, details: Any, messages: Any, optional_params: Any
    ) -> list[Any] | None:
        """A sync call whose body LiteLLM signs before `log_pre_api_call` (Bedrock Converse),
        rendered where a patch sees LiteLLM build it (`sync_body.render_before_build`)."""
        if not self.active:
            return None
        with Contained(self._report.fail, "rendering the request"):
            return sync_body.render_before_build(
                self.engine, details, messages, optional_params, tasks=self._tasks
            )
        return None

    # ------------------------------------------------------------------ reply side

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: Any, call_type: Any, **_: Any
    ) -> Any:
        """Non-streamed async replies, before the caller has them."""
        state = state_of(request_data)
        kind = call_type_name(call_type)
        flow = None
        if kind in COMPLETION_CALL_TYPES:
            flow = capture.capture(self.engine, state, response, details_of(request_data))
        elif kind in RESPONSES_CALL_TYPES:
            call = state.capture if state is not None else None
            if call is not None and call.responses_input and responses_output(response):
                flow = capture.capture(self.engine, state, response)
        elif kind in MESSAGES_CALL_TYPES and isinstance(response, dict):
            flow = blocks_format.capture(
                self.engine,
                state,
                response.get("content"),
                response.get("usage"),
                response.get("model"),
            )
        if flow is not None:
            await adrive(self.engine.store, flow)
        return None

    async def async_post_call_streaming_deployment_hook(
        self, request_data: dict[str, Any], response_chunk: Any, call_type: Any, **_: Any
    ) -> Any:
        """Streams, as each chunk passes (before the caller has it). Chat streams: at the
        provider's finish chunk the reply is captured, so a client that stops reading there (a
        common `break`) still has it kept. Responses streams (native and the chat bridge):
        each finished output item is kept from `response.output_item.done` (the complete
        `encrypted_content`, the copy clients send back), and the reply is captured at
        `response.completed`, before the caller has the last event."""
        with Contained(self._report.fail, "capturing a stream"):
            state = state_of(request_data)
            if state is None or state.capture is None:
                return None
            kind = call_type_name(getattr(response_chunk, "type", None))
            if kind not in ("response.output_item.done", "response.completed"):
                if getattr(response_chunk, "choices", None) is not None and not (
                    state.capture.bridged
                ):
                    assembled = finished_stream(state)
                    if assembled is not None:
                        await adrive(
                            self.engine.store, capture.capture(self.engine, state, assembled)
                        )
                return None
            if kind == "response.output_item.done":
                item = as_dict(getattr(response_chunk, "item", None))
                index = getattr(response_chunk, "output_index", None)
                if item is not None:
                    items_format.keep_streamed_item(state, index, item)
                return None
            output = responses_output(getattr(response_chunk, "response", None)) or []
            output = items_format.streamed_output(state, output)
            await adrive(self.engine.store, capture.capture(self.engine, state, Output(output)))
        return None

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any], **_: Any
    ) -> AsyncGenerator[Any, None]:
        """Proxy streams: the reply is captured from the chunks before the proxy sends `[DONE]`,
        so the client's next request finds it stored, on whichever worker it lands. (Defined on
        this class itself: the proxy skips the hook when it is only inherited.)"""
        engine = self.engine
        state = state_of(request_data)
        chunks: list[Any] = []
        finished = False
        sse: list[str] = []  # `/v1/messages`: the raw SSE text so far
        try:
            async for chunk in response:
                chunks.append(chunk)
                if state is not None and isinstance(chunk, bytes | str):
                    await adrive(engine.store, blocks_format.read_sse(engine, state, sse, chunk))
                yield chunk
            finished = True
        finally:
            if not finished and state is not None:
                # The client went away (or the stream broke): nothing partial is stored (also
                # not from LiteLLM's success event for the cut stream), and a next request of
                # the conversation need not wait for a capture that never comes.
                state.claim(engine)
                engine.pending.close(state.id)
        if state is None or state.capture is None or state.captured or not chunks:
            # Captured already: at the finish chunk by the deployment's streaming hook (which
            # also runs in the proxy), so the reply is not assembled a second time.
            return
        if isinstance(chunks[0], bytes | str):
            # Raw SSE (the proxy's Anthropic-format `/v1/messages`): not LiteLLM chunks, so not
            # assembled here; never an error for a normal request.
            return
        if not any(map(finishes, chunks)):
            # Ended without the provider's finish: a cut stream is not a reply to keep.
            state.claim(engine)
            engine.pending.close(state.id)
            return
        assembled = _NOT_ASSEMBLED
        with Contained(self._report.fail, "assembling a proxy stream"):
            assembled = assemble(chunks)
        if assembled is _NOT_ASSEMBLED:
            return
        await adrive(engine.store, capture.capture(engine, state, assembled, chunks))

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        """Streams and replies the deployment hook did not capture (after the caller has them:
        a next request of the conversation waits briefly for it)."""
        state = state_in(kwargs)
        if state is not None and state.messages_format:
            # An Anthropic-format reply: streamed through the SDK (the proxy's and the JSON
            # ones are captured already); LiteLLM's chat-shaped copy here is not its blocks.
            flow = blocks_format.capture_collected(self.engine, state)
        else:
            flow = capture.capture(self.engine, state, response_obj, kwargs)
        await adrive(self.engine.store, flow)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        drive(
            self.engine.store, capture.capture(self.engine, state_in(kwargs), response_obj, kwargs)
        )

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        """A refusal of what the callback restored: never restored again (`refusals`)."""
        await adrive(self.engine.store, refusals.failed(self.engine, kwargs))

    def log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any, **_: Any
    ) -> None:
        drive(self.engine.store, refusals.failed(self.engine, kwargs))


__all__ = ["ReasoningCallback", "TurnPolicy"]
