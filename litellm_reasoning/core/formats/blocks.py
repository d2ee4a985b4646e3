"""Messages whose content is typed blocks, reasoning blocks (`thinking`, `redacted_thinking`)
among them in place: the `/v1/messages` format (Claude Code, the Anthropic SDKs) as a
conversation format of its own.

* The turn rule is `core.turns` (a user message holding `tool_result` blocks answers the tool
  loop and starts none, also with text beside the results, as Claude Code adds reminders).
* Identity: a message's shape is its role and content without reasoning blocks and without
  `cache_control` markers (clients move them every request), string content read as one text
  block. An assistant message with tool uses is keyed by its tool-use ids (unique per reply),
  its system prompt and its place in its turn; one without by the conversation before it and
  its own shape. These keys are stored data (tests/core/test_golden_keys.py pins them).
* Which messages carry reasoning: the policy's rule, and the current turn always (the
  provider's validity rule for its tool loop).
* Limits: `core.limits.leave_out`, as for chat messages.

Putting blocks back where they stood in a reply, streams and usage are the adapter's work
(`wire.anthropic.messages`). Pure: no LiteLLM, no I/O, no locks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple

from ..extract import BLOCK_TYPES, _parts_from_blocks
from ..json_once import made_once
from ..limits import leave_out
from ..policy import TurnPolicy
from ..reasoning import Reasoning
from ..turns import starts_turn

EMPTY = hashlib.blake2b(b"", digest_size=16, person=b"lr-msgs").hexdigest()


def content_blocks(content: Any) -> list[Any]:
    """A message's content as blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def reasoning_blocks(message: Any) -> list[dict[str, Any]]:
    """The thinking and redacted-thinking blocks an Anthropic-format message holds."""
    content = message.get("content") if isinstance(message, Mapping) else None
    return [
        b for b in content_blocks(content) if isinstance(b, dict) and b.get("type") in BLOCK_TYPES
    ]


@dataclass(slots=True)
class TranslatedTurns:
    """Per call (`CallState.part`): an Anthropic-format call LiteLLM's adapter sends on as
    chat completions, and whether each user message of the chat call it makes starts a turn
    (`chat_user_turns`: what the translation loses)."""

    starts: list[bool] = field(default_factory=list)


def chat_user_turns(messages: Sequence[Any]) -> list[bool]:
    """For each user message LiteLLM's Anthropic-to-chat adapter makes of `messages` (one per
    Anthropic user message holding anything but `tool_result` blocks), whether it starts a
    turn here (`core.turns.mark_deliveries` puts that back on the chat messages)."""
    out: list[bool] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        blocks = content_blocks(message.get("content"))
        if any(not (isinstance(b, dict) and b.get("type") == "tool_result") for b in blocks):
            out.append(starts_turn(message))
    return out


class BlockFacts(NamedTuple):
    """What the steps of a request read of one message, read once (`facts_of`)."""

    assistant: bool
    """An assistant message (a dict)."""
    asks: bool
    """A user message that holds more than tool results (what a step's place counts from)."""
    reasoning_at: tuple[int, ...]
    """Where its thinking and redacted-thinking blocks stand among its content blocks."""
    blocks: int
    """How many content blocks it has."""
    tool_uses: bool
    compaction: bool
    """An assistant message holding a compaction block."""


def facts_of(message: Any) -> BlockFacts:
    """`BlockFacts` of `message`, in one pass over its blocks."""
    if type(message) is not dict and not isinstance(message, Mapping):
        return BlockFacts(False, False, (), 0, False, False)
    role = message.get("role")
    content = content_blocks(message.get("content"))
    reasoning_at: list[int] = []
    only_results, tool_uses, compaction = True, False, False
    for j, block in enumerate(content):
        if type(block) is dict or isinstance(block, dict):
            kind = block.get("type")
            if kind in BLOCK_TYPES:
                reasoning_at.append(j)
            elif kind == "tool_use":
                tool_uses = True
            elif kind == COMPACTION:
                compaction = True
        else:
            kind = None
            if isinstance(block, Mapping) and block.get("type") == COMPACTION:
                compaction = True
        if kind != "tool_result":
            only_results = False
    asks = role == "user" and (not content or not only_results)
    compacts = role == "assistant" and compaction and isinstance(message.get("content"), list)
    return BlockFacts(
        role == "assistant" and isinstance(message, dict),
        asks,
        tuple(reasoning_at),
        len(content),
        tool_uses,
        compacts,
    )


