"""Mistral: reasoning as a `thinking` chunk at the start of the assistant message's content.

Magistral (and the newer reasoning_effort models) answer with content chunks
`{"type": "thinking", "thinking": [{"type": "text", "text": …}]}` before the text, and take the
same chunk back, closed: `{"type": "thinking", "thinking": [...], "closed": true}` (provider rules
§9; what LiteLLM 1.110.2 itself renders from `reasoning_content`). No signatures. Mistral answers
422 on unknown message fields, so no reasoning field ever stays on a message.

LiteLLM 1.106.12 strips `reasoning_content` and flattens list content to its text, so the chunk
cannot survive its translation; the callback therefore also puts the rendered content on the
body LiteLLM built (`patch_wire`), which 1.110.2 already matches. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.reasoning import Reasoning
from ._base import BaseDialect, strip_reasoning


def thinking_chunk(text: str) -> dict[str, Any]:
    """A closed Mistral thinking chunk holding `text`."""
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}], "closed": True}


def is_thinking_chunk(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "thinking"


def _content_parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [part for part in content if not is_thinking_chunk(part)]
    return []


class MistralDialect(BaseDialect):
    """The reasoning text as a leading closed thinking chunk in `content`; nothing else."""

    name: ClassVar[str] = "mistral"
    patches_body: ClassVar[bool] = True
    patches_wire: ClassVar[bool] = True
    """Async calls too get `patch_wire` on the provider body (LiteLLM 1.106 loses the chunk)."""

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        text = reasoning.text if reasoning is not None else ""
        if text:
            out["content"] = [thinking_chunk(text), *_content_parts(message.get("content"))]
        return out

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        """`sent` (the Mistral body's message, built by LiteLLM) with `want`'s thinking chunk.

        Only the thinking chunk is taken from `want`: LiteLLM's own translation of the rest of
        the message (tool calls, dropped fields) stays as it built it.
        """
        out = strip_reasoning(sent)
        content = want.get("content")
        chunks = [p for p in content if is_thinking_chunk(p)] if isinstance(content, list) else []
        text = _only_text(_content_parts(sent.get("content")))
        if chunks:
            rest = [{"type": "text", "text": text}] if text else []
            parts = rest if text is not None else _content_parts(sent.get("content"))
            out["content"] = [*chunks, *parts]
        elif text is not None and isinstance(out.get("content"), list):
            # LiteLLM 1.110 renders kept text as parts; without a chunk it sends a string.
            out["content"] = text
        return out


def _only_text(parts: list[Any]) -> str | None:
    """The joined text of `parts` when they are all text parts (how LiteLLM 1.110 sends them)."""
    if not all(isinstance(p, dict) and p.get("type") == "text" for p in parts):
        return None
    return "".join(str(p.get("text") or "") for p in parts)
