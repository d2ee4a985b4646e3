"""Claude's signed thinking: the Anthropic Messages API, Bedrock (Converse and invoke) and Vertex.

What these targets take back (shared notes, provider rules §1-§2):

* an assistant message's `thinking` (text + `signature`) and `redacted_thinking` (`data`)
  blocks, byte for byte, in the order they came, before its text and `tool_use` blocks, an empty
  `thinking` text with a real signature included (`display: "omitted"`);
* within a tool loop they are required: with thinking on, the assistant message that made the
  tool calls a request answers must start with one (400 "Expected `thinking` or
  `redacted_thinking`, but found `tool_use`" otherwise);
* only blocks their issuer signed: a forged, foreign or missing signature is a 400 ("Invalid
  `signature`", "signature: Field required"), so unsigned or foreign reasoning is never
  converted into thinking text, it is left out.

Issuers. A block is sent back only to the platform that issued it: the Anthropic API
(`anthropic`), Bedrock (`bedrock`) or Vertex (`vertex_ai`). Anthropic's docs say signatures are
compatible across the three, but Bedrock binds blocks to the AWS account and the newest models
bind them to the prefix and model, and nothing recorded shows a cross-platform replay working,
so each platform counts as its own issuer. A record the client sent back itself (no issuer
known) is trusted as the client's own history. The model is not checked: the API verifies the
signature (or, on the newest models, silently drops a block it cannot read).

LiteLLM carries these blocks on an OpenAI-shaped message as `thinking_blocks`, which it
translates for every Claude route (the inline form loses `redacted_thinking` in LiteLLM
1.106.12), so that is what this dialect renders. Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ...core.extract import BLOCK_TYPES
from ...core.messages import tool_calls_answered
from ...core.reasoning import Reasoning, ReasoningPart
from ...core.render import Rendered
from .._base import BaseDialect, Finished, Layouts, ThinkingOff, strip_reasoning

ANTHROPIC_ISSUERS = {
    "anthropic": frozenset({"anthropic"}),
    "bedrock": frozenset({"bedrock"}),
    "vertex_ai": frozenset({"vertex_ai", "vertex_ai_beta"}),
}
"""Target platform -> the LiteLLM providers whose signatures it accepts."""


def signed_parts(reasoning: Reasoning) -> tuple[ReasoningPart, ...]:
    """The parts Claude can take back: signed thinking and redacted data, in order."""
    parts = reasoning.parts
    for part in parts:
        if not _signed(part):
            return tuple(filter(_signed, parts))
    return parts  # all of them (a Claude reply's): asked of every record on every request


def _signed(part: ReasoningPart) -> bool:
    return bool(
        (part.kind == "thinking" and part.signature) or (part.kind == "redacted" and part.data)
    )


def thinking_blocks(reasoning: Reasoning | None) -> list[dict[str, Any]]:
    """`reasoning` as Anthropic content blocks (unsigned parts left out)."""
    return blocks_of(signed_parts(reasoning)) if reasoning is not None else []


def issued_parts(record: Reasoning) -> tuple[ReasoningPart, ...]:
    """The parts a provider issued as blocks, signed or not (redacted data, thinking)."""
    return tuple(
        part
        for part in record.parts
        if (part.kind == "redacted" and part.data) or part.kind == "thinking"
    )


def issued_blocks(record: Reasoning) -> list[dict[str, Any]]:
    """A record's blocks as their provider issued them (a signature only where it gave one)."""
    return blocks_of(issued_parts(record))


def blocks_of(parts: Iterable[ReasoningPart]) -> list[dict[str, Any]]:
    """`parts` as Anthropic content blocks (a signature where the part has one)."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.kind == "redacted":
            blocks.append({"type": "redacted_thinking", "data": part.data})
        else:
            block = {"type": "thinking", "thinking": part.text}
            if part.signature is not None:
                block["signature"] = part.signature
            blocks.append(block)
    return blocks


def issued_unsigned(record: Reasoning, provider: str | None, origin: str) -> bool:
    """Whether `record` holds thinking blocks without a signature that the deployment `origin`
    of `provider` issued: an `anthropic/` deployment at a third-party Anthropic-compatible API
    (DeepSeek, Kimi, MiniMax, MiMo; Anthropic signs every thinking block it issues). Such a
    deployment is the blocks' issuer: they go back to it as it issued them, and to no other."""
    return (
        record.provider == provider
        and record.origin == origin
        and not signed_parts(record)
        and any(part.kind == "thinking" for part in record.parts)
    )


