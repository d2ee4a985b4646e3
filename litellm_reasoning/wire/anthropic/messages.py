"""The `/v1/messages` format's block work for Claude and the providers LiteLLM forwards it to
natively: a reply's blocks as a record (with where each stood), blocks put back where they
stood in the reply, the order Claude issued them, streams (SSE) and usage. What identifies a
message, the turn rule and the limits are the core's (`core.formats.blocks`).

Pure: no LiteLLM, no I/O, no locks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import Any

from ...core.extract import BLOCK_TYPES, _parts_from_blocks
from ...core.formats.blocks import content_blocks, reasoning_blocks, without_reasoning_blocks
from ...core.reasoning import Reasoning
from ...core.usage import PromptCache, token_count
from .dialect import (
    apply_layout,
    block_identity,
    issued_blocks,
    layout_of_blocks,
    same_blocks,
    thinking_blocks,
)

# Re-exported for the `/v1/messages` entry point, which reaches this family only here
# (`wire.messages_blocks`): which records a third-party Anthropic API issued unsigned.
from .dialect import issued_unsigned as issued_unsigned


@dataclass(slots=True)
class CollectedSSE:
    """Per call (`CallState.part`): an Anthropic-format SDK stream's SSE bytes, as LiteLLM
    collected them (its success event carries the reply chat-shaped)."""

    pieces: list[bytes] = field(default_factory=list)


def record_of_reply(
    content: Sequence[Any], *, provider: str | None, model: str | None
) -> Reasoning | None:
    """The reasoning of a reply's content blocks, with where each stood (None: it has none)."""
    parts = _parts_from_blocks(content)
    if not parts:
        return None
    return Reasoning(parts=parts, provider=provider, model=model, layout=layout_of_blocks(content))


AS_ISSUED_PROVIDERS = frozenset({"deepseek", "minimax"})
"""Non-Claude providers LiteLLM forwards `/v1/messages` to natively (their Anthropic-compatible
APIs, measured on LiteLLM 1.106.12 and 1.110.2). Their thinking blocks carry no Anthropic
signature and go back as they issued them, to them alone: DeepSeek V4 in thinking mode refuses
a tool loop whose assistant message lost its block ("The `content[].thinking` in the thinking
mode must be passed back to the API."); MiniMax asks for its reply back unmodified."""


def takes_blocks_as_issued(provider: str | None) -> bool:
    """Whether `provider`'s native Messages API takes its own thinking blocks back verbatim."""
    return provider in AS_ISSUED_PROVIDERS


def issued_by(record: Reasoning, provider: str | None) -> bool:
    """Whether `record` came from `provider`'s own replies (what it may be sent back to)."""
    return record.provider == provider and any(
        p.kind in ("thinking", "redacted") for p in record.parts
    )


def with_blocks(
    message: Mapping[str, Any], record: Reasoning, *, as_issued: bool = False
) -> dict[str, Any] | None:
    """`message` (sent without reasoning blocks) with the record's blocks where they stood in
    the reply; None when the record holds nothing the target takes back (Claude: signed blocks
    only; `as_issued`: the provider's own blocks as they came)."""
    return _with_blocks(message, record, as_issued)[0]


def _with_blocks(
    message: Mapping[str, Any], record: Reasoning, as_issued: bool
) -> tuple[dict[str, Any] | None, int | None]:
    """`with_blocks`, and how many blocks went in front of the message's own content (None:
    placed by the record's layout, or none)."""
    blocks = issued_blocks(record) if as_issued else thinking_blocks(record)
    if not blocks:
        return None, None
    content = content_blocks(message.get("content"))
    fronted = [*blocks, *content]
    if record.layout and len(blocks) == len(record.parts):
        ordered = apply_layout(fronted, record.layout, blocks)
        # most replies think first: laid out, the blocks stand in front all the same
        if ordered is not None and (
            len(ordered) != len(fronted) or not all(map(is_, ordered, fronted))
        ):
            return {**message, "content": ordered}, None
    return {**message, "content": fronted}, len(blocks)


def prompt_cache_of_usage(usage: Any) -> PromptCache | None:
    """The prompt cache of an Anthropic Messages `usage` (`input_tokens` counts only the
    uncached tokens). None: not such a usage."""
    if not isinstance(usage, Mapping) or type(usage.get("input_tokens")) is not int:
        return None
    return PromptCache(
        token_count(usage.get("cache_read_input_tokens")),
        token_count(usage.get("cache_creation_input_tokens")),
        token_count(usage.get("input_tokens")),
    )


