"""Which stored record belongs to which assistant message.

A message is identified by what a client that dropped its reasoning still sends back:
role, text content and tool calls. Reasoning fields, the `turn` flag and LiteLLM extras are
ignored, so the same message hashes the same whether or not its reasoning is attached.

Two keys, never guesses:
* an assistant message with tool calls is keyed by its tool-call ids together with their
  function names and its text, by the system prompt the conversation opens with (its leading
  system and developer messages) and by its place in its turn: the user message it follows
  (the last one before it) and how many messages after that user message it stands. Not by the
  rest of the history, so edits to earlier turns do not lose it; but two conversations whose
  providers hand out the same ids (Kimi's `functions.<name>:<idx>`, a local server's
  `call_0`), even with the same user message under two customers' system prompts, or two steps
  of one turn that reuse an id never share a key. Releases 0.2.0 and 0.3.0 keyed such messages
  without the system prompt, 0.1.0 without their place either (`previous_tool_call_keys`):
  records are also written under the 0.2.0/0.3.0 key for old replicas during a rolling
  upgrade, marked so that this release never restores them from there, and a record missing
  under its own key is looked up under both (found only if an old release wrote it);
* any other message is keyed by its place in the conversation: a chained digest of every message
  up to and including it.
Both are hashed with the tenant scope, so one tenant's key can never name another's record.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .extract import (
    BLOCK_TYPES,
    THOUGHT_SEPARATOR,
    own_fields_carry_nothing,
    split_tool_call_id,
)
from .json_once import made_once
from .turns import TURN_KEY

_EMPTY = hashlib.blake2b(b"litellm-reasoning/v1", digest_size=16).hexdigest()
EMPTY_DIGEST = _EMPTY
"""The digest of an empty conversation."""


def _content_parts(content: Any) -> list[Any]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        parts: list[Any] = []
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                if kind in BLOCK_TYPES:
                    continue  # reasoning, not content
                if kind == "text":
                    parts.append(str(part.get("text", "")))
                    continue
                parts.append({k: v for k, v in part.items() if k != "cache_control"})
            else:
                parts.append(part)
        # "abc" and [{"type": "text", "text": "abc"}] are the same message to a provider, and
        # so are "", None and [{"type": "text", "text": ""}] (LiteLLM's Responses bridge sends
        # a reply's empty content back as an empty text part)
        if all(isinstance(p, str) for p in parts):
            text = "".join(parts)
            return [text] if text else []
        return parts
    return [content]


def _tool_calls(message: dict[str, Any]) -> list[list[str]]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    out: list[list[str]] = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        # without LiteLLM's embedded Gemini signature: LiteLLM itself removes it for other
        # providers, and a client may too; it is reasoning, not identity
        out.append([split_tool_call_id(call.get("id"))[0], str(name or "")])
    return out


# One encoder for every message: building a new one per json.dumps call was a third of the cost.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr)
_encode = made_once(_ENCODER)
"""`_ENCODER.encode`, its C encoder built once too (`json_once`)."""


_quote = json.encoder.encode_basestring
"""JSON string literal of a `str` (C), what `_ENCODER` writes for one."""


_QUOTED_ROLES = {
    role: _quote(role) for role in ("system", "developer", "user", "assistant", "tool")
}
EXTRAS_KEY = "provider_specific_fields"

FACT_TURN = 1
"""`read` found `turn` on a content block, a tool call or its function (not the message's own)."""
FACT_CALL_EXTRAS = 2
"""`read` found `provider_specific_fields` on a tool call or its function."""
FACT_ASSISTANT = 4
"""An assistant message."""
FACT_USER = 8
"""A user message."""
FACT_OWN_FIELDS = 16
"""An assistant message whose own fields may hold reasoning (`extract.own_fields_carry_nothing`
is False)."""
FACT_TURN_KEY = 32
"""The message carries `turn` itself."""


def read(message: dict[str, Any]) -> tuple[bytes, bool, int] | None:
    """One pass over a message that holds only strings (or None) where identity looks:
    `(canonical(message), equality_decides(message), facts)`, where `facts` has `FACT_TURN`
    and `FACT_CALL_EXTRAS` set for what its content blocks and tool calls carry (what the turn
    rule strips and what reasoning a tool call may hold: read here so no second pass over the
    lists is needed), and the `FACT_` flags of its role, own fields and `turn` (what the prefix
    cache's walk notes of each message). Written with C string quoting: byte for byte what
    `_general` writes, at a fraction of its cost. None: not such a message."""
    role = message.get("role")
    content = message.get("content")
    calls = message.get("tool_calls")
    call_id = message.get("tool_call_id")
    if not (
        (role is None or type(role) is str)
        and (call_id is None or type(call_id) is str)
        and (calls is None or type(calls) is list)
    ):
        return None
    decided = True
    facts = 0
    if content is None or type(content) is str:
        parts = "[" + _quote(content) + "]" if content else "[]"
    elif type(content) is list:
        texts = []
        has_text = False
        for part in content:
            if type(part) is not dict:
                return None
            kind = part.get("type")
            if kind == "text":
                text = part.get("text", "")
                if type(text) is not str:
                    return None
                texts.append(text)
                has_text = True
            elif kind not in BLOCK_TYPES:
                return None
            decided = decided and type(kind) is str
            if TURN_KEY in part:
                facts |= FACT_TURN
        # only reasoning blocks, or only empty text: no content, as in `_content_parts`
        joined = "".join(texts) if has_text else ""
        parts = "[" + _quote(joined) + "]" if joined else "[]"
    else:
        return None
    if calls:
        written = []
        for call in calls:
            if type(call) is not dict:
                return None
            identifier = call.get("id")
            function = call.get("function")
            if type(function) is dict:
                name = function.get("name")
                if TURN_KEY in function:
                    facts |= FACT_TURN
                if EXTRAS_KEY in function:
                    facts |= FACT_CALL_EXTRAS
            else:
                name = None
                decided = decided and function is None
            if identifier is None:
                identifier = ""
            elif type(identifier) is not str:
                return None
            elif THOUGHT_SEPARATOR in identifier:
                identifier = identifier.partition(THOUGHT_SEPARATOR)[0]
            if name is None:
                name = ""
            elif type(name) is not str:
                return None
            if TURN_KEY in call:
                facts |= FACT_TURN
            if EXTRAS_KEY in call:
                facts |= FACT_CALL_EXTRAS
            written.append(f"[{_quote(identifier)},{_quote(name)}]")
        tool_calls = "[" + ",".join(written) + "]"
    else:
        tool_calls = "[]"
    if not call_id:
        quoted_id = '""'
    else:
        quoted_id = _quote(
            call_id.partition(THOUGHT_SEPARATOR)[0] if THOUGHT_SEPARATOR in call_id else call_id
        )
    quoted_role = (_QUOTED_ROLES.get(role) or _quote(role)) if role else '""'
    if role == "assistant":
        facts |= FACT_ASSISTANT
        if not own_fields_carry_nothing(message):
            facts |= FACT_OWN_FIELDS
    elif role == "user":
        facts |= FACT_USER
    if TURN_KEY in message:
        facts |= FACT_TURN_KEY
    return f"[{quoted_role},{parts},{tool_calls},{quoted_id}]".encode(), decided, facts


def canonical(message: Any) -> bytes:
    """The bytes that identify `message` (most messages take `read`; property test in
    tests/core/test_identity_canonical.py)."""
    if type(message) is dict:
        fast = read(message)
        if fast is not None:
            return fast[0]
    return _general(message)


def canonical_decided(message: Any) -> tuple[bytes, bool]:
    """`(canonical(message), equality_decides(message))` in one pass (what a cache needs)."""
    if type(message) is dict:
        fast = read(message)
        if fast is not None:
            return fast[0], fast[1]
    return _general(message), equality_decides(message)


def _general(message: Any) -> bytes:
    """`canonical` for any value."""
    if not isinstance(message, dict):
        return _encode(["?", repr(type(message))]).encode()
    shape = [
        str(message.get("role") or ""),
        _content_parts(message.get("content")),
        _tool_calls(message),
        split_tool_call_id(message.get("tool_call_id"))[0],
    ]
    return _encode(shape).encode()


_CHAIN_SEED = hashlib.blake2b(digest_size=16)
"""Copied for each digest: a copy costs a third less than a new blake2b with its parameters."""


def chain(previous: str, shape: bytes) -> str:
    """The digest of a conversation `previous` followed by a message of canonical bytes `shape`."""
    digest = _CHAIN_SEED.copy()
    digest.update(previous.encode())
    digest.update(shape)
    return digest.hexdigest()


_chain = chain


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _plain_part(part: Any) -> bool:
    if type(part) is str:
        return True
    if type(part) is not dict or type(part.get("type")) is not str:
        return False
    kind = part["type"]
    return kind in BLOCK_TYPES or (kind == "text" and _str_or_none(part.get("text")))


def _plain_call(call: Any) -> bool:
    if type(call) is not dict or not _str_or_none(call.get("id")):
        return False
    function = call.get("function")
    return function is None or (type(function) is dict and _str_or_none(function.get("name")))


def equality_decides(message: Any) -> bool:
    """True when every message that compares equal (`==`) to `message` has its canonical bytes.

    Equality alone does not always decide them: `1 == 1.0 == True` while their JSON differs, and
    dicts compare equal in any key order while `canonical` encodes some nested dicts in order.
    Messages whose identifying fields hold only strings, None, text parts and reasoning blocks
    are safe; for others a cache must compare canonical bytes."""
    if type(message) is not dict or not _str_or_none(message.get("role")):
        return False
    if not _str_or_none(message.get("tool_call_id")):
        return False
    content = message.get("content")
    if not (_str_or_none(content) or (type(content) is list and all(map(_plain_part, content)))):
        return False
    calls = message.get("tool_calls")
    return calls is None or (type(calls) is list and all(map(_plain_call, calls)))


def prefix_digests(messages: Sequence[Any]) -> list[str]:
    """`out[i]` identifies the conversation up to and including `messages[i]`."""
    return walk(messages)[0]


def walk(messages: Sequence[Any]) -> tuple[list[str], list[bytes]]:
    """Prefix digests and each message's canonical bytes, in one pass (the per-request cost)."""
    digests: list[str] = []
    shapes: list[bytes] = []
    previous = _EMPTY
    for message in messages:
        shape = canonical(message)
        previous = _chain(previous, shape)
        digests.append(previous)
        shapes.append(shape)
    return digests, shapes


def conversation_digest(messages: Sequence[Any]) -> str:
    """Identifies the whole of `messages` (the state a reply answers)."""
    return prefix_digests(messages)[-1] if messages else _EMPTY


def extend_digest(digest: str, message: Any) -> str:
    """The digest of a conversation `digest` followed by `message`."""
    return _chain(digest, canonical(message))


def has_tool_call_ids(message: dict[str, Any]) -> bool:
    """Whether `message` has tool calls and every one has an id (what `_tool_calls` reads)."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return False
    found = False
    for call in calls:
        if isinstance(call, dict):
            identifier = call.get("id")
            if type(identifier) is str:  # the common case, without `split_tool_call_id`
                if not identifier or identifier.startswith(THOUGHT_SEPARATOR):
                    return False
            elif not split_tool_call_id(identifier)[0]:
                return False
            found = True
    return found


def _scope_part(value: Any) -> str:
    # `%`, `|` and `=` escaped: `ns=acme|user=bob` cannot be spelled by a namespace alone.
    # Other values are unchanged, so every scope 0.1.0 could tell apart keeps its keys.
    text = str(value)
    if "%" in text or "|" in text or "=" in text:
        text = text.replace("%", "%25").replace("|", "%7C").replace("=", "%3D")
    return text


def scope_string(parts: Mapping[str, Any]) -> str:
    """The tenant scope of `parts` (name -> value; empty values left out), unambiguous."""
    return "|".join(f"{name}={_scope_part(value)}" for name, value in parts.items() if value)


Anchor = tuple[bytes, int, str]
"""Where a message stands in its conversation: the canonical bytes of the last user message
before it (empty when there is none), how many places after that message it stands, and the
digest of the system prompt the conversation opens with (`system_digest`)."""

NO_ANCHOR: Anchor = (b"", 0, _EMPTY)

SYSTEM_ROLES = frozenset(("system", "developer"))
"""The roles of the messages a system prompt is made of."""


def anchor_at(
    index: int, user: int | None, user_shape: bytes = b"", system: str = _EMPTY
) -> Anchor:
    """The anchor of position `index` whose last user message before it is at `user` (None:
    there is none, and the offset counts from the start); `system`: `system_digest`."""
    return (b"", index + 1, system) if user is None else (user_shape, index - user, system)


def place_of(anchor: Anchor) -> str:
    """A digest of `anchor` alone: what a reply and the tool-call message it becomes share
    whatever came before its user message (a history cut at its head keeps it). Never equal to
    a conversation digest (it starts with "@")."""
    user, offset, system = anchor
    material = b"\x00".join((b"place", system.encode(), str(offset).encode(), user))
    return "@" + hashlib.blake2b(material, digest_size=16).hexdigest()


def leading_system_count(roles: Iterable[Any]) -> int:
    """How many messages the conversation's system prompt spans (its leading system and
    developer messages)."""
    count = 0
    for role in roles:
        if role not in SYSTEM_ROLES:
            break
        count += 1
    return count


def system_digest(shapes: Sequence[bytes]) -> str:
    """The digest of a system prompt given as its messages' canonical bytes: the conversation
    digest through its last message (`_EMPTY`: none)."""
    digest = _EMPTY
    for shape in shapes:
        digest = _chain(digest, shape)
    return digest


def anchor_of(roles_and_shapes: Sequence[tuple[Any, bytes]], index: int) -> Anchor:
    """The anchor of position `index` in a conversation given as (role, canonical bytes)."""
    leading = leading_system_count([role for role, _ in roles_and_shapes[:index]])
    system = system_digest([shape for _, shape in roles_and_shapes[:leading]])
    for position in range(index - 1, -1, -1):
        role, shape = roles_and_shapes[position]
        if role == "user":
            return anchor_at(index, position, shape, system)
    return anchor_at(index, None, system=system)


def message_key(
    scope: str,
    message: dict[str, Any],
    digest_through_message: str,
    shape: bytes | None = None,
    anchor: Anchor = NO_ANCHOR,
) -> str:
    """The store key of an assistant message (see the module docstring). `shape` is its
    `canonical` bytes when the caller has them already; `anchor` its place in its turn."""
    user, offset, system = anchor
    tool_call_key, position_key = key_makers(scope, system)
    if has_tool_call_ids(message):
        return tool_call_key(shape or canonical(message), offset, user)
    return position_key(digest_through_message)


def key_makers(
    scope: str, system: str
) -> tuple[Callable[[bytes, int, bytes], str], Callable[[str], str]]:
    """`message_key`, split in two for one conversation of `scope` whose system prompt has the
    digest `system` (the fixed part of the key material made once): the key of a tool-call
    message from its canonical bytes, its offset and its user message's canonical bytes, and
    the key of any other message from its digest."""
    head, system_bytes, position_head = key_material(scope, system)
    # The fixed heads hashed once; each key continues a copy (the same digest as hashing the
    # whole material, at two thirds of the cost).
    tool_call_seed = hashlib.blake2b(head + b"\x00", digest_size=20)
    position_seed = hashlib.blake2b(position_head, digest_size=20)

    def tool_call_key(shape: bytes, offset: int, user: bytes) -> str:
        digest = tool_call_seed.copy()
        digest.update(b"\x00".join((shape, str(offset).encode(), system_bytes, user)))
        return digest.hexdigest()

    def position_key(digest: str) -> str:
        key = position_seed.copy()
        key.update(digest.encode())
        return key.hexdigest()

    return tool_call_key, position_key


def key_material(scope: str, system: str) -> tuple[bytes, bytes, bytes]:
    """The fixed parts of `key_makers`' material: the tool-call key's head, the system prompt's
    digest, the position key's head."""
    return b"tc3\x00" + scope.encode(), system.encode(), b"pos\x00" + scope.encode() + b"\x00"