def bedrock_redacted_content(data: str) -> str:
    """The Converse `redactedContent` for a redacted block's `data`.

    Converse wraps Claude's own data in base64. LiteLLM 1.106.12 hands the wrapped value out as
    `data`; 1.110.2 unwraps it. Claude's own value starts with a protobuf tag byte that is not
    base64 text once decoded, so a value that decodes twice is already wrapped.
    """
    try:
        inner = base64.b64decode(data, validate=True).decode("ascii")
        base64.b64decode(inner, validate=True)
    except (binascii.Error, ValueError):
        return base64.b64encode(data.encode()).decode()
    return data


def tool_loop_needs_thinking(messages: Sequence[Any]) -> bool:
    """True when the request answers tool calls of an assistant message that carries no
    thinking block: with thinking on, Claude rejects that request. A user message after the
    tool results still answers them (`open_tool_loop`)."""
    loop = open_tool_loop(messages)
    if loop is not None:
        messages = messages[: loop + 1]
    for message in reversed(messages):
        if not isinstance(message, dict):
            return False
        role = message.get("role")
        if role in ("tool", "function"):
            continue
        if role != "assistant" or not message.get("tool_calls"):
            return False
        blocks = message.get("thinking_blocks")
        return not (isinstance(blocks, list) and blocks)
    return False


THINKING_ON = frozenset({"enabled", "adaptive", "between_tools"})
"""`thinking.type` values that turn Claude's thinking on (`between_tools`: Sonnet 5.5, thinking
only between tool calls, the same signed-block rules)."""


THINKING_OFF_BY_DEFAULT = "off"
THINKING_ON_BY_DEFAULT = "on"
"""Thinks unless the request says `thinking: {"type": "disabled"}` (Opus 5, Sonnet 5, Haiku 5.5)."""
THINKING_ALWAYS_ON = "always"
"""Thinks whatever the request says (Opus 5.5, Sonnet 5.5, Fable 5 and 5.1, Mythos 5)."""

_THINKING_DEFAULTS = (
    (
        re.compile(r"claude-(fable|mythos)-5(?!\d)|claude-(opus|sonnet)-5[-.][5-9](?!\d)"),
        THINKING_ALWAYS_ON,
    ),
    (
        re.compile(r"claude-(opus|sonnet)-5(?!\d|[-.]\d)|claude-haiku-5-[5-9](?!\d)"),
        THINKING_ON_BY_DEFAULT,
    ),
)
"""Claude models that think without being asked, by Anthropic's model pages (`whats-new-opus-5`:
"thinking on by default", `thinking: {"type": "disabled"}` accepted; `whats-new-opus-5-5`:
"thinking can't be disabled", also Fable 5.1), the same values as LiteLLM's model map
(`thinking_on_by_default`, `thinking_always_on`; LiteLLM 1.110+), which answers first where it
knows the model (`thinking_default_of`): this table serves the LiteLLM lines whose map lacks
them."""


def thinking_default_of(model: str, from_model_map: str | None = None) -> str:
    """Whether Claude `model` thinks without a `thinking` parameter: `THINKING_OFF_BY_DEFAULT`,
    `THINKING_ON_BY_DEFAULT` or `THINKING_ALWAYS_ON`; `from_model_map`: what LiteLLM's model
    map says (None: it does not say)."""
    if from_model_map is not None:
        return from_model_map
    lowered = model.lower()
    for pattern, default in _THINKING_DEFAULTS:
        if pattern.search(lowered):
            return default
    return THINKING_OFF_BY_DEFAULT


def thinking_requested(params: Sequence[Any], default: str = THINKING_OFF_BY_DEFAULT) -> bool:
    """Whether `params` (request keyword dicts) leave Claude's thinking on, for a model whose
    `thinking_default_of` is `default`: asked for by any of them, or the model's default and not
    turned off (`thinking: {"type": "disabled"}`)."""
    disabled = False
    for p in params:
        if not isinstance(p, dict):
            continue
        thinking = p.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") in THINKING_ON:
            return True
        if isinstance(thinking, dict) and thinking.get("type") == "disabled":
            disabled = True
        effort = p.get("reasoning_effort")
        if isinstance(effort, str) and effort not in ("", "none", "disable", "disabled"):
            return True
    if default == THINKING_ALWAYS_ON:
        return True
    return default == THINKING_ON_BY_DEFAULT and not disabled


