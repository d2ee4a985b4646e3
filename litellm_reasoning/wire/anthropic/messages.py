"""The Anthropic Messages format (the proxy's `/v1/messages`: Claude Code, the Anthropic SDKs) as
an input format of its own: the turn rule, identity, capture and restore over Anthropic-format
messages, whose assistant content holds `thinking` / `redacted_thinking` blocks in place.

* The turn rule: a user message starts a turn unless it carries `"turn": false` or holds
  `tool_result` blocks (a tool loop's answer continues the turn, also with text beside the
  results, as Claude Code adds reminders).
* Identity: a message's shape is its role and content without reasoning blocks and without
  `cache_control` markers (clients move them every request), string content read as one text
  block. An assistant message with tool uses is keyed by its tool-use ids (unique per reply);
  one without by the conversation before it and its own shape.
* Restore: a message the client sent without its blocks gets the stored blocks back where they
  stood in the reply (`anthropic.apply_layout`), first when the layout is not known.

Pure: no LiteLLM, no I/O, no locks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.extract import BLOCK_TYPES, _parts_from_blocks
from ...core.policy import TurnPolicy, leading_run_violations, over_budget
from ...core.reasoning import Reasoning
from ...core.turns import starts_turn
from ...core.usage import PromptCache, token_count
from .dialect import (
    apply_layout,
    block_identity,
    issued_blocks,
    layout_of_blocks,
    same_blocks,
    thinking_blocks,
)

EMPTY = hashlib.blake2b(b"", digest_size=16, person=b"lr-msgs").hexdigest()


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def reasoning_blocks(message: Any) -> list[dict[str, Any]]:
    """The thinking and redacted-thinking blocks an Anthropic-format message holds."""
    content = message.get("content") if isinstance(message, Mapping) else None
    return [b for b in _blocks(content) if isinstance(b, dict) and b.get("type") in BLOCK_TYPES]


def chat_user_turns(messages: Sequence[Any]) -> list[bool]:
    """For each user message LiteLLM's Anthropic-to-chat adapter makes of `messages` (one per
    Anthropic user message holding anything but `tool_result` blocks), whether it starts a
    turn here (`core.turns.mark_deliveries` puts that back on the chat messages)."""
    out: list[bool] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        blocks = _blocks(message.get("content"))
        if any(not (isinstance(b, dict) and b.get("type") == "tool_result") for b in blocks):
            out.append(starts_turn(message))
    return out


def _plain(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def shape(message: Any) -> bytes:
    """What identifies a message: role and content, reasoning blocks and cache markers left out."""
    if not isinstance(message, Mapping):
        return b"?"
    content = [
        _plain(b)
        for b in _blocks(message.get("content"))
        if not (isinstance(b, dict) and b.get("type") in BLOCK_TYPES)
    ]
    body = {"role": message.get("role"), "content": content}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()


def prefix_digests(messages: Sequence[Any]) -> list[str]:
    """`out[i]`: the digest of the conversation before message `i`; `out[len]`: of all of it."""
    out = [EMPTY]
    for message in messages:
        digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs")
        digest.update(out[-1].encode())
        digest.update(shape(message))
        out.append(digest.hexdigest())
    return out


def _tool_uses(message: Mapping[str, Any]) -> list[list[str]]:
    return [
        [str(b.get("id")), str(b.get("name"))]
        for b in _blocks(message.get("content"))
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


Place = tuple[bytes, int, str]
"""Where an assistant message stands: the shape of the user message its turn step follows (the
last one before it that is not only tool results; empty: none), how many places after it, and
`system_digest` of the request's system prompt."""

NO_PLACE: Place = (b"", 0, EMPTY)


