"""The patches of LiteLLM internals, each applied once per process (LiteLLM's classes are
process-wide, so every callback instance shares them), each guarded so it never breaks a call:

* `send_bedrock_redacted_thinking`: LiteLLM 1.106.x drops Claude's `redacted_thinking` on
  Bedrock Converse (1.110 sends it); without it a tool loop whose reply had one cannot go on;
* `watch_streams`: ties each LiteLLM stream to its call's state (whether the provider finished
  it, and OpenRouter's raw streamed `reasoning_details`, which LiteLLM drops);
* `keep_messages_stream_bytes`: an Anthropic-format SDK stream's SSE bytes, which LiteLLM turns
  into a chat-shaped reply before any hook sees it (the blocks' order and kind lost), are kept
  on the call's state for the capture;
* `build_bedrock_bodies`: Bedrock bodies (Converse, and Claude's on the invoke route) are
  serialised and SigV4-signed inside LiteLLM before any hook sees them, so Claude's blocks are
  put in their original order where LiteLLM builds them, and a sync call (no hook before that)
  is rendered just before;
* `run_on_no_log`: LiteLLM's `no-log` request flag skips every logging callback, and this one's
  success and failure events are not logging: they capture the reply the next request needs and
  heal a refusal (without them a `no-log` client's resend is refused again for the same block).
  For a registered `ReasoningCallback` alone, `no-log` is not read; every other callback,
  `litellm.global_disable_no_log_param` and the per-request disabling headers are as LiteLLM
  has them.

`LITELLM_REASONING_PATCH_LITELLM=false` turns them off (then redacted Claude blocks are not sent
on Bedrock with LiteLLM 1.106, a client that stops reading a stream at its finish chunk is not
captured, OpenRouter streams lose their signed details, Bedrock Claude's interleaved blocks go
back regrouped (a 400), a sync Bedrock call restores nothing and a `no-log` request's reply is
not captured nor its refusal healed)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

from ..core.spelling import boolean
from ..wire import converse_block, read_raw_chunk, watch_raw_stream
from .blocks_format import keep_stream_bytes
from .calls import CallState, state_in
from .fallback import Contained

logger = logging.getLogger("litellm_reasoning")

SWITCH = "LITELLM_REASONING_PATCH_LITELLM"


def enabled() -> bool:
    """The patches are on unless the environment turns them off; a value that is not one of
    true/false/1/0/yes/no is an error naming the variable (not silently "on")."""
    value = os.environ.get(SWITCH, "true")
    try:
        return boolean(value)
    except ValueError as exc:
        raise ValueError(f"{SWITCH}={value!r}: {exc}") from None


Fail = Callable[[str, BaseException], None]
BeforeBuild = Callable[[Any, Any, Any], Any]
"""(logging details, messages, optional params) -> the messages to build the body from, or
None to leave them: a callback's sync rendering (`sync_body.render_before_build`)."""

_BEFORE_BUILD: list[weakref.WeakMethod[BeforeBuild]] = []
_FAILS: list[weakref.WeakMethod[Fail]] = []


MARK = "_litellm_reasoning_callback"
"""An attribute `ReasoningCallback` instances carry: what `registered` looks for."""


def registered() -> bool:
    """Whether a litellm-reasoning callback is in `litellm.callbacks`. Every patch does its
    work only then: installed once per process (the first sync Bedrock call needs them before
    any hook runs), they leave LiteLLM's own behaviour untouched until a callback is
    registered, and again after it is removed."""
    import litellm

    return any(getattr(cb, MARK, False) for cb in litellm.callbacks)


def apply(fail: Fail, before_build: BeforeBuild | None = None) -> None:
    """Every patch, unless turned off; a patch that fails is reported to `fail` and skipped.
    `before_build`, a bound method of the callback, renders sync calls where a patch builds
    the provider body (the callback's other hooks come too late there)."""
    if not enabled():
        return
    with _BUILD_LOCK:
        if inspect.ismethod(fail):
            _FAILS[:] = [m for m in _FAILS if m() is not None] + [weakref.WeakMethod(fail)]
        if inspect.ismethod(before_build):
            _BEFORE_BUILD[:] = [m for m in _BEFORE_BUILD if m() is not None]
            _BEFORE_BUILD.append(weakref.WeakMethod(before_build))
    for patch, what in (
        (send_bedrock_redacted_thinking, "teaching LiteLLM's Bedrock converter redacted thinking"),
        (watch_streams, "watching LiteLLM's streams"),
        (keep_messages_stream_bytes, "keeping Anthropic-format stream bytes"),
        (build_bedrock_bodies, "laying out Bedrock bodies"),
        (run_on_no_log, "running on no-log requests"),
    ):
        with Contained(fail, what):
            patch()