class AnthropicDialect(BaseDialect):
    """Claude on the Anthropic API: signed `thinking_blocks` from Anthropic, or from the client."""

    keeps_block_order: ClassVar[bool] = True
    has_tool_loop_rule: ClassVar[bool] = True

    name: ClassVar[str] = "anthropic"
    platform: ClassVar[str] = "anthropic"
    prefers_opaque: ClassVar[bool] = True

    def sendable(self, reasoning: Reasoning) -> tuple[ReasoningPart, ...]:
        """The parts this target takes back as blocks: signed thinking and redacted data."""
        return signed_parts(reasoning)

    def accepts(self, reasoning: Reasoning) -> bool:
        """Whether this target can take `reasoning` back: issued here (or by the client), and
        holding at least one block it takes (`sendable`)."""
        if reasoning.provider is not None and reasoning.provider not in ANTHROPIC_ISSUERS.get(
            self.platform, frozenset()
        ):
            return False
        return bool(self.sendable(reasoning))

    def validity_start(self, messages: Sequence[Any]) -> int | None:
        """Claude's validity rule adds to the turn rule: the open tool loop's message keeps its
        blocks (`open_tool_loop`)."""
        return open_tool_loop(messages)

    def for_records(
        self, stored: Mapping[int, Reasoning], provider: str | None, model: str, origin: str
    ) -> str | None:
        """A third-party Anthropic-compatible API's own unsigned blocks among the records (an
        `anthropic/` deployment of a model that is not Claude): they go back as issued. Claude
        signs every block it finishes: an unsigned one of a Claude model is a stream cut before
        its signature, never sent."""
        if (
            self.platform == "anthropic"
            and "claude" not in model.lower()
            and as_issued_records(stored, provider, origin)
        ):
            return AnthropicAsIssuedDialect.name
        return None

    def finish(
        self, sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning], model: str
    ) -> Finished:
        """The blocks of each kept message whose record knows where they stood, in that order
        (`body.layouts_of`; the provider body is laid out after LiteLLM translated it)."""
        from .body import layouts_of  # the body module builds on this one

        layouts, reordered, messages = layouts_of(sent, rendered, stored)
        return Finished(layouts=layouts, messages=messages, reordered=reordered)

    def open_loop_without_reasoning(self, messages: Sequence[Any]) -> bool:
        return tool_loop_needs_thinking(messages)

    def thinking_off(
        self, params: Sequence[Any], model: str, from_model_map: str | None
    ) -> ThinkingOff | None:
        from .body import thinking_left_on

        default = thinking_default_of(model, from_model_map)
        if not thinking_left_on(params, default):
            return None
        return ThinkingOff(default, possible=default != THINKING_ALWAYS_ON)

    def turn_thinking_off(self, params: dict[str, Any], off: ThinkingOff) -> None:
        from .body import turn_thinking_off

        turn_thinking_off(params, off.default)

    def without_thinking(self, message: Any) -> Any:
        from .body import without_thinking_blocks

        return without_thinking_blocks(message)

    def put_blocks(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        thinking_off: Callable[[], ThinkingOff | None],
    ) -> ThinkingOff | None:
        from .body import check_lines_up, put_blocks

        check_lines_up(body, rendered)
        off = thinking_off()
        put_blocks(body, rendered, layouts, thinking_off=off.default if off is not None else None)
        return off

    def lay_out(
        self,
        body: dict[str, Any],
        rendered: Sequence[Any],
        layouts: Layouts,
        *,
        converse: bool = False,
    ) -> None:
        from .body import lay_out_body, lay_out_converse_body

        (lay_out_converse_body if converse else lay_out_body)(body, rendered, layouts)

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        if reasoning is not None and self.accepts(reasoning):
            blocks = blocks_of(self.sendable(reasoning))
            if blocks:
                out["thinking_blocks"] = blocks
                if out.get("tool_calls") and empty_content(out):
                    # LiteLLM 1.106/1.108 put a placeholder text where the content is "" (a
                    # client that joined streamed deltas): Claude would see a block its reply
                    # never had ("cannot be modified") and the blocks could not be laid out.
                    out["content"] = None
        return out


