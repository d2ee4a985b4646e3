"""OpenRouter's streamed `reasoning_details`, which LiteLLM's assembled stream loses: put back
on the reply's message from what the call's stream fed (`stream.StreamedDetails`)."""

from __future__ import annotations

from typing import Any

from .._base import BaseAdapter, CallParts
from .stream import StreamedDetails


class OpenRouterAdapter(BaseAdapter):
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