def _events(sse: str, only: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """The JSON events of an SSE text's `data:` lines (`only`: lines naming one of these)."""
    for line in sse.splitlines():
        if not line.startswith("data:") or (only and not any(name in line for name in only)):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def content_of_stream(sse: str) -> list[dict[str, Any]] | None:
    """The content blocks of a streamed Anthropic-format reply (its SSE text), once its
    `message_stop` arrived; None before (a cut stream is not a reply to keep). A thinking block
    without its `signature_delta` is kept unsigned (never sent back)."""
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[tuple[int, str], list[str]] = {}
    """(block index, field) -> the field's pieces in order, joined once at the end (adding
    each delta to a growing string is quadratic in a long block's deltas)."""
    stopped = False
    for event in _events(sse):
        kind, index = event.get("type"), event.get("index")
        if kind == "message_stop":
            stopped = True
        elif kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            blocks[index] = dict(block) if isinstance(block, dict) else {}
        elif kind == "content_block_delta" and index in blocks:
            found = _delta_piece(event.get("delta"))
            if found is not None:
                name, piece = found
                if (index, name) not in pieces:
                    start = blocks[index].get(name) if name != "partial_json" else None
                    pieces[(index, name)] = [str(start or "")]
                pieces[(index, name)].append(piece)
    if not stopped:
        return None
    for (index, name), parts in pieces.items():
        if name != "partial_json":
            blocks[index][name] = "".join(parts)
        elif blocks[index].get("type") == "tool_use":
            try:
                blocks[index]["input"] = json.loads("".join(parts))
            except ValueError:
                return None
    return [blocks[i] for i in sorted(blocks)]


def usage_of_stream(sse: str) -> dict[str, Any] | None:
    """The `usage` of a streamed Anthropic-format reply (`usage_and_model_of_stream`)."""
    return usage_and_model_of_stream(sse)[0]


def usage_and_model_of_stream(sse: str) -> tuple[dict[str, Any] | None, str | None]:
    """The `usage` of a streamed Anthropic-format reply (`message_start`'s, updated by
    `message_delta`'s; None: neither carried one) and the model that answered it
    (`message_start`'s), in one pass."""
    usage: dict[str, Any] | None = None
    model: str | None = None
    for event in _events(sse, ("message_start", "message_delta")):
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            found = event["message"].get("usage")
            answered = event["message"].get("model")
            if model is None and isinstance(answered, str) and answered:
                model = answered
        elif event.get("type") == "message_delta":
            found = event.get("usage")
        else:
            continue
        if isinstance(found, dict):
            usage = {**(usage or {}), **found}
    return usage, model


_DELTA_FIELDS = {
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "text_delta": "text",
    "input_json_delta": "partial_json",
}
"""A content delta's type -> the field its piece adds to (`partial_json`: the tool input)."""


def _delta_piece(delta: Any) -> tuple[str, str] | None:
    """(field, piece) of a content delta; None for a kind that adds nothing kept here."""
    if not isinstance(delta, dict):
        return None
    name = _DELTA_FIELDS.get(str(delta.get("type")))
    if name is None:
        return None
    return name, str(delta.get(name) or "")


_LAID_OUT = frozenset({*BLOCK_TYPES, "text", "tool_use"})
"""The block kinds a record's layout knows (with others, a record has none: `layout_of_blocks`)."""


def in_issued_order(
    message: Mapping[str, Any], record: Reasoning, *, as_issued: bool = False
) -> dict[str, Any] | None:
    """`message` with the blocks it holds where they stood in the reply, when they are exactly
    the record's blocks (same text, signatures, data) and only their places differ; None
    otherwise: anything but an exact match is left as the client sent it. The client's own
    block objects are kept (a `cache_control` marker travels with its block)."""
    kept = reasoning_blocks(message)
    blocks = issued_blocks(record) if as_issued else thinking_blocks(record)
    if not kept or not same_blocks(kept, blocks):
        return None
    if not record.layout and any(
        not isinstance(b, dict) or b.get("type") not in _LAID_OUT
        for b in content_blocks(message.get("content"))
    ):
        return None  # no layout because the reply held blocks of other kinds: order unknown
    laid = with_blocks(without_reasoning_blocks(message), record, as_issued=as_issued)
    if laid is None:
        return None
    own = {block_identity(b): b for b in kept}
    laid["content"] = [
        own.get(block_identity(b), b) if isinstance(b, dict) and b.get("type") in BLOCK_TYPES else b
        for b in laid["content"]
    ]
    if laid["content"] == message.get("content"):
        return None
    return laid


def restore(
    messages: Sequence[Any],
    wanted: Mapping[int, str],
    stored: Mapping[int, Reasoning],
    start: int,
    *,
    as_issued: bool = False,
) -> tuple[list[Any], list[int], dict[int, int]]:
    """`messages` with the stored blocks back in place, where they went, and, for the messages
    whose blocks went in front of their own content, how many (what their facts follow from:
    `blocks.with_leading_reasoning`). Earlier turns: Claude lets a leading run of blocks go,
    not one in the middle, so an earlier message before the last one missing its record gets
    none (`as_issued` targets take each message on its own)."""
    last_miss = max((i for i in wanted if i < start and i not in stored), default=-1)
    if as_issued:
        last_miss = -1
    out, restored_at = list(messages), []
    fronted: dict[int, int] = {}
    for i, record in stored.items():
        if i < last_miss:
            continue
        message, count = _with_blocks(messages[i], record, as_issued)
        if message is not None:
            out[i] = message
            restored_at.append(i)
            if count is not None:
                fronted[i] = count
    return out, restored_at, fronted