class AnthropicAsIssuedDialect(AnthropicDialect):
    """An `anthropic/` deployment at a third-party Anthropic-compatible API (MiniMax, Kimi,
    DeepSeek, MiMo), whose thinking blocks carry no Anthropic signature: they go back as it
    issued them (a signature only where it gave one), and only to it. The engine takes this
    dialect for a request instead of Claude's only when records this deployment issued unsigned
    are among its records (`as_issued_records`). LiteLLM (1.110) drops unsigned blocks when it
    translates a chat message, so they are put on the Anthropic body it built (`patch_wire`)."""

    name: ClassVar[str] = "anthropic_as_issued"
    patches_body: ClassVar[bool] = True

    def sendable(self, reasoning: Reasoning) -> tuple[ReasoningPart, ...]:
        return issued_parts(reasoning)

    def finish(
        self, sent: Sequence[Any], rendered: Rendered, stored: Mapping[int, Reasoning], model: str
    ) -> Finished:
        return Finished()  # the blocks go first, as the body patch puts them

    def for_records(
        self, stored: Mapping[int, Reasoning], provider: str | None, model: str, origin: str
    ) -> str | None:
        return None

    def patch_wire(self, sent: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
        """`sent` (the Anthropic body's assistant message LiteLLM built) with `want`'s blocks
        first, in place of any LiteLLM kept; the rest of its content as LiteLLM built it."""
        blocks = want.get("thinking_blocks")
        if not isinstance(blocks, list) or not blocks:
            return sent
        content = sent.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        if not isinstance(content, list):
            return sent
        rest = [b for b in content if not (isinstance(b, dict) and b.get("type") in BLOCK_TYPES)]
        return {**sent, "content": [*blocks, *rest]}


def as_issued_records(stored: Mapping[int, Reasoning], provider: str | None, origin: str) -> bool:
    """Whether `stored` holds blocks the deployment `origin` of `provider` issued unsigned (a
    third-party Anthropic-compatible API): then the request takes `AnthropicAsIssuedDialect`."""
    return any(issued_unsigned(record, provider, origin) for record in stored.values())


class BedrockClaudeDialect(AnthropicDialect):
    """Claude on Bedrock (Converse and invoke): Bedrock-signed blocks only.

    Bedrock (Claude 5) refuses an assistant message that is empty or holds only reasoning
    ("This model does not support assistant message prefill", "The content field in the
    Message object at messages.N is empty"), so blocks never go onto a message with neither
    text nor tool calls: such a message is left as the client sent it."""

    name: ClassVar[str] = "anthropic_bedrock"
    platform: ClassVar[str] = "bedrock"

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        if not _has_answer(message):
            return message
        return super().render(message, reasoning)


def empty_content(message: Mapping[str, Any]) -> bool:
    """No text but whitespace: None, "", or only empty text parts (LiteLLM fills these in)."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return not (content or "").strip()
    if isinstance(content, list):
        return all(
            isinstance(p, dict) and p.get("type") == "text" and not str(p.get("text") or "").strip()
            for p in content
        )
    return False


def _has_answer(message: dict[str, Any]) -> bool:
    """Text or tool calls besides any reasoning."""
    if message.get("tool_calls"):
        return True
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(
            isinstance(part, dict) and part.get("type") not in BLOCK_TYPES for part in content
        )
    return False


class VertexClaudeDialect(AnthropicDialect):
    """Claude on Vertex AI: Vertex-signed blocks only."""

    name: ClassVar[str] = "anthropic_vertex"
    platform: ClassVar[str] = "vertex_ai"


# ------------------------------------------------------------------ block order (interleaved)

CLAUDE_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta"})
"""LiteLLM providers whose replies carry Claude's content blocks."""


def _default_layout(layout: Sequence[str]) -> bool:
    """Reasoning first, then at most one text, then the tool calls: how LiteLLM lays out an
    assistant message anyway (nothing to remember)."""
    stage = 0
    texts = 0
    for entry in layout:
        rank = 0 if entry == "r" else 1 if entry.startswith("t") else 2
        if rank < stage:
            return False
        texts += rank == 1
        stage = rank
    return texts <= 1


def layout_of_blocks(blocks: Sequence[Any]) -> tuple[str, ...]:
    """The layout of a reply's content blocks, in the Anthropic Messages form (Anthropic API,
    Vertex, Bedrock invoke) or the Bedrock Converse form. Empty when a block is of a kind this
    does not know (server tools, citations): then nothing is reordered."""
    out: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            return ()
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking") or "reasoningContent" in block:
            out.append("r")
        elif kind == "tool_use" or "toolUse" in block:
            out.append("u")
        elif kind == "text" or (kind is None and isinstance(block.get("text"), str)):
            text = block.get("text")
            out.append(f"t{len(text) if isinstance(text, str) else 0}")
        else:
            return ()
    return () if _default_layout(out) else tuple(out)


def layout_of_deltas(deltas: Iterable[Any]) -> tuple[str, ...]:
    """The layout of a streamed reply from its chunks' deltas, in the order LiteLLM yielded
    them (each block's first piece marks its place)."""
    out: list[str] = []
    thinking_seen: set[Any] = set()
    calls_seen: set[Any] = set()
    text_run = 0
    open_block = False  # LiteLLM 1.106 gives no index: a block runs until its signature
    for delta in deltas:
        for block in getattr(delta, "thinking_blocks", None) or ():
            if not isinstance(block, dict):
                continue
            index = block.get("index")
            if index is not None:
                new = index not in thinking_seen
                thinking_seen.add(index)
            elif block.get("type") == "redacted_thinking":
                new, open_block = True, False
            else:
                new = not (open_block and out and out[-1] == "r")
                open_block = not block.get("signature")
            if new:
                out.append("r")
                text_run = 0
        for call in getattr(delta, "tool_calls", None) or ():
            index = getattr(call, "index", None)
            if index is None and isinstance(call, dict):
                index = call.get("index")
            if index not in calls_seen:
                calls_seen.add(index)
                out.append("u")
                text_run = 0
                open_block = False
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            open_block = False
            if text_run:
                text_run += len(content)
                out[-1] = f"t{text_run}"
            else:
                text_run = len(content)
                out.append(f"t{text_run}")
    return () if _default_layout(out) else tuple(out)


def _signatures(blocks: Sequence[Any]) -> list[Any]:
    return sorted(
        str(b.get("signature") or b.get("data") or "") for b in blocks if isinstance(b, dict)
    )


def block_identity(block: Any) -> tuple[str, str, str, str]:
    """What makes two reasoning blocks one block: kind, text, signature and data (markers such
    as `cache_control`, and LiteLLM's `index`, aside)."""
    if not isinstance(block, dict):
        return ("?", "", "", "")
    return (
        str(block.get("type") or ""),
        str(block.get("thinking") or ""),
        str(block.get("signature") or ""),
        str(block.get("data") or ""),
    )


def same_blocks(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """The same reasoning blocks, in any order."""
    return sorted(map(block_identity, a)) == sorted(map(block_identity, b))


def inline_blocks(message: Any) -> bool:
    """Whether a chat message holds reasoning blocks inline in its content."""
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in BLOCK_TYPES for p in content
    )


def chat_layout(message: Mapping[str, Any]) -> tuple[str, ...]:
    """The layout LiteLLM builds from a chat assistant message: its content in order (inline
    thinking blocks in place) or its `thinking_blocks` first, then its tool calls."""
    content = message.get("content")
    parts: list[Any] = []
    if isinstance(content, str) and content:
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        # LiteLLM leaves empty text parts out (Claude refuses them)
        parts = [
            p for p in content if isinstance(p, dict) and (p.get("type") != "text" or p.get("text"))
        ]
    if not any(p.get("type") in BLOCK_TYPES for p in parts):
        blocks = message.get("thinking_blocks")
        parts = [*(blocks if isinstance(blocks, list) else ()), *parts]
    calls = message.get("tool_calls")
    uses = [{"type": "tool_use"}] * (len(calls) if isinstance(calls, list) else 0)
    return layout_of_blocks([*parts, *uses])


def ordered_blocks(
    reasoning: Reasoning | None, sent: Sequence[Any]
) -> tuple[tuple[str, ...], list[dict[str, Any]]] | None:
    """The layout and the blocks in their original order, when `reasoning` (the stored record)
    knows its layout and `sent` (the blocks rendered on the message) are exactly its blocks."""
    if reasoning is None or not reasoning.layout:
        return None
    blocks = thinking_blocks(reasoning)
    if len(blocks) != len(reasoning.parts) or reasoning.layout.count("r") != len(blocks):
        return None
    if not same_blocks(blocks, sent):  # exactly the recorded blocks, or left alone
        return None
    return reasoning.layout, blocks


def apply_layout(
    content: Sequence[Any], layout: Sequence[str], blocks: Sequence[dict[str, Any]]
) -> list[Any] | None:
    """An Anthropic-format assistant `content` (as LiteLLM built it: reasoning, text, tool
    uses) in its original order. None when it does not line up (then it is left alone)."""
    reasoning = [b for b in content if isinstance(b, dict) and b.get("type") in BLOCK_TYPES]
    texts = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
    uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    if len(reasoning) + len(texts) + len(uses) != len(content):
        return None
    if _signatures(reasoning) != _signatures(blocks):
        return None
    if any(set(t) - {"type", "text"} for t in texts) and _text_entries(layout) > 1:
        return None  # a text block with extras (cache_control) is not split
    return _arrange(
        layout, list(blocks), texts, uses, lambda piece: {"type": "text", "text": piece}
    )


def apply_converse_layout(
    content: Sequence[Any], layout: Sequence[str], blocks: Sequence[dict[str, Any]]
) -> list[Any] | None:
    """A Bedrock Converse assistant `content` (as LiteLLM built it from the rendered blocks, in
    their recorded order: `reasoningContent` items, text, `toolUse`) in its original order.
    None when it does not line up (a cache point, another block kind, other reasoning)."""
    reasoning = [b for b in content if isinstance(b, dict) and "reasoningContent" in b]
    texts = [b for b in content if isinstance(b, dict) and set(b) == {"text"}]
    uses = [b for b in content if isinstance(b, dict) and "toolUse" in b]
    if len(reasoning) + len(texts) + len(uses) != len(content) or len(reasoning) != len(blocks):
        return None
    for item, block in zip(reasoning, blocks, strict=True):
        if _converse_signature(item) != _block_signature(block):
            return None
    return _arrange(layout, reasoning, texts, uses, lambda piece: {"text": piece})


def _text_entries(layout: Sequence[str]) -> int:
    return sum(entry.startswith("t") for entry in layout)


def _block_signature(block: dict[str, Any]) -> str:
    if block.get("type") == "redacted_thinking":
        return "redacted:" + bedrock_redacted_content(str(block.get("data") or ""))
    return str(block.get("signature") or "")


def _converse_signature(item: dict[str, Any]) -> str:
    reasoning = item.get("reasoningContent")
    if not isinstance(reasoning, dict):
        return ""
    if "redactedContent" in reasoning:
        return "redacted:" + bedrock_redacted_content(str(reasoning["redactedContent"]))
    text = reasoning.get("reasoningText")
    return str(text.get("signature") or "") if isinstance(text, dict) else ""


def _arrange(
    layout: Sequence[str],
    reasoning: Sequence[Any],
    texts: Sequence[dict[str, Any]],
    uses: Sequence[Any],
    text_item: Callable[[str], dict[str, Any]],
) -> list[Any] | None:
    """`reasoning`, text and tool-use items in `layout`'s order: the text (one run, as LiteLLM
    joins it) split back by the recorded lengths. None when they do not fill it exactly."""
    text = "".join(str(t.get("text") or "") for t in texts)
    whole = len(texts) == 1 == _text_entries(layout)  # the one text block goes back as it is
    out: list[Any] = []
    next_block = next_use = position = 0
    try:
        for entry in layout:
            if entry == "r":
                out.append(reasoning[next_block])
                next_block += 1
            elif entry == "u":
                out.append(uses[next_use])
                next_use += 1
            else:
                size = int(entry[1:])
                piece, position = text[position : position + size], position + size
                if piece:  # Claude rejects empty text blocks
                    out.append(texts[0] if whole else text_item(piece))
    except (IndexError, ValueError):
        return None
    if next_block != len(reasoning) or next_use != len(uses) or position != len(text):
        return None
    return out


def open_tool_loop(messages: Sequence[Any]) -> int | None:
    """The assistant message whose tool calls the request's last user message still answers
    (LiteLLM merges trailing tool results and user text into one Anthropic user message):
    `[…, assistant tool_use, tool result(s), user "new question"]`. For Claude that tool loop
    is still open, so that message must keep its blocks whatever the turn rule says. None:
    the request does not end that way."""
    index = len(messages) - 1
    while index >= 0 and _role(messages[index]) == "user":
        index -= 1
    if index == len(messages) - 1:
        return None  # no trailing user message: the turn rule already covers the loop
    return tool_calls_answered(messages, index)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None
