"""OpenRouter's streamed `reasoning_details`, which LiteLLM's assembled stream loses: fed from
each raw chunk of the call's stream (`stream.StreamedDetails`), put back on the reply's message
at the capture."""

from __future__ import annotations

from typing import Any

from .._base import BaseAdapter, CallParts
from .stream import StreamedDetails


class OpenRouterAdapter(BaseAdapter):
    def watch_raw_stream(self, parts: CallParts) -> None:
        parts.part(StreamedDetails)

    def read_raw_chunk(self, parts: CallParts, chunk: dict[str, Any]) -> None:
        details = parts.peek(StreamedDetails)
        if details is None:
            return
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            details.feed(
                choice.get("index", 0),
                delta.get("reasoning_details"),
                finished=choice.get("finish_reason") is not None,
            )

    def complete_message(
        self, message: dict[str, Any], choice: Any, number: int, parts: CallParts
    ) -> None:
        """A streamed reply whose details were fed (OpenRouter, or a target whose stream
        LiteLLM parses as OpenAI's): its merged `reasoning_details` on `message` (only when
        complete; LiteLLM's assembled message has none)."""
        streamed = parts.peek(StreamedDetails)
        if streamed is None:
            return
        psf = message.get("provider_specific_fields")
        if message.get("reasoning_details") or (
            isinstance(psf, dict) and psf.get("reasoning_details")
        ):
            return
        index = getattr(choice, "index", None)
        details = streamed.take(index if isinstance(index, int) else number)
        if details:
            message["reasoning_details"] = details