@lru_cache(maxsize=256)  # a session's messages have few distinct facts (tool use, text)
def with_leading_reasoning(facts: BlockFacts, count: int) -> BlockFacts | None:
    """The facts of an assistant message whose content is `count` reasoning blocks followed by
    the content of the message `facts` are of (`facts_of` of it, without reading it again).
    None for any other message (a user message's `asks` follows from its role, which the
    facts do not hold)."""
    assistant, asks, reasoning_at, blocks, tool_uses, compaction = facts
    if not assistant:
        return None
    leading = tuple(range(count))
    if reasoning_at:  # blocks of its own as well (a client that kept some)
        leading += tuple(count + j for j in reasoning_at)
    # made as a tuple (`_replace` costs as much as reading the message again)
    return _FACTS(BlockFacts, (assistant, asks, leading, blocks + count, tool_uses, compaction))


_FACTS = tuple.__new__
"""A `BlockFacts` from its fields, in C (the named tuple's own `__new__` is Python code)."""


def asking(facts: Sequence[BlockFacts]) -> list[int]:
    """The indices of the messages that hold more than tool results (`BlockFacts.asks`), in C:
    every message that may start a turn (`turns.current_turn_start`'s `among`), so a Claude
    Code session's hundreds of tool results are not each read again for it."""
    return list(compress(range(len(facts)), map(_ASKS, facts)))


_ASKS = attrgetter("asks")


def all_facts(messages: Sequence[Any]) -> list[BlockFacts]:
    return [facts_of(message) for message in messages]


_SHAPE_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
"""`json.dumps(..., sort_keys=True, separators=(",", ":"), default=str)`, made once (`dumps`
makes an encoder per call for any argument of its own); run as `_encode_shape`."""

_encode_shape = made_once(_SHAPE_ENCODER)
_encode_uses = made_once(json.JSONEncoder())
"""`json.dumps(uses)` (the default encoder's settings)."""


