"""The patches of LiteLLM internals, each applied once per process (LiteLLM's classes are
process-wide, so every callback instance shares them), each guarded so it never breaks a call:

* `send_bedrock_redacted_thinking`: LiteLLM 1.106.x drops Claude's `redacted_thinking` on
  Bedrock Converse (1.110 sends it); without it a tool loop whose reply had one cannot go on;
* `watch_streams`: ties each LiteLLM stream to its call's state (whether the provider finished
  it, and OpenRouter's raw streamed `reasoning_details`, which LiteLLM drops);
* `keep_messages_stream_bytes`: an Anthropic-format SDK stream's SSE bytes, which LiteLLM turns
  into a chat-shaped reply before any hook sees it (the blocks' order and kind lost), are kept
  on the call's state for the capture.

`LITELLM_REASONING_PATCH_LITELLM=false` turns both off (then redacted Claude blocks are not sent
on Bedrock with LiteLLM 1.106, a client that stops reading a stream at its finish chunk is not
captured, and OpenRouter streams lose their signed details)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..wire.anthropic.dialect import bedrock_redacted_content
from ..wire.openrouter.stream import StreamedDetails
from .calls import CallState, state_in

logger = logging.getLogger("litellm_reasoning")

SWITCH = "LITELLM_REASONING_PATCH_LITELLM"


def enabled() -> bool:
    """The patches are on unless the environment turns them off."""
    return os.environ.get(SWITCH, "true").strip().lower() not in ("0", "false", "no", "off")


def apply(fail: Callable[[str, BaseException], None]) -> None:
    """Every patch, unless turned off; a patch that fails is reported to `fail` and skipped."""
    if not enabled():
        return
    for patch, what in (
        (send_bedrock_redacted_thinking, "teaching LiteLLM's Bedrock converter redacted thinking"),
        (watch_streams, "watching LiteLLM's streams"),
        (keep_messages_stream_bytes, "keeping Anthropic-format stream bytes"),
    ):
        try:
            patch()
        except Exception as exc:
            fail(what, exc)


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

        def translate(thinking_blocks: list[Any]) -> list[Any]:
            out: list[Any] = []
            for block in thinking_blocks:
                redacted = isinstance(block, dict) and block.get("type") == "redacted_thinking"
                data = block.get("data") if redacted else None
                if isinstance(data, str) and data:
                    out.append(
                        {"reasoningContent": {"redactedContent": bedrock_redacted_content(data)}}
                    )
                else:
                    out += original([block])
            return out

        translate._litellm_reasoning = True  # type: ignore[attr-defined]
        processor.translate_thinking_blocks_to_reasoning_content_blocks = staticmethod(translate)
        logger.debug("litellm-reasoning: LiteLLM's Bedrock converter now sends redacted_thinking")


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
    from litellm.llms.openrouter.chat import transformation

    handler = transformation.OpenRouterChatCompletionStreamingHandler
    with _STREAM_WATCH_LOCK:
        init = CustomStreamWrapper.__init__
        if not getattr(init, "_litellm_reasoning", False):

            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                init(self, *args, **kwargs)
                with contextlib.suppress(Exception):  # watching must never break the stream
                    logging_obj = getattr(self, "logging_obj", None)
                    state = state_in(getattr(logging_obj, "model_call_details", None))
                    # The first wrapper is the provider's stream; a Router may wrap it again.
                    if state is not None and (state.stream is None or state.stream() is None):
                        state.stream = weakref.ref(self)
                        stream = getattr(self, "completion_stream", None)
                        if isinstance(stream, handler):
                            state.streamed_details = StreamedDetails()
                            stream._litellm_reasoning_state = state

            __init__._litellm_reasoning = True  # type: ignore[attr-defined]
            CustomStreamWrapper.__init__ = __init__

        parse = handler.chunk_parser
        if getattr(parse, "_litellm_reasoning", False):
            return

        def chunk_parser(self: Any, chunk: dict[str, Any]) -> Any:
            with contextlib.suppress(Exception):  # watching must never break the stream
                state = getattr(self, "_litellm_reasoning_state", None)
                details = state.streamed_details if isinstance(state, CallState) else None
                if details is not None:
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        details.feed(
                            choice.get("index", 0),
                            delta.get("reasoning_details"),
                            finished=choice.get("finish_reason") is not None,
                        )
            return parse(self, chunk)

        chunk_parser._litellm_reasoning = True  # type: ignore[attr-defined]
        handler.chunk_parser = chunk_parser


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

        async def route(*args: Any, **kwargs: Any) -> Any:
            with contextlib.suppress(Exception):  # never breaks the stream's logging
                logging_obj = kwargs.get("litellm_logging_obj", args[0] if args else None)
                raw = kwargs.get("raw_bytes")
                state = state_in(getattr(logging_obj, "model_call_details", None))
                if state is not None and state.messages_format and raw is not None:
                    state.raw_sse = [bytes(piece) for piece in raw]
            return await original(*args, **kwargs)

        route._litellm_reasoning = True  # type: ignore[attr-defined]
        for name in _ROUTERS:
            if hasattr(PassThroughStreamingHandler, name):
                setattr(PassThroughStreamingHandler, name, staticmethod(route))
