"""Claude around LiteLLM: its replies as the LiteLLM layer reads them (where the blocks stood,
from the raw body or the stream's chunks, and what the API says it transformed), and the
Bedrock Converse block LiteLLM 1.106 cannot make (`redacted_thinking`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from .._base import BaseAdapter, ReplyRead
from .body import input_transformations, raw_reply, reply_layout
from .dialect import CLAUDE_PROVIDERS, bedrock_redacted_content


class ClaudeAdapter(BaseAdapter):
    providers: ClassVar[frozenset[str]] = CLAUDE_PROVIDERS
    reads_stream: ClassVar[bool] = True  # the order of a streamed reply's blocks

    def read_reply(
        self, response: Any, raw_details: Any, chunks: Sequence[Any] | None
    ) -> ReplyRead:
        raw = raw_reply(raw_details)
        return ReplyRead(reply_layout(chunks, raw), tuple(input_transformations(response, raw)))

    def converse_block(self, block: Any) -> dict[str, Any] | None:
        """Claude's `redacted_thinking` on Bedrock Converse, which LiteLLM 1.106 turns into an
        empty unsigned `reasoningText` and drops (1.110 sends it this way)."""
        redacted = isinstance(block, dict) and block.get("type") == "redacted_thinking"
        data = block.get("data") if redacted else None
        if not isinstance(data, str) or not data:
            return None
        return {"reasoningContent": {"redactedContent": bedrock_redacted_content(data)}}