def _plain(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def shape(message: Any) -> bytes:
    """What identifies a message: role and content, reasoning blocks and cache markers left out."""
    if not isinstance(message, Mapping):
        return b"?"
    content = [
        _plain(b)
        for b in content_blocks(message.get("content"))
        if not (isinstance(b, dict) and b.get("type") in BLOCK_TYPES)
    ]
    body = {"role": message.get("role"), "content": content}
    return _encode_shape(body).encode()


def next_digest(before: str, message: Any) -> str:
    """The digest of the conversation through `message`, `before` the one before it."""
    digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs")
    digest.update(before.encode())
    digest.update(shape(message))
    return digest.hexdigest()


def prefix_digests(messages: Sequence[Any]) -> list[str]:
    """`out[i]`: the digest of the conversation before message `i`; `out[len]`: of all of it."""
    out = [EMPTY]
    for message in messages:
        out.append(next_digest(out[-1], message))
    return out


def _tool_uses(message: Mapping[str, Any]) -> list[list[str]]:
    return [
        [str(b.get("id")), str(b.get("name"))]
        for b in content_blocks(message.get("content"))
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
    blocks = (
        [{"type": "text", "text": system}] if isinstance(system, str) else content_blocks(system)
    )
    plain = [_plain(b) for b in blocks]
    if all(isinstance(b, dict) and b.get("type") == "text" for b in plain):
        plain = ["".join(str(b.get("text", "")) for b in plain)]
    digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs-sys")
    digest.update(_encode_shape(plain).encode())
    return digest.hexdigest()


def place_of(
    messages: Sequence[Any],
    index: int,
    system: str,
    facts: Sequence[BlockFacts] | None = None,
) -> Place:
    """The `Place` of position `index` (`len(messages)`: the reply's). `facts`: the messages'
    `BlockFacts`, when already read."""
    for position in range(index - 1, -1, -1):
        asks = (facts[position] if facts is not None else facts_of(messages[position])).asks
        if asks:
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
        digest.update(b"tc2\x00" + _encode_uses(uses).encode() + b"\x00" + system.encode())
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
    digest.update(b"tc\x00" + _encode_uses(uses).encode())
    return "m1:" + digest.hexdigest()


def _key_digest(scope: str) -> hashlib.blake2b:
    """A key's digest, begun with the tenant scope."""
    digest = hashlib.blake2b(digest_size=16, person=b"lr-msgs-key")
    digest.update(scope.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    return digest


COMPACTION = "compaction"
"""The block a compaction (`compact-2026-09-04`) leaves in an assistant message: it stands for
every message before it, which the API no longer reads."""


def compaction_index(
    messages: Sequence[Any], facts: Sequence[BlockFacts] | None = None
) -> int | None:
    """The last assistant message holding a compaction block (None: no compaction). Nothing
    before it is restored; the turns kept after it go back unchanged, as the current turn's do:
    the API checks their thinking against the compacted conversation ("Compaction and preserved
    thinking"), so neither the policy nor the budget may take any of it. `facts`: `all_facts`
    of `messages`, when already read."""
    facts = all_facts(messages) if facts is None else facts
    for index in range(len(facts) - 1, -1, -1):
        if facts[index].compaction:
            return index
    return None


def keeps(policy: TurnPolicy, index: int, turn_start: int, facts: BlockFacts) -> bool:
    """Whether an Anthropic-format assistant message (its `facts`) carries its reasoning: as
    `policy` says (`TurnPolicy.keeps_at`), and the current turn always (Claude's validity rule:
    its tool loop needs it, even under `none`)."""
    return index > turn_start or policy.keeps_at(index, turn_start, calls_tools=facts.tool_uses)


def keep_bounds(policy: TurnPolicy, turn_start: int, count: int) -> tuple[int, bool]:
    """`keeps` for the messages of a request of `count`, as `(after, tools)`: a message at
    `index` carries its reasoning when `index > after`, or when `tools` and it has tool uses
    (`TurnPolicy.keep_bounds`, the current turn always)."""
    after, tools = policy.keep_bounds(turn_start, count)
    return min(after, turn_start), tools


def wanted(
    scope: str,
    messages: Sequence[Any],
    policy: TurnPolicy,
    turn_start: int,
    digests: Sequence[str],
    system: str = EMPTY,
    facts: Sequence[BlockFacts] | None = None,
    keys: dict[int, str] | None = None,
) -> tuple[dict[int, str], dict[int, str]]:
    """Message index -> store key of each assistant message that carries reasoning under
    `policy` and came (1) without its blocks, or (2) with them in an order that may not be the
    one Claude issued (more than one block, or one that does not lead, beside tool uses: Claude
    Code moves interleaved blocks, anthropics/claude-code#63508). One walk, one read. `facts`:
    `all_facts(messages)` when already read; `keys`: message index -> key already known for
    this scope, system prompt and conversation up to that message (a prefix memo's), where the
    keys made are added."""
    facts = all_facts(messages) if facts is None else facts
    keys = {} if keys is None else keys
    missing: dict[int, str] = {}
    reorderable: dict[int, str] = {}
    asked_at = -1  # the last user message before `i` that is not only tool results
    asked_shape = b""
    after, tools = keep_bounds(policy, turn_start, len(facts))
    for i, fact in enumerate(facts):
        if fact.asks:
            asked_at, asked_shape = i, b""
        if not fact.assistant:
            continue
        places = fact.reasoning_at
        if places:
            moved = len(places) > 1 or places[0] != 0
            if not (moved and fact.tool_uses):
                continue
            into = reorderable
        else:
            into = missing
        if i > after or (tools and fact.tool_uses):
            key = keys.get(i)
            if key is None:
                if asked_at >= 0 and not asked_shape:
                    asked_shape = shape(messages[asked_at])
                place = _place(i, asked_at, asked_shape, system)
                key = keys[i] = message_key(scope, digests[i], messages[i], place)
            into[i] = key
    return missing, reorderable


def answered(messages: Sequence[Any], facts: Sequence[BlockFacts]) -> int | None:
    """The assistant message whose tool uses the request's last message answers (a user message
    holding tool results: an open tool loop); None: the request does not end that way."""
    last = len(messages) - 1
    if last < 1 or not facts[last - 1].tool_uses:
        return None
    final = messages[last]
    if not isinstance(final, Mapping) or final.get("role") != "user":
        return None
    results = any(
        isinstance(block, Mapping) and block.get("type") == "tool_result"
        for block in content_blocks(final.get("content"))
    )
    return last - 1 if results else None


def refused_without(
    messages: Sequence[Any], facts: Sequence[BlockFacts], missing: Mapping[int, str]
) -> bool:
    """Whether a target with Claude's tool-loop rule refuses the request when a message of
    `missing` (asked for: it came without its blocks) stays without them: the open tool loop's
    message (`answered`) is among them (it must start with its thinking block)."""
    return answered(messages, facts) in missing


def open_loop_without_block(messages: Sequence[Any], facts: Sequence[BlockFacts]) -> bool:
    """Whether the open tool loop's message (`answered`) carries no reasoning block: with
    thinking on, Claude refuses the request."""
    loop = answered(messages, facts)
    return loop is not None and not facts[loop].reasoning_at


def without_reasoning_blocks(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") in BLOCK_TYPES)]
    return {**message, "content": kept}


def reasoning_of_blocks(blocks: Sequence[Any]) -> Reasoning | None:
    """The reasoning `blocks` hold (None: none), as counted for the budget and the summary."""
    parts = _parts_from_blocks(blocks)
    return Reasoning(parts=parts) if parts else None


@dataclass
class Limited:
    """A block-messages request after the policy and the budget (`limit`)."""

    messages: list[Any]
    stripped: list[int] = field(default_factory=list)
    """Earlier-turn messages whose blocks the policy (or the leading-run rule) leaves out."""
    over_budget: list[int] = field(default_factory=list)
    """Earlier-turn messages whose blocks `max_reasoning_tokens` leaves out, oldest first."""
    saved: int = 0
    """Estimated reasoning tokens left out."""


def own_tokens(
    messages: Sequence[Any],
    policy: TurnPolicy,
    start: int,
    count: Callable[[Reasoning], int],
    facts: Sequence[BlockFacts] | None = None,
) -> dict[int, int]:
    """The tokens of the blocks the client's assistant messages carry where `policy` keeps
    them (what `limit` counts of them), by index."""
    facts = all_facts(messages) if facts is None else facts
    tokens: dict[int, int] = {}
    for i, fact in enumerate(facts):
        if fact.assistant and fact.reasoning_at and keeps(policy, i, start, fact):
            record = reasoning_of_blocks(reasoning_blocks(messages[i]))
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
    facts: Sequence[BlockFacts] | None = None,
) -> Limited:
    """Earlier turns carry what `policy` keeps and what fits in `max_tokens` (the chat path's
    rules, `core.limits`): blocks a client kept on a turn the policy leaves out are taken out,
    then the oldest over the budget; with `leading_run` (Claude binds blocks to what precedes
    them) whatever goes is the oldest run; `earlier_required` (DeepSeek's Anthropic API refuses
    a tool-call message without its block on any turn): the budget leaves the kept ones alone.
    The current turn is never touched, nor a message the blocks alone make (an empty message
    would be refused). `unread`: the stored blocks the budget left unread (index -> tokens):
    counted as kept, and over the budget whatever the rest holds. `facts`: `all_facts` of
    `messages`, when already read."""
    facts = all_facts(messages) if facts is None else facts
    out = list(messages)
    assistant = [i for i, fact in enumerate(facts) if fact.assistant]
    # Blocks beside other content (the blocks alone make a message an empty one without them)
    carrying = [i for i in assistant if 0 < len(facts[i].reasoning_at) < facts[i].blocks]
    after, tools = keep_bounds(policy, start, len(facts))
    skipped = (
        [i for i in assistant if i <= after and not (tools and facts[i].tool_uses)]
        if after >= 0
        else []
    )
    skipped_set = set(skipped)
    stripped = [i for i in carrying if i in skipped_set]
    kept = [i for i in carrying if i not in skipped_set]
    tokens: dict[int, int] = {}

    def tokens_of(i: int) -> int:  # counted only where the budget or `saved` needs it
        if i not in tokens:
            record = reasoning_of_blocks(reasoning_blocks(messages[i]))
            tokens[i] = count(record) if record is not None else 0
        return tokens[i]

    unread = unread if max_tokens is not None and unread else {}
    if unread:  # counted as kept (for `saved` too)
        tokens.update(unread)
        kept = sorted({*kept, *unread})
    required = policy.earlier_turns_required or earlier_required
    left = leave_out(
        kept,
        {i: tokens_of(i) for i in kept} if max_tokens is not None else {},
        max_tokens=max_tokens,
        droppable=set() if required else {i for i in kept if i <= start},
        unread=unread,
        leading_run=leading_run,
        skipped=skipped,
    )
    over, over_set = left.over_budget, set(left.over_budget)
    stripped = sorted({*stripped, *left.leading_run})
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
    facts: Sequence[BlockFacts] | None = None,
    records: Mapping[int, Reasoning] | None = None,
) -> tuple[dict[str, str], list[Reasoning]]:
    """Per message "restored" / "kept" / "reordered" / "missing" / "stripped" / "over_budget"
    for the decisions summary, and the records the request carries (what its reasoning tokens
    are counted from). `records`: the records restored messages got their blocks from, by
    index (not read back out of the blocks)."""
    records = {} if records is None else records
    facts = all_facts(messages) if facts is None else facts
    per_message: dict[str, str] = {}
    sent: list[Reasoning] = []
    restored_set, reordered_set = set(restored), set(reordered)
    for i, fact in enumerate(facts):
        if fact.reasoning_at:
            per_message[str(i)] = (
                "restored" if i in restored_set else "reordered" if i in reordered_set else "kept"
            )
            record = records.get(i) if i in restored_set else None
            if record is None:
                record = reasoning_of_blocks(reasoning_blocks(messages[i]))
            if record is not None:
                sent.append(record)
    per_message.update(dict.fromkeys(map(str, missing), "missing"))
    if limited is not None:
        per_message.update(dict.fromkeys(map(str, limited.stripped), "stripped"))
        per_message.update(dict.fromkeys(map(str, limited.over_budget), "over_budget"))
    return per_message, sent