_BEDROCK_FIX_LOCK = threading.Lock()


def send_bedrock_redacted_thinking() -> None:
    """Make LiteLLM 1.106.x send `redacted_thinking` to Bedrock Converse.

    LiteLLM 1.106.12 turns a redacted block into an empty, unsigned `reasoningText` and then
    drops it, so a Claude tool loop whose reply had one can never be continued (Claude needs
    the block back). The Converse body is signed (SigV4) before any callback hook can see it,
    so it cannot be patched per request; instead LiteLLM's block converter is wrapped once to
    emit `reasoningContent.redactedContent`, as LiteLLM 1.110 does. A LiteLLM whose converter
    already knows redacted blocks (it takes `to_claude`, 1.110+) is left alone.
    """
    import inspect

    from litellm.litellm_core_utils.prompt_templates import factory

    processor = getattr(factory, "BedrockConverseMessagesProcessor", None)
    convert = getattr(processor, "translate_thinking_blocks_to_reasoning_content_blocks", None)
    if processor is None or convert is None or getattr(convert, "_litellm_reasoning", False):
        return
    with _BEDROCK_FIX_LOCK:
        convert = processor.translate_thinking_blocks_to_reasoning_content_blocks
        if getattr(convert, "_litellm_reasoning", False):
            return
        try:
            if "to_claude" in inspect.signature(convert).parameters:
                return
        except (TypeError, ValueError):
            return
        original = convert

        @functools.wraps(original)
        def translate(thinking_blocks: list[Any]) -> list[Any]:
            if not registered():
                unchanged: list[Any] = original(thinking_blocks)
                return unchanged
            out: list[Any] = []
            for block in thinking_blocks:
                made = converse_block(block)
                if made is not None:
                    out.append(made)
                else:
                    out += original([block])
            return out

        translate._litellm_reasoning = True  # type: ignore[attr-defined]
        processor.translate_thinking_blocks_to_reasoning_content_blocks = staticmethod(translate)
        logger.debug("litellm-reasoning: LiteLLM's Bedrock converter now sends redacted_thinking")


_NO_LOG_LOCK = threading.Lock()


def run_on_no_log() -> None:
    """Let LiteLLM call a registered `ReasoningCallback`'s events on a `no-log` request (once
    per process): `Logging.should_run_callback` is asked without the flag for it alone."""
    from litellm.litellm_core_utils.litellm_logging import Logging

    with _NO_LOG_LOCK:
        should_run = Logging.should_run_callback
        if getattr(should_run, "_litellm_reasoning", False):
            return

        @functools.wraps(should_run)
        def should_run_callback(
            self: Any, callback: Any, litellm_params: Any, event_hook: str
        ) -> bool:
            if (
                getattr(callback, MARK, False)
                and isinstance(litellm_params, dict)
                and litellm_params.get("no-log") is True
                and registered()
            ):
                litellm_params = {k: v for k, v in litellm_params.items() if k != "no-log"}
            return bool(should_run(self, callback, litellm_params, event_hook))

        should_run_callback._litellm_reasoning = True  # type: ignore[attr-defined]
        Logging.should_run_callback = should_run_callback


_STREAM_WATCH_LOCK = threading.Lock()


def watch_streams() -> None:
    """Tie each LiteLLM stream to its call's state (once per process).

    Two things are read from the stream itself, per call and never from a process-wide table:
    whether the provider finished it (a stream cut before its finish is never stored, and one a
    client stopped reading at its finish chunk is still captured), and OpenRouter's raw
    `reasoning_details`, which LiteLLM (1.106.12 and 1.110.2) keeps on the chunks it yields but
    drops from the chunk carrying only a Claude signature and from the assembled stream, so they
    are read where OpenRouter's chunks are parsed.
    """
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
    from litellm.llms.openai.chat.gpt_transformation import OpenAIChatCompletionStreamingHandler
    from litellm.llms.openrouter.chat import transformation

    handler = transformation.OpenRouterChatCompletionStreamingHandler
    with _STREAM_WATCH_LOCK:
        init = CustomStreamWrapper.__init__
        if not getattr(init, "_litellm_reasoning", False):

            @functools.wraps(init)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                init(self, *args, **kwargs)
                if not registered():
                    return
                with contextlib.suppress(Exception):  # watching must never break the stream
                    logging_obj = getattr(self, "logging_obj", None)
                    state = state_in(getattr(logging_obj, "model_call_details", None))
                    # The first wrapper is the provider's stream; a Router may wrap it again.
                    if state is not None and (state.stream is None or state.stream() is None):
                        state.stream = weakref.ref(self)
                        chunks = getattr(self, "chunks", None)
                        state.stream_chunks = chunks if isinstance(chunks, list) else None
                        stream = getattr(self, "completion_stream", None)
                        if isinstance(stream, handler) or (
                            isinstance(stream, OpenAIChatCompletionStreamingHandler)
                            and _details_apart(state)
                        ):
                            watch_raw_stream(state)
                            stream._litellm_reasoning_state = state

            __init__._litellm_reasoning = True  # type: ignore[attr-defined]
            CustomStreamWrapper.__init__ = __init__

        for parsing in (handler, OpenAIChatCompletionStreamingHandler):
            if not getattr(parsing.chunk_parser, "_litellm_reasoning", False):
                parsing.chunk_parser = _feeding_details(parsing.chunk_parser)


