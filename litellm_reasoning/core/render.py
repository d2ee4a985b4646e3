"""Render a history for one target: the turn rule, the policy and the dialect, applied once.

Pure. The caller (the callback) looks up stored reasoning for the indices `plan` names and hands
it to `render`, which never mutates its input: changed messages are new dicts, unchanged ones
are passed through as they are.

`render` can remember, per assistant message, what it decided and how the dialect changed the
message (`recipes`), so the next request of the same conversation, whose messages compare equal
(see `prefix_cache`), applies the same change without asking the dialect again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import islice
from operator import is_
from typing import Any, Protocol

from .dialect import Dialect
from .extract import carries_nothing, reasoning_from_message
from .messages import tool_calls_answered
from .policy import TurnPolicy
from .reasoning import Reasoning, set_plain
from .turns import carries_turn, current_turn_start, item_without_turn


@dataclass(frozen=True, slots=True)
class Rendered:
    """The messages for the wire and what happened to each assistant message's reasoning.
    Never changed once `render` made it: the adapter's `finish` and the limits return new
    values (`Finished.applied_to`, `limits.apply_limits`)."""

    messages: list[Any]
    turn_start: int
    kept: list[int] = field(default_factory=list)
    """Indices whose reasoning is sent."""
    restored: list[int] = field(default_factory=list)
    """Kept indices whose reasoning came from the store (the client had dropped it)."""
    stripped: list[int] = field(default_factory=list)
    """Indices whose client-sent reasoning was removed (earlier turn, or not accepted)."""
    missing: list[int] = field(default_factory=list)
    """Indices that should carry reasoning but none was sent or stored."""
    dropped: list[int] = field(default_factory=list)
    """Indices whose reasoning the target cannot take (another issuer's signature, or none)."""
    reordered: list[int] = field(default_factory=list)
    """Kept indices whose blocks the client sent in another order than the provider issued
    them: sent in the issued order (exact matches only; the dialect's `finish` decides)."""


def _own(message: Any) -> Reasoning | None:
    return reasoning_from_message(message) if isinstance(message, dict) else None


def own_reasonings(messages: Sequence[Any]) -> list[Reasoning | None]:
    """What each assistant message carries itself; read once, shared by `plan` and `render`."""
    return [
        _own(m) if isinstance(m, dict) and m.get("role") == "assistant" else None for m in messages
    ]


def assistant_indices(messages: Sequence[Any]) -> list[int]:
    """Indices of the assistant message dicts (the only ones a dialect renders)."""
    return [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def effective_turn_start(
    messages: Sequence[Any], dialect: Dialect, among: Sequence[Sequence[int]] | None = None
) -> int:
    """The turn rule's start, moved back where the target's own validity rule requires more
    (Claude's open tool loop). A provider rule only ever adds to the current turn. `among`: as
    for `current_turn_start`."""
    start = current_turn_start(messages, among)
    loop = dialect.validity_start(messages)
    if loop is not None and loop <= start:
        return loop - 1
    return start


def refused_without(
    messages: Sequence[Any], dialect: Dialect, policy: TurnPolicy, wanted: Sequence[int]
) -> bool:
    """Whether the target refuses the request when the reasoning of `wanted` (the messages
    looked up) is missing: DeepSeek with tools (`requires_reasoning`), Kimi's rule on every
    tool-call message (`earlier_turns_required`), Claude's open tool loop (`validity_start`).
    Such a lookup is worth waiting for; elsewhere a miss costs quality, not the call."""
    if not wanted or policy is TurnPolicy.NONE or not dialect.accepts_reasoning:
        return False
    if dialect.requires_reasoning:
        return True
    if policy.earlier_turns_required and any(
        isinstance(messages[i], dict) and messages[i].get("tool_calls") for i in wanted
    ):
        return True
    # Only a dialect with such a rule looks for it (the hot path of every other).
    if not dialect.has_tool_loop_rule:
        return False
    # Claude's open tool loop: the request ends with the results of a wanted message's calls.
    if tool_calls_answered(messages, len(messages) - 1) in wanted:
        return True
    return dialect.validity_start(messages) is not None


def reply_needed_next(dialect: Dialect, policy: TurnPolicy) -> bool:
    """Whether the next request of a tool loop is refused without the reasoning of a reply to
    this target (so writing it may wait for the store's longer deadline)."""
    if policy is TurnPolicy.NONE or not dialect.accepts_reasoning:
        return False
    return dialect.requires_reasoning or dialect.has_tool_loop_rule or policy.earlier_turns_required


def plan(
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    owns: Sequence[Reasoning | None] | Mapping[int, Reasoning | None] | None = None,
    assistant: Sequence[int] | None = None,
    *,
    turn_start: int | None = None,
) -> list[int]:
    """Indices of assistant messages whose reasoning should be looked up in the store.
    `owns` is `own_reasonings(messages)`, `assistant` is `assistant_indices(messages)` and
    `turn_start` is `effective_turn_start(messages, dialect)` when the caller has them
    already. A dialect that `keeps_block_order` also reads the records of the kept messages
    with tool calls the client kept reasoning on: they say where the blocks stood in the reply
    (LiteLLM regroups them)."""
    passes = dialect.passthrough or policy is TurnPolicy.NONE or not dialect.accepts_reasoning
    if passes and not dialect.keeps_block_order:
        return []
    # One scan for the turn's start and one list of assistant messages, for both reads.
    if turn_start is None:
        turn_start = effective_turn_start(messages, dialect)
    indices = assistant_indices(messages) if assistant is None else assistant
    wanted = [] if passes else _missing(messages, dialect, policy, owns, indices, turn_start)
    if not dialect.keeps_block_order:
        return wanted
    laid_out = [
        i
        for i in indices
        if messages[i].get("tool_calls") and policy.keeps(i, messages[i], turn_start)
    ]
    return sorted({*wanted, *laid_out})


def _missing(
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    owns: Sequence[Reasoning | None] | Mapping[int, Reasoning | None] | None,
    indices: Sequence[int],
    turn_start: int,
) -> list[int]:
    """The kept assistant messages whose reasoning the client did not send (or sent without
    the opaque part a dialect that prefers it wants)."""
    if policy is not TurnPolicy.ALL_TURNS:
        indices = [i for i in indices if policy.keeps(i, messages[i], turn_start)]
    if owns is None:
        owns = {i: _own(messages[i]) for i in indices}
    elif type(owns) is list and not any(owns):
        # A client that drops reasoning: no message carries any (in C; a record is never falsy,
        # and `count(None)` would call each record's `__eq__`).
        return list(indices)
    if not dialect.prefers_opaque:
        return [i for i in indices if owns[i] is None]
    return [
        i
        for i in indices
        if (own := owns[i]) is None or not any(part.is_opaque for part in own.parts)
    ]


class Outcome(IntEnum):
    """What `render` decided for one assistant message's reasoning (the first five index the
    matching lists of `Rendered`, in its field order)."""

    KEPT = 0
    RESTORED = 1
    STRIPPED = 2
    MISSING = 3
    DROPPED = 4
    NOTHING = 5
    """No reasoning to send or strip."""


class How(IntEnum):
    """How a remembered `Recipe` remakes its message."""

    SAME = 0
    """The message as it is."""
    MERGE = 1
    """Plus `extra` (immutable values)."""
    COPY = 2
    """Plus fresh copies of `extra`."""
    CALL = 3
    """Ask the dialect again (it changed or removed fields)."""


_KEPT, _RESTORED, _STRIPPED, _MISSING, _DROPPED, _NOTHING = Outcome
_SAME, _MERGE, _COPY, _CALL = How
_IMMUTABLE = (str, int, float, bool, bytes, type(None))


class Replay(Protocol):
    """The accelerator's `replay` (`_accel.c`): `render`'s loop over `indices`, done in C for
    the messages whose remembered recipe holds as it is (the same objects) and is `How.SAME`
    or `How.MERGE`, and those without a recipe that are kept, carry nothing (`bare`) and take a
    record decided for before (`Reasoning._plain`); returns the indices it leaves to the general
    path, in order. `keep_after` and `tools_keep` are `TurnPolicy.keep_bounds`."""

    def __call__(
        self,
        out: list[Any],
        indices: list[int],
        recipes: list[Recipe | None],
        owns: list[Reasoning | None],
        stored: dict[int, Reasoning],
        keep_after: int,
        tools_keep: bool,
        dialect: str,
        lists: tuple[list[int], list[int], list[int], list[int], list[int]],
        bare: list[bool],
        /,
    ) -> list[int]: ...


@dataclass(slots=True)
class Recipe:
    """What `render` did to one assistant message (never changed once made: shared by the
    requests that reuse it; not frozen, which is slower to build). It holds for an equal
    message rendered again with the same dialect and keep decision, and the same own and stored
    reasoning (the same objects, or equal values: the outcome only depends on them)."""

    dialect: str
    keep: bool
    own: Reasoning | None
    from_store: Reasoning | None
    reasoning: Reasoning | None
    """What was handed to the dialect."""
    outcome: Outcome
    how: How
    extra: dict[str, Any]


def _has_details(reasoning: Reasoning | None) -> bool:
    return reasoning is not None and any(part.details for part in reasoning.parts)


def _copyable(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _IMMUTABLE):
        return True
    if depth > 3:
        return False
    if type(value) is list:
        return all(_copyable(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _copyable(v, depth + 1) for k, v in value.items())
    return False


def _fresh(value: Any) -> Any:
    """A new copy of a JSON-like `value`, so no two requests share a mutable part."""
    if type(value) is list:
        return [_fresh(v) for v in value]
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _added_fields(base: dict[str, Any], out: dict[str, Any]) -> tuple[How, dict[str, Any]]:
    """How `out` was made from `base`: `base` itself, or `base` plus fields appended after it
    (`base`'s values untouched, in order), or something else (`_CALL`)."""
    size = len(base)
    if len(out) < size:
        return _CALL, {}
    # in C: the same keys in the same order, then the very same values
    if list(islice(out, size)) != list(base) or not all(
        map(is_, islice(out.values(), size), base.values())
    ):
        return _CALL, {}
    extra = dict(islice(out.items(), size, None))
    if not extra:
        return _SAME, extra
    if all(isinstance(v, _IMMUTABLE) for v in extra.values()):
        return _MERGE, extra
    if all(_copyable(v) for v in extra.values()):
        # A copy: `out` goes to LiteLLM, which may change its lists.
        return _COPY, {key: _fresh(value) for key, value in extra.items()}
    return _CALL, {}


def render(
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    stored: Mapping[int, Reasoning] | None = None,
    owns: Sequence[Reasoning | None] | None = None,
    *,
    assistant: Sequence[int] | None = None,
    flagged: Sequence[int] | None = None,
    recipes: list[Recipe | None] | None = None,
    bare: Sequence[bool] | None = None,
    turn_start: int | None = None,
    replay: Replay | None = None,
) -> Rendered:
    """`messages` as `dialect` wants them under `policy`, with `stored` reasoning restored.

    `owns` and `assistant` as for `plan`; `flagged`: the indices of the dicts carrying `turn`.
    `recipes` (one slot per message) holds what an equal earlier message was rendered to; it is
    read, and filled in for every rendered message. `bare[i]` True: `carries_nothing` is known
    for message `i` (from the walk), so it is not asked again. `turn_start`:
    `effective_turn_start(messages, dialect)`, when the caller has it. `replay`: the
    accelerator's loop for the messages whose recipe holds as it is (`Replay`).
    """
    stored = stored or {}
    if not dialect.accepts_reasoning:
        policy = TurnPolicy.NONE
    if turn_start is None:
        turn_start = effective_turn_start(messages, dialect)
    out = list(messages)
    result = Rendered(messages=out, turn_start=turn_start)
    if flagged is None:
        flagged = [i for i, m in enumerate(messages) if isinstance(m, dict) and carries_turn(m)]
    for index in flagged:
        out[index] = item_without_turn(messages[index])
    if dialect.passthrough:
        return result
    lists = (result.kept, result.restored, result.stripped, result.missing, result.dropped)
    kept = result.kept
    name = dialect.name
    keep_all = policy is TurnPolicy.ALL_TURNS
    from_stored = stored.get
    indices = assistant_indices(messages) if assistant is None else assistant
    both_decided = False
    if (
        replay is not None
        and type(indices) is list
        and type(recipes) is list
        and type(owns) is list
        and type(stored) is dict
    ):
        keep_after, tools_keep = policy.keep_bounds(turn_start, len(messages))
        walked_bare = bare if type(bare) is list else []
        left = replay(
            out, indices, recipes, owns, stored, keep_after, tools_keep, name, lists, walked_bare
        )
        # Both appended to the lists: each back in index order, as one loop leaves them.
        both_decided = 0 < len(left) < len(indices)
        indices = left
    for index in indices:
        base = out[index]
        own = owns[index] if owns is not None else _own(base)
        keep = keep_all or policy.keeps(index, base, turn_start)
        from_store = from_stored(index) if keep else None
        recipe = recipes[index] if recipes is not None else None
        known = bare[index] if bare else False  # carries nothing, known from the walk
        by_record = own is None and from_store is not None and known
        if recipe is not None and (
            recipe.keep is not keep
            or recipe.dialect != name
            # identity first (the memory store hands out the same records): nothing allocated
            or not (
                (recipe.from_store is from_store and recipe.own is own)
                or (
                    # Equal values: a record decoded again (or another store's). Where the
                    # record decides alone, decided for this one instead, so the next request
                    # finds it by identity (in C) rather than comparing values again.
                    not by_record
                    and recipe.from_store == from_store
                    and recipe.own == own
                    # provider dicts compare equal in any key order, but are sent in theirs
                    and not _has_details(own)
                    and not _has_details(from_store)
                )
            )
        ):
            recipe = None
        remade = (
            _by_plain(base, from_store, name)
            if recipe is None and by_record and from_store is not None
            else None
        )
        if remade is not None:
            outcome, out[index] = remade
        elif recipe is None:
            recipe, rendered = _decide(dialect, base, name, keep, own, from_store, known)
            if recipes is not None:
                recipes[index] = recipe
            if recipe.how != _SAME:
                out[index] = rendered
            outcome = recipe.outcome
        else:
            how = recipe.how
            if how == _MERGE:
                out[index] = {**base, **recipe.extra}
            elif how == _COPY:
                out[index] = {**base, **_fresh(recipe.extra)}
            elif how == _CALL:
                out[index] = dialect.render(base, recipe.reasoning)
            outcome = recipe.outcome
        if outcome != _NOTHING:
            if outcome == _RESTORED:
                kept.append(index)
            lists[outcome].append(index)
    if both_decided:
        for decided in lists:
            decided.sort()
    return result


def _by_plain(
    base: dict[str, Any], record: Reasoning, name: str
) -> tuple[int, dict[str, Any]] | None:
    """`base` remade by the decision `record` keeps for dialect `name` (`Reasoning._plain`),
    with its outcome; None where it keeps none for it. No recipe is kept: the next request
    decides the same (the accelerator's `plain_one` alike)."""
    plain = record._plain
    if plain is None or plain[0] != name:
        return None
    _, outcome, fields = plain
    if not fields:
        return outcome, base
    merged = base.copy()
    merged.update(fields)  # (key, value) pairs
    return outcome, merged


def _decide(
    dialect: Dialect,
    base: dict[str, Any],
    name: str,
    keep: bool,
    own: Reasoning | None,
    from_store: Reasoning | None,
    bare: bool = False,
) -> tuple[Recipe, dict[str, Any]]:
    """The turn rule, the policy and the dialect for one assistant message (`bare`: it is
    known to carry nothing)."""
    reasoning: Reasoning | None = None
    outcome = _NOTHING
    if keep:
        use_store = from_store is not None and (
            own is None or (dialect.prefers_opaque and not any(p.is_opaque for p in own.parts))
        )
        reasoning = from_store if use_store else own
        if reasoning is None:
            outcome = _MISSING
        elif not reasoning.is_empty:
            if dialect.accepts(reasoning):
                outcome = _RESTORED if use_store else _KEPT
            else:
                outcome = _DROPPED
                reasoning = None
    elif own is not None and not own.is_empty:
        outcome = _STRIPPED
    fields = dialect.plain_fields(reasoning) if own is None else None
    if fields is not None and (bare or carries_nothing(base)):
        # What `render` would do, without its copy and the comparison that finds the fields.
        how = _MERGE if fields else _SAME
        if keep and from_store is not None:
            # The decision follows from the record and the dialect alone: kept with the record
            # for the next message that takes it. An int and pairs of strings: tuples the
            # collector stops tracking after a few collections (a dict in them would keep
            # them on its lists: one more object per record in every full collection).
            set_plain(from_store, (name, int(outcome), tuple(fields.items())))
        recipe = Recipe(name, keep, own, from_store, reasoning, outcome, how, fields)
        return recipe, {**base, **fields} if fields else base
    rendered = dialect.render(base, reasoning)
    how, extra = (_SAME, {}) if rendered is base else _added_fields(base, rendered)
    return Recipe(name, keep, own, from_store, reasoning, outcome, how, extra), rendered
