"""Read the reasoning a message dict carries, in any of the shapes LiteLLM and clients use.

The same reader serves replies (a LiteLLM `Message` dumped to a dict) and request messages a
client sent back with their reasoning still on them. Pure: dicts in, `Reasoning` out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from .reasoning import Reasoning, ReasoningPart

TEXT_FIELDS = ("reasoning_content", "reasoning", "thinking")
"""Plain-text reasoning fields, in order of preference: OpenAI-compatible servers (DeepSeek,
Kimi, Qwen, GLM), vLLM / OpenRouter / Groq / Cerebras, Ollama."""

BLOCK_TYPES = ("thinking", "redacted_thinking")

PLACEHOLDER_SIGNATURES = frozenset({"mistral"})
"""What LiteLLM (1.106.12, 1.110.2) writes as the `signature` of Mistral's thinking blocks, which
nobody signed: read as unsigned, so it can never reach Claude as a signature."""


def _block_part(block: Any) -> ReasoningPart | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "thinking":
        text = block.get("thinking")
        if isinstance(text, list):  # Mistral's own chunk: a list of text items
            text = "".join(t["text"] for t in text if isinstance(t, dict) and "text" in t)
        signature = block.get("signature")
        if signature in PLACEHOLDER_SIGNATURES:
            signature = None
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


THOUGHT_SEPARATOR = "__thought__"
"""LiteLLM puts a Gemini function call's thought signature in its tool-call id as well:
`call_<id>__thought__<signature>` (so clients that keep only ids still carry it)."""

GEMINI = "gemini"
"""`details` key of a Gemini thought signature part: `"text"` (LiteLLM's message
`provider_specific_fields.thought_signatures`, put on the text part) or `"tool_call"` (with the
call's `index` and `id`). The signature is opaque `data`, never a `signature`: it signs no text,
and Claude-style dialects must not mistake it for one of theirs."""


def split_tool_call_id(call_id: Any) -> tuple[str, str | None]:
    """A tool-call id without LiteLLM's embedded Gemini signature, and that signature."""
    text = call_id if isinstance(call_id, str) else str(call_id or "")
    clean, separator, signature = text.partition(THOUGHT_SEPARATOR)
    return clean, (signature or None) if separator else None


def signature_bytes(value: str) -> bytes:
    """A signature's bytes from either base64 alphabet (its text when it is not base64)."""
    normal = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(normal + "=" * (-len(normal) % 4))
    except ValueError:
        return value.encode("utf-8", "surrogatepass")


def canonical_signature(signature: str) -> str:
    """One form for a base64 signature, whatever alphabet it came in: standard, padded.

    Gemini answers in standard base64 and reads both (a recorded google-genai client sends the
    same bytes back URL-safe). A value that is not base64 is kept as it is."""
    normal = signature.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)
    except (binascii.Error, ValueError):
        return signature
    return base64.b64encode(raw).decode("ascii")


def _call_signature(call: dict[str, Any]) -> str | None:
    """A call's signature from its fields. The copy in the id is not read here: an id is what
    a dropping client keeps, so it must not stand for the whole record (the stored thought
    text); the Gemini dialect falls back to it only when nothing is stored."""
    for holder in (call, call.get("function")):
        psf = holder.get("provider_specific_fields") if isinstance(holder, dict) else None
        signature = psf.get("thought_signature") if isinstance(psf, dict) else None
        if isinstance(signature, str) and signature:
            return signature
    return None


def _gemini_parts(message: dict[str, Any], psf: dict[str, Any]) -> tuple[ReasoningPart, ...]:
    """Gemini thought signatures, each with where it goes back (text part or which call)."""
    texts: list[ReasoningPart] = []
    calls: list[ReasoningPart] = []
    on_calls: set[str] = set()
    tool_calls = message.get("tool_calls")
    for index, call in enumerate(tool_calls if isinstance(tool_calls, list) else ()):
        signature = _call_signature(call) if isinstance(call, dict) else None
        if signature:
            data = canonical_signature(signature)
            on_calls.add(data)
            where = {
                GEMINI: "tool_call",
                "index": index,
                "id": split_tool_call_id(call.get("id"))[0],
            }
            calls.append(ReasoningPart(data=data, details=where))
    signatures = psf.get("thought_signatures")
    for signature in signatures if isinstance(signatures, list) else ():
        if isinstance(signature, str) and signature:
            data = canonical_signature(signature)
            if data not in on_calls:  # LiteLLM lists every part's signature here, calls' too
                texts.append(ReasoningPart(data=data, details={GEMINI: "text"}))
    return (*texts, *calls)


def inline_blocks(content: Any) -> list[dict[str, Any]]:
    """Thinking blocks a client put inside a list `content` (Anthropic-style messages)."""
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") in BLOCK_TYPES]


CARRIER_KEYS = frozenset(
    {
        *TEXT_FIELDS,
        "thinking_blocks",
        "reasoning_items",
        "reasoning_details",
        # LiteLLM-internal response carrier (thinking blocks, thought signatures, reasoning
        # details); LiteLLM forwards it verbatim to OpenAI-compatible servers, which reject it.
        "provider_specific_fields",
    }
)
"""Message keys that hold reasoning in some provider's or LiteLLM's format."""


def own_fields_carry_nothing(message: dict[str, Any]) -> bool:
    """`carries_nothing` but for the tool calls (the caller has looked at them): in C."""
    return message.keys().isdisjoint(CARRIER_KEYS) and type(message.get("content")) is not list


def carries_nothing(message: dict[str, Any]) -> bool:
    """True when no field of `message` can hold reasoning (most messages of a history from a
    client that drops it): checked in C but for the tool calls."""
    if not own_fields_carry_nothing(message):
        return False
    calls = message.get("tool_calls")
    if not calls or type(calls) is not list:
        return True
    for call in calls:
        if type(call) is not dict or "provider_specific_fields" in call:
            return False
        function = call.get("function")
        if type(function) is dict and "provider_specific_fields" in function:
            return False
    return True


def _whole_unsigned(parts: tuple[ReasoningPart, ...], text: Any) -> tuple[ReasoningPart, ...]:
    """Unsigned thinking blocks that are only the tail of the message's `reasoning_content`
    (a stream of a provider that signs nothing: LiteLLM's assembled reply keeps the last
    chunk's piece among its fields, the whole text in `reasoning_content`): the whole text, one
    block."""
    joined = "".join(part.text for part in parts)
    if isinstance(text, str) and len(text) > len(joined) and text.endswith(joined):
        return (ReasoningPart(text=text),)
    return parts


def reasoning_from_message(
    message: dict[str, Any], *, provider: str | None = None, model: str | None = None
) -> Reasoning | None:
    """The reasoning `message` carries, or None when it carries none.

    Structured forms win over plain text: plain `reasoning_content` is LiteLLM's concatenation of
    the same thinking blocks, so reading both would duplicate it.
    """
    if carries_nothing(message):
        return None
    psf = message.get("provider_specific_fields")
    psf = psf if isinstance(psf, dict) else {}
    parts: tuple[ReasoningPart, ...] = ()

    blocks = message.get("thinking_blocks") or psf.get("thinking_blocks")
    if isinstance(blocks, list):
        parts = _parts_from_blocks(blocks)
        if parts and not any(part.signature or part.data for part in parts):
            parts = _whole_unsigned(parts, message.get("reasoning_content"))
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
    parts += _gemini_parts(message, psf)
    if not parts:
        return None
    return Reasoning(parts=parts, provider=provider, model=model)