def previous_tool_call_keys(
    scope: str, message: dict[str, Any], shape: bytes | None = None, anchor: Anchor = NO_ANCHOR
) -> tuple[str, str] | None:
    """The keys earlier releases filed a tool-call message under: 0.2.0/0.3.0's (its place in
    its turn, no system prompt) and 0.1.0's (neither). None: not a tool-call message."""
    if not has_tool_call_ids(message):
        return None
    shape = shape or canonical(message)
    placed = _placed(b"tc2", scope, shape, anchor)
    unplaced = b"tc\x00" + scope.encode() + b"\x00" + shape
    return (
        hashlib.blake2b(placed, digest_size=20).hexdigest(),
        hashlib.blake2b(unplaced, digest_size=20).hexdigest(),
    )


def _placed(tag: bytes, scope: str, shape: bytes, anchor: Anchor) -> bytes:
    """The key material of a tool-call message at `anchor` as releases 0.2.0/0.3.0 made it
    (`tc2`: no system prompt; this release's is in `key_makers`)."""
    user, offset, _ = anchor
    return b"\x00".join([tag, scope.encode(), shape, str(offset).encode(), user])


def legacy_tool_call_key(
    scope: str, message: dict[str, Any], shape: bytes | None = None
) -> str | None:
    """The key release 0.1.0 filed a tool-call message under (None: not one)."""
    keys = previous_tool_call_keys(scope, message, shape)
    return keys[1] if keys else None


def key_at(scope: str, messages: Sequence[Any], index: int) -> str:
    """The store key of `messages[index]` computed from nothing (what `PrefixCache` caches)."""
    digests, shapes = walk(messages[: index + 1])
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages[:index]]
    anchor = anchor_of(list(zip(roles, shapes, strict=False)), index)
    return message_key(scope, messages[index], digests[index], shapes[index], anchor)


def origin_of(provider: str | None, credentials: Sequence[Any]) -> str:
    """A one-way fingerprint of who issues a deployment's reasoning: its provider and
    credentials (API key, organisation, project, AWS identity). The credential itself is never
    kept: 16 hex digits of a purpose-keyed blake2b, which identify, not reveal."""
    digest = hashlib.blake2b(digest_size=8, person=b"lr-origin")
    for value in (provider, *credentials):
        digest.update(str(value if value is not None else "").encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()