def _details_apart(state: CallState) -> bool:
    """Whether the call's target is one whose streamed `reasoning_details` LiteLLM drops."""
    target = state.rendered_for
    return target is not None and target.dialect.streams_details_apart


def _feeding_details(parse: Callable[[Any, dict[str, Any]], Any]) -> Any:
    """`parse` (a stream handler's `chunk_parser`) handing each raw chunk to the adapters that
    read them (`wire.read_raw_chunk`: OpenRouter's `reasoning_details`), for a stream tied to a
    call (`watch_streams`)."""

    @functools.wraps(parse)
    def chunk_parser(self: Any, chunk: dict[str, Any]) -> Any:
        with contextlib.suppress(Exception):  # watching must never break the stream
            state = getattr(self, "_litellm_reasoning_state", None)
            if isinstance(state, CallState):
                read_raw_chunk(state, chunk)
        return parse(self, chunk)

    chunk_parser._litellm_reasoning = True  # type: ignore[attr-defined]
    return chunk_parser


_MESSAGES_STREAM_LOCK = threading.Lock()
_ROUTERS = ("route_streaming_logging_to_handler", "_route_streaming_logging_to_handler")
"""The names under which LiteLLM's stream logging is reached (one function, two names)."""


def keep_messages_stream_bytes() -> None:
    """Keep each Anthropic-format SDK stream's collected SSE bytes on its call's state, where
    LiteLLM (1.106 to 1.110) hands them to its stream logging (once per process)."""
    try:
        from litellm.proxy.pass_through_endpoints.streaming_handler import (
            PassThroughStreamingHandler,
        )
    except ImportError:  # LiteLLM without its proxy extra cannot stream this route either
        return
    with _MESSAGES_STREAM_LOCK:
        original = getattr(PassThroughStreamingHandler, _ROUTERS[0])
        if getattr(original, "_litellm_reasoning", False):
            return

        @functools.wraps(original)
        async def route(*args: Any, **kwargs: Any) -> Any:
            if not registered():
                return await original(*args, **kwargs)
            with contextlib.suppress(Exception):  # never breaks the stream's logging
                logging_obj = kwargs.get("litellm_logging_obj", args[0] if args else None)
                raw = kwargs.get("raw_bytes")
                state = state_in(getattr(logging_obj, "model_call_details", None))
                if state is not None and state.messages_format and raw is not None:
                    keep_stream_bytes(state, raw)
            return await original(*args, **kwargs)

        route._litellm_reasoning = True  # type: ignore[attr-defined]
        for name in _ROUTERS:
            if hasattr(PassThroughStreamingHandler, name):
                setattr(PassThroughStreamingHandler, name, staticmethod(route))


_BUILD_LOCK = threading.Lock()
_BUILDING: contextvars.ContextVar[CallState | None] = contextvars.ContextVar(
    "litellm_reasoning_converse_call", default=None
)
"""The call whose Converse body LiteLLM is building (set around its handler's work)."""


def _report(what: str, exc: BaseException) -> None:
    for method in _FAILS:
        fail = method()
        if fail is not None:
            fail(what, exc)
            return
    logger.warning("litellm-reasoning: %s failed (%s); the request goes on", what, exc)


def _render_before_build(kwargs: dict[str, Any]) -> None:
    """A sync call: rendered by the first live callback that takes it (in `kwargs`, the
    handler's keyword arguments: its messages replaced, its optional params edited)."""
    details = getattr(kwargs.get("logging_obj"), "model_call_details", None)
    for method in list(_BEFORE_BUILD):
        render = method()
        if render is None:
            continue
        messages = render(details, kwargs.get("messages"), kwargs.get("optional_params"))
        if messages is not None:
            kwargs["messages"] = messages
            return


