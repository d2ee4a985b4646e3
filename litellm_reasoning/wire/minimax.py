"""MiniMax M2.x / M3 (`minimax/`): with `reasoning_split` the thinking comes as
`reasoning_details` and goes back there, unmodified, on every assistant message (MiniMax's
function-call guide: send back everything each response held, above all its thinking; MiniMax
reports large quality losses when interleaved thinking is dropped). Without
`reasoning_split` the thinking comes inside `content` as `<think>…</think>`, which MiniMax wants
back whole; LiteLLM splits it off into `reasoning_content` (exactly: the text between the tags,
the rest after them), so it goes back as it came: `<think>` + text + `</think>` + content.
LiteLLM keeps the details in `provider_specific_fields` on replies and passes a top-level
`reasoning_details` to the wire (1.106.12, 1.110.2); from a stream it keeps none, so they are
merged from the raw deltas as OpenRouter's are.

Only details MiniMax issued (or the client kept) go back. Pure: no LiteLLM, no I/O."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from ..core.reasoning import Reasoning
from ._base import BaseDialect, strip_reasoning
from .openrouter.dialect import details_of

ISSUER = "minimax"
THINK, END_THINK = "<think>", "</think>"


class MinimaxDialect(BaseDialect):
    name: ClassVar[str] = "minimax"
    # LiteLLM yields no chunk of a stream's `reasoning_details` (1.106.12-1.110.2); MiniMax
    # streams each detail's text in increments (MiniMax-AI/MiniMax-M2 issue #95).
    streams_details_apart: ClassVar[bool] = True

    def accepts(self, reasoning: Reasoning) -> bool:
        if reasoning.provider not in (None, ISSUER):
            return False
        return details_of(reasoning) is not None or all(
            part.kind == "thinking" and not part.signature and not part.data
            for part in reasoning.parts
        )

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        if reasoning is None or not self.accepts(reasoning):
            return out
        details = details_of(reasoning)
        if details is not None:
            out["reasoning_details"] = copy.deepcopy(details)
            return out
        content = out.get("content")
        text = content if isinstance(content, str) else ""
        if (content is None or isinstance(content, str)) and not text.startswith(THINK):
            out["content"] = f"{THINK}{reasoning.text}{END_THINK}{text}"
        return out