def system_digest(system: Any) -> str:
    """The digest of a request's `system` (a string or text blocks, cache markers left out)."""
    if not system:
        return EMPTY
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else _blocks(system)
    plain = [_plain(b) for b in blocks]
    if all(isinstance(b, dict) and b.get("type") == "text" for b in plain):
        plain = ["".join(str(b.get("text", "")) for b in plain)]
    digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs-sys")
    digest.update(json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


def _asks(message: Any) -> bool:
    """A user message that holds more than tool results (what a step's place counts from)."""
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return False
    blocks = _blocks(message.get("content"))
    return not blocks or any(
        not (isinstance(b, dict) and b.get("type") == "tool_result") for b in blocks
    )


def place_of(messages: Sequence[Any], index: int, system: str) -> Place:
    """The `Place` of position `index` (`len(messages)`: the reply's)."""
    for position in range(index - 1, -1, -1):
        if _asks(messages[position]):
            return _place(index, position, shape(messages[position]), system)
    return _place(index, -1, b"", system)


def _place(index: int, asked_at: int, asked_shape: bytes, system: str) -> Place:
    """The `Place` of position `index` whose step follows the user message at `asked_at`
    (-1: none, and the offset counts from the start)."""
    return (asked_shape, index - asked_at, system) if asked_at >= 0 else (b"", index + 1, system)


def message_key(
    scope: str, before: str, message: Mapping[str, Any], place: Place = NO_PLACE
) -> str:
    """The store key of an assistant message; `before`: the digest of the conversation before
    it. A message with tool uses is keyed by them, by the system prompt and by its `place`:
    two conversations of one tenant whose API hands out the same tool ids (an
    Anthropic-compatible API's `functions.<name>:<n>`) never share a key."""
    uses = _tool_uses(message)
    digest = _key_digest(scope)
    if uses:
        user, offset, system = place
        digest.update(b"tc2\x00" + json.dumps(uses).encode() + b"\x00" + system.encode())
        digest.update(b"\x00" + str(offset).encode() + b"\x00" + user)
        return "m2:" + digest.hexdigest()
    digest.update(b"tx\x00" + before.encode() + b"\x00" + shape(message))
    return "m1:" + digest.hexdigest()


def previous_message_key(scope: str, message: Mapping[str, Any]) -> str | None:
    """The key release 0.3.0 filed a message with tool uses under (its tool uses alone); None:
    not such a message."""
    uses = _tool_uses(message)
    if not uses:
        return None
    digest = _key_digest(scope)
    digest.update(b"tc\x00" + json.dumps(uses).encode())
    return "m1:" + digest.hexdigest()


def _key_digest(scope: str) -> hashlib.blake2b:
    """A key's digest, begun with the tenant scope."""
    digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs-key")
    digest.update(scope.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    return digest


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


COMPACTION = "compaction"
"""The block a compaction (`compact-2026-09-04`) leaves in an assistant message: it stands for
every message before it, which the API no longer reads."""


def compaction_index(messages: Sequence[Any]) -> int | None:
    """The last assistant message holding a compaction block (None: no compaction). Nothing
    before it is restored; the turns kept after it go back unchanged, as the current turn's do:
    the API checks their thinking against the compacted conversation ("Compaction and preserved
    thinking"), so neither the policy nor the budget may take any of it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(block, Mapping) and block.get("type") == COMPACTION for block in content
        ):
            return index
    return None


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
    blocks = issued_blocks(record) if as_issued else thinking_blocks(record)
    if not blocks:
        return None
    content = _blocks(message.get("content"))
    ordered = None
    if record.layout and len(blocks) == len(record.parts):
        ordered = apply_layout([*blocks, *content], record.layout, blocks)
    return {**message, "content": ordered if ordered is not None else [*blocks, *content]}


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


def keeps(policy: TurnPolicy, index: int, turn_start: int, message: Any) -> bool:
    """Whether an Anthropic-format assistant message carries its reasoning: as `policy` says
    (`TurnPolicy.keeps_at`), and the current turn always (Claude's validity rule: its tool loop
    needs it, even under `none`)."""
    uses = bool(_tool_uses(message))
    return index > turn_start or policy.keeps_at(index, turn_start, calls_tools=uses)


def wanted(
    scope: str,
    messages: Sequence[Any],
    policy: TurnPolicy,
    turn_start: int,
    digests: Sequence[str],
    system: str = EMPTY,
) -> tuple[dict[int, str], dict[int, str]]:
    """Message index -> store key of each assistant message that carries reasoning under
    `policy` and came (1) without its blocks, or (2) with them in an order that may not be the
    one Claude issued (more than one block, or one that does not lead, beside tool uses: Claude
    Code moves interleaved blocks, anthropics/claude-code#63508). One walk, one read."""
    missing: dict[int, str] = {}
    reorderable: dict[int, str] = {}
    asked_at = -1  # the last user message before `i` that is not only tool results
    asked_shape = b""
    for i, message in enumerate(messages):
        if _asks(message):
            asked_at, asked_shape = i, b""
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            continue
        content = _blocks(message.get("content"))
        places = [
            j for j, b in enumerate(content) if isinstance(b, dict) and b.get("type") in BLOCK_TYPES
        ]
        if places:
            moved = len(places) > 1 or places[0] != 0
            if not (moved and _tool_uses(message)):
                continue
            into = reorderable
        else:
            into = missing
        if keeps(policy, i, turn_start, message):
            if asked_at >= 0 and not asked_shape:
                asked_shape = shape(messages[asked_at])
            place = _place(i, asked_at, asked_shape, system)
            into[i] = message_key(scope, digests[i], message, place)
    return missing, reorderable


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
        for b in _blocks(message.get("content"))
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
) -> tuple[list[Any], list[int]]:
    """`messages` with the stored blocks back in place, and where they went. Earlier turns:
    Claude lets a leading run of blocks go, not one in the middle, so an earlier message
    before the last one missing its record gets none (`as_issued` targets take each message
    on its own)."""
    last_miss = max((i for i in wanted if i < start and i not in stored), default=-1)
    if as_issued:
        last_miss = -1
    out, restored_at = list(messages), []
    for i, record in stored.items():
        if i < last_miss:
            continue
        message = with_blocks(messages[i], record, as_issued=as_issued)
        if message is not None:
            out[i] = message
            restored_at.append(i)
    return out, restored_at


def without_reasoning_blocks(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") in BLOCK_TYPES)]
    return {**message, "content": kept}


@dataclass
class Limited:
    """An Anthropic-format request after the policy and the budget (`limit`)."""

    messages: list[Any]
    stripped: list[int] = field(default_factory=list)
    """Earlier-turn messages whose blocks the policy (or the leading-run rule) leaves out."""
    over_budget: list[int] = field(default_factory=list)
    """Earlier-turn messages whose blocks `max_reasoning_tokens` leaves out, oldest first."""
    saved: int = 0
    """Estimated reasoning tokens left out."""


def own_tokens(
    messages: Sequence[Any], policy: TurnPolicy, start: int, count: Callable[[Reasoning], int]
) -> dict[int, int]:
    """The tokens of the blocks the client's assistant messages carry where `policy` keeps
    them (what `limit` counts of them), by index."""
    tokens: dict[int, int] = {}
    for i, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            continue
        blocks = reasoning_blocks(message)
        if blocks and keeps(policy, i, start, message):
            record = record_of_reply(blocks, provider=None, model=None)
            if record is not None:
                tokens[i] = count(record)
    return tokens


def limit(
    messages: Sequence[Any],
    policy: TurnPolicy,
    start: int,
    *,
    leading_run: bool,
    max_tokens: int | None,
    count: Callable[[Reasoning], int],
    earlier_required: bool = False,
    unread: Mapping[int, int] | None = None,
) -> Limited:
    """Earlier turns carry what `policy` keeps and what fits in `max_tokens` (the chat path's
    rules, `core.limits`): blocks a client kept on a turn the policy leaves out are taken out,
    then the oldest over the budget; with `leading_run` (Claude binds blocks to what precedes
    them) whatever goes is the oldest run; `earlier_required` (DeepSeek's Anthropic API refuses
    a tool-call message without its block on any turn): the budget leaves the kept ones alone.
    The current turn is never touched, nor a message the blocks alone make (an empty message
    would be refused). `unread`: the stored blocks the budget left unread (index -> tokens):
    counted as kept, and over the budget whatever the rest holds."""
    out = list(messages)
    assistant = [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    carrying = [
        i
        for i in assistant
        if (blocks := reasoning_blocks(messages[i]))
        and len(blocks) < len(_blocks(messages[i].get("content")))
    ]
    skipped = [i for i in assistant if i <= start and not keeps(policy, i, start, messages[i])]
    skipped_set = set(skipped)
    stripped = [i for i in carrying if i in skipped_set]
    kept = [i for i in carrying if i not in skipped_set]
    tokens: dict[int, int] = {}

    def tokens_of(i: int) -> int:  # counted only where the budget or `saved` needs it
        if i not in tokens:
            record = record_of_reply(reasoning_blocks(messages[i]), provider=None, model=None)
            tokens[i] = count(record) if record is not None else 0
        return tokens[i]

    over: list[int] = []
    if max_tokens is not None:
        required = policy.earlier_turns_required or earlier_required
        if unread:
            tokens.update(unread)
            kept = sorted({*kept, *unread})
        droppable = set() if required else {i for i in kept if i <= start}
        over = over_budget(kept, {i: tokens_of(i) for i in kept}, max_tokens, droppable)
        over = sorted({*over, *(unread or ())})
    over_set = set(over)
    if leading_run:
        remaining = [i for i in kept if i not in over_set]
        more = leading_run_violations(remaining, [*skipped, *over])
        stripped = sorted({*stripped, *(i for i in more if i <= start)})
    stripped_set = set(stripped)
    kept_set = set(kept)
    saved = 0
    for i in sorted(stripped_set | over_set):
        saved += tokens_of(i) if i in kept_set else 0  # the policy's own strips: not counted
        out[i] = without_reasoning_blocks(messages[i])
    return Limited(out, stripped, [i for i in over if i not in stripped_set], saved)


def summary_counts(
    messages: Sequence[Any],
    restored: Sequence[int],
    missing: Sequence[int],
    limited: Limited | None = None,
    reordered: Sequence[int] = (),
) -> tuple[dict[str, str], list[Reasoning]]:
    """Per message "restored" / "kept" / "reordered" / "missing" / "stripped" / "over_budget"
    for the decisions summary, and the records the request carries (what its reasoning tokens
    are counted from)."""
    per_message: dict[str, str] = {}
    sent: list[Reasoning] = []
    for i, message in enumerate(messages):
        blocks = reasoning_blocks(message)
        if blocks:
            per_message[str(i)] = (
                "restored" if i in restored else "reordered" if i in reordered else "kept"
            )
            record = record_of_reply(blocks, provider=None, model=None)
            if record is not None:
                sent.append(record)
    per_message.update(dict.fromkeys(map(str, missing), "missing"))
    if limited is not None:
        per_message.update(dict.fromkeys(map(str, limited.stripped), "stripped"))
        per_message.update(dict.fromkeys(map(str, limited.over_budget), "over_budget"))
    return per_message, sent