def _lay_out(body: Any, converse: bool) -> None:
    """The provider body LiteLLM just built for the call being built (Bedrock Converse's, or
    the Anthropic body of Bedrock's invoke route): Claude's blocks where they stood in each
    reply (the call's `BodyPatch`, made with the rendered messages)."""
    state = _BUILDING.get()
    patch = state.body_patch if state is not None else None
    if patch is None or not patch.layouts or not isinstance(body, dict):
        return
    with Contained(_report, "laying out Claude's blocks on the Bedrock body"):
        dialect = patch.dialect
        if not dialect.patches_body:  # a body patched message by message is not laid out
            dialect.lay_out(body, patch.messages, patch.layouts, converse=converse)


async def _building(call: Coroutine[Any, Any, Any], state: CallState) -> Any:
    token = _BUILDING.set(state)
    try:
        return await call
    finally:
        _BUILDING.reset(token)


def _binding(handle: Callable[..., Any], applies: Callable[[dict[str, Any]], bool]) -> Any:
    """`handle` (a LiteLLM provider handler's `completion`) with its call's state known while
    it builds the body (also inside the coroutine it returns for an async call), and a sync
    call rendered first; calls `applies` says no to pass straight through."""

    @functools.wraps(handle)
    def completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not applies(kwargs) or not registered():
            return handle(self, *args, **kwargs)
        state = None
        with Contained(_report, "rendering the Bedrock request"):
            if not kwargs.get("acompletion"):
                _render_before_build(kwargs)
            logging_obj = kwargs.get("logging_obj")
            state = state_in(getattr(logging_obj, "model_call_details", None))
        token = _BUILDING.set(state)
        try:
            result = handle(self, *args, **kwargs)
        finally:
            _BUILDING.reset(token)
        if state is not None and inspect.iscoroutine(result):
            return _building(result, state)  # built when the caller awaits it
        return result

    return completion


def _laying_out(build: Callable[..., Any], *, converse: bool) -> Any:
    if inspect.iscoroutinefunction(build):

        @functools.wraps(build)
        async def abuilt(self: Any, *args: Any, **kwargs: Any) -> Any:
            body = await build(self, *args, **kwargs)
            _lay_out(body, converse)
            return body

        return abuilt

    @functools.wraps(build)
    def built(self: Any, *args: Any, **kwargs: Any) -> Any:
        body = build(self, *args, **kwargs)
        _lay_out(body, converse)
        return body

    return built


def build_bedrock_bodies() -> None:
    """Wrap LiteLLM's Bedrock handlers and body builders (once per process): the call's state
    is known while its body is built, a sync call is rendered first, and the built body gets
    Claude's blocks in their original order before LiteLLM signs it. Converse
    (`BedrockConverseLLM`, `AmazonConverseConfig`) and the invoke route (LiteLLM's HTTP
    handler for `bedrock`, `AmazonAnthropicClaudeConfig`)."""
    import litellm
    from litellm.llms.bedrock.chat.converse_handler import BedrockConverseLLM
    from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig
    from litellm.llms.custom_httpx.llm_http_handler import BaseLLMHTTPHandler

    invoke_config = litellm.AmazonAnthropicClaudeConfig
    with _BUILD_LOCK:
        if getattr(BedrockConverseLLM.completion, "_litellm_reasoning", False):
            return
        replacements: tuple[tuple[Any, str, Any], ...] = (
            (BedrockConverseLLM, "completion", _binding(BedrockConverseLLM.completion, _always)),
            (BaseLLMHTTPHandler, "completion", _binding(BaseLLMHTTPHandler.completion, _bedrock)),
            (
                AmazonConverseConfig,
                "_transform_request",
                _laying_out(AmazonConverseConfig._transform_request, converse=True),
            ),
            (
                AmazonConverseConfig,
                "_async_transform_request",
                _laying_out(AmazonConverseConfig._async_transform_request, converse=True),
            ),
            (
                invoke_config,
                "transform_request",
                _laying_out(invoke_config.transform_request, converse=False),
            ),
        )
        for owner, name, function in replacements:
            function._litellm_reasoning = True
            setattr(owner, name, function)


def _always(kwargs: dict[str, Any]) -> bool:
    return True


def _bedrock(kwargs: dict[str, Any]) -> bool:
    return kwargs.get("custom_llm_provider") == "bedrock"
