"""Claude's replies as the LiteLLM layer reads them: where the blocks stood (from the raw body
or the stream's chunks) and what the API says it transformed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from .._base import BaseAdapter, ReplyRead
from .body import input_transformations, raw_reply, reply_layout
from .dialect import CLAUDE_PROVIDERS


class ClaudeAdapter(BaseAdapter):
    providers: ClassVar[frozenset[str]] = CLAUDE_PROVIDERS
    reads_stream: ClassVar[bool] = True  # the order of a streamed reply's blocks

    def read_reply(
        self, response: Any, raw_details: Any, chunks: Sequence[Any] | None
    ) -> ReplyRead:
        raw = raw_reply(raw_details)
        return ReplyRead(reply_layout(chunks, raw), tuple(input_transformations(response, raw)))
