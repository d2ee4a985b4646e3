"""Read the reasoning a message dict carries, in any of the shapes LiteLLM and clients use.

The same reader serves replies (a LiteLLM `Message` dumped to a dict) and request messages a
client sent back with their reasoning still on them. Pure: dicts in, `Reasoning` out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .types import Reasoning, ReasoningPart

TEXT_FIELDS = ("reasoning_content", "reasoning", "thinking")
"""Plain-text reasoning fields, in order of preference: OpenAI-compatible servers (DeepSeek,
Kimi, Qwen, GLM), vLLM / OpenRouter / Groq / Cerebras, Ollama."""

BLOCK_TYPES = ("thinking", "redacted_thinking")


def _block_part(block: Any) -> ReasoningPart | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "thinking":
        text = block.get("thinking")
        signature = block.get("signature")
        return ReasoningPart(
            text=text if isinstance(text, str) else "",
            signature=signature if isinstance(signature, str) and signature else None,
        )
    if kind == "redacted_thinking":
        data = block.get("data")
        if isinstance(data, str) and data:
            return ReasoningPart(kind="redacted", data=data)
    return None


def _parts_from_blocks(blocks: Iterable[Any]) -> tuple[ReasoningPart, ...]:
    return tuple(part for part in map(_block_part, blocks) if part is not None)


def _parts_from_items(items: Iterable[Any]) -> tuple[ReasoningPart, ...]:
    """OpenAI Responses reasoning items (`reasoning_items` on a LiteLLM message)."""
    parts: list[ReasoningPart] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        summary = item.get("summary") or []
        text = "".join(s.get("text", "") for s in summary if isinstance(s, dict))
        encrypted = item.get("encrypted_content")
        parts.append(
            ReasoningPart(
                kind="encrypted" if encrypted else "thinking",
                text=text if isinstance(text, str) else "",
                data=encrypted if isinstance(encrypted, str) else None,
                id=item.get("id") if isinstance(item.get("id"), str) else None,
                details={"summary": summary} if summary else {},
            )
        )
    return tuple(parts)


def _parts_from_details(details: Iterable[Any]) -> tuple[ReasoningPart, ...]:
    """OpenRouter `reasoning_details`, kept whole in `details` so they travel unmodified."""
    parts: list[ReasoningPart] = []
    for detail in details:
        if not isinstance(detail, dict):
            continue
        kind = detail.get("type")
        text = detail.get("text") if kind == "reasoning.text" else detail.get("summary")
        parts.append(
            ReasoningPart(
                kind="encrypted" if kind == "reasoning.encrypted" else "thinking",
                text=text if isinstance(text, str) else "",
                signature=detail.get("signature") or None,
                data=detail.get("data") if isinstance(detail.get("data"), str) else None,
                id=detail.get("id") if isinstance(detail.get("id"), str) else None,
                details={"reasoning_detail": detail},
            )
        )
    return tuple(parts)


def inline_blocks(content: Any) -> list[dict[str, Any]]:
    """Thinking blocks a client put inside a list `content` (Anthropic-style messages)."""
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") in BLOCK_TYPES]


def reasoning_from_message(
    message: dict[str, Any], *, provider: str | None = None, model: str | None = None
) -> Reasoning | None:
    """The reasoning `message` carries, or None when it carries none.

    Structured forms win over plain text: plain `reasoning_content` is LiteLLM's concatenation of
    the same thinking blocks, so reading both would duplicate it.
    """
    psf = message.get("provider_specific_fields")
    psf = psf if isinstance(psf, dict) else {}
    parts: tuple[ReasoningPart, ...] = ()

    blocks = message.get("thinking_blocks") or psf.get("thinking_blocks")
    if isinstance(blocks, list):
        parts = _parts_from_blocks(blocks)
    if not parts:
        parts = _parts_from_blocks(inline_blocks(message.get("content")))
    if not parts:
        details = message.get("reasoning_details") or psf.get("reasoning_details")
        if isinstance(details, list):
            parts = _parts_from_details(details)
    if not parts:
        items = message.get("reasoning_items")
        if isinstance(items, list):
            parts = _parts_from_items(items)
    if not parts:
        for name in TEXT_FIELDS:
            text = message.get(name)
            if isinstance(text, str) and text:
                parts = (ReasoningPart(text=text),)
                break
    if not parts:
        return None
    return Reasoning(parts=parts, provider=provider, model=model)
