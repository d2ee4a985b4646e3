"""LiteLLM's streams as the callback reads them: whether the provider finished one, its reply
assembled, and a reply's Responses output items."""

from __future__ import annotations

from typing import Any

import litellm

from .calls import CallState
from .kwargs import as_dict


def finishes(chunk: Any) -> bool:
    """A stream chunk carrying the provider's finish."""
    return any(
        getattr(choice, "finish_reason", None) is not None
        for choice in getattr(chunk, "choices", None) or ()
    )


def stream_finished(wrapper: Any) -> bool:
    """The provider sent its finish on this LiteLLM stream (each provider path of LiteLLM's
    stream wrapper records it in one of these)."""
    for name in (
        "received_finish_reason",
        "intermittent_finish_reason",
        "received_any_finish_reason",
    ):
        if getattr(wrapper, name, None):
            return True
    return any(map(finishes, getattr(wrapper, "chunks", None) or ()))


def assemble(chunks: list[Any]) -> Any:
    """LiteLLM's reply of a stream's chunks."""
    return litellm.stream_chunk_builder(chunks=chunks)


def finished_stream(state: CallState) -> Any:
    """The assembled reply of a stream whose provider finished, when its capture was not made
    yet (a client that stopped reading at the finish chunk, or LiteLLM's success event still
    queued behind other logging); None otherwise. A stream the client already let go of is read
    from its chunk list (kept by the call state), finished when a chunk carries the finish."""
    if state.captured:
        return None
    wrapper = state.stream() if state.stream is not None else None
    if wrapper is not None:
        if not stream_finished(wrapper):
            return None
        return assemble(list(getattr(wrapper, "chunks", None) or ()))
    chunks = list(state.stream_chunks) if state.stream_chunks is not None else []
    if not any(map(finishes, chunks)):
        return None
    return assemble(chunks)


def stream_chunks(state: CallState) -> list[Any] | None:
    """The chunks LiteLLM's stream of this call holds (None: not streamed, or gone)."""
    wrapper = state.stream() if state.stream is not None else None
    if wrapper is not None:
        return list(getattr(wrapper, "chunks", None) or ())
    return list(state.stream_chunks) if state.stream_chunks is not None else None


def responses_output(response: Any) -> list[dict[str, Any]] | None:
    """The output items of a Responses reply (None: not one)."""
    if response is None or getattr(response, "choices", None):
        return None
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        return None
    return [item for item in map(as_dict, output) if item is not None]


def may_capture(state: CallState, response: Any) -> bool:
    """A streamed reply is kept only when its provider finished it; a stream LiteLLM no
    longer holds cannot be asked (kept, as before the stream was watched)."""
    capture = state.capture
    if capture is None or capture.responses_input or capture.bridged:
        return True  # Responses replies are complete at `response.completed`
    if responses_output(response) is not None:
        return True
    wrapper = state.stream() if state.stream is not None else None
    return wrapper is None or stream_finished(wrapper)


class Output:
    """A Responses reply's output items, as the capture reads them."""

    def __init__(self, output: list[dict[str, Any]]) -> None:
        self.output = output


class OneMessage:
    """One assistant message, as the capture reads a chat reply."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.choices = [type("_Choice", (), {"message": message})()]
