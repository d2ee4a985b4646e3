"""After the policy: the provider's strip rule and the reasoning budget, applied to a rendered
request. Pure (no LiteLLM, no I/O); never mutates its inputs' dicts.

Both only ever leave reasoning *out* of earlier turns, oldest first, so the current turn's tool
loop (which Claude, DeepSeek, Kimi and Gemini require) is never touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from .dialect import Dialect
from .policy import StripRule, TurnPolicy, leading_run_violations, over_budget
from .reasoning import Reasoning, counted_tokens
from .render import Rendered
from .turns import item_without_turn

TokenCounter = Callable[[Reasoning], int]


def estimate_tokens(reasoning: Reasoning) -> int:
    """The default token counter: `Reasoning.estimated_tokens` (characters / 4 over the text
    and the opaque payloads; worked out once per record)."""
    return reasoning.estimated_tokens


class TokenCounts(Protocol):
    """The estimated reasoning tokens of a rendered request's messages, by index."""

    def counts(self, indices: Sequence[int]) -> list[int]:
        """One count per index (0: no reasoning)."""
        ...

    def total(self, indices: Sequence[int]) -> int:
        """`sum(self.counts(indices))`."""
        ...


class CountedMapping:
    """`TokenCounts` of `{index: reasoning}`, counted when asked."""

    def __init__(self, reasoning_of: Mapping[int, Reasoning], count: TokenCounter) -> None:
        self.reasoning_of = reasoning_of
        self.count = count

    def counts(self, indices: Sequence[int]) -> list[int]:
        get, count = self.reasoning_of.get, self.count
        return [count(r) if (r := get(i)) is not None else 0 for i in indices]

    def total(self, indices: Sequence[int]) -> int:
        return sum(self.counts(indices))


class RecordCounts:
    """`TokenCounts` of a rendered request with the default counter: each message's reasoning
    is its stored record where it was restored, else its own; each record knows its count
    (`Reasoning.estimated_tokens`), so nothing is remembered here."""

    def __init__(
        self,
        stored: Mapping[int, Reasoning],
        owns: Sequence[Reasoning | None],
        restored: Sequence[int],
    ) -> None:
        self.stored = stored
        self.owns = owns
        self.restored = restored  # as rendered, before the limits
        self._restored_set: set[int] | None = None  # made where a list compare cannot decide

    def _records(self, indices: Sequence[int]) -> list[Reasoning | None]:
        stored = self.stored
        if not indices:  # nothing stripped (asked on every request): no set made for it
            return []
        # A client that drops reasoning: every kept index was restored (a list compare, in C).
        if indices == self.restored:
            return list(map(stored.get, indices))
        if self._restored_set is None:
            self._restored_set = set(self.restored)
        restored = self._restored_set
        if restored.issuperset(indices):
            return list(map(stored.get, indices))
        owns = self.owns
        return [stored.get(i) if i in restored else owns[i] for i in indices]

    def counts(self, indices: Sequence[int]) -> list[int]:
        records = self._records(indices)
        try:  # every index has a record counted before (the common case): read in C
            counts: list[int | None] = list(map(counted_tokens, records))
            if None not in counts:
                return cast(list[int], counts)
        except AttributeError:  # None where neither the store nor the client had one
            pass
        return _estimated(records)

    def total(self, indices: Sequence[int]) -> int:
        records = self._records(indices)
        try:  # every record counted before: summed in C, no list of counts
            return sum(map(counted_tokens, records))
        except (AttributeError, TypeError):  # a None record, or a count not worked out yet
            return sum(_estimated(records))


def _estimated(records: Sequence[Reasoning | None]) -> list[int]:
    """Each record's estimated tokens (worked out where not yet), 0 for none."""
    return [r.estimated_tokens if r is not None else 0 for r in records]


@dataclass(slots=True)
class Limited:
    """What the strip rule and the budget left out, on top of the policy."""

    over_budget: list[int] = field(default_factory=list)
    """Indices whose reasoning the budget left out (oldest first)."""
    leading_run: list[int] = field(default_factory=list)
    """Indices left out so that the removed blocks stay one leading run (bound providers)."""
    tokens: dict[int, int] = field(default_factory=dict)
    """Estimated reasoning tokens per kept index, when a budget needed them (else empty)."""
    sent: int = 0
    """Estimated reasoning tokens sent (the kept indices, after the limits)."""
    saved: int = 0
    """Estimated reasoning tokens left out: stripped (policy, strip rule) and over budget."""


@dataclass(frozen=True, slots=True)
class LeftOut:
    """What the budget and the strip rule leave out of a request, on top of the policy."""

    over_budget: list[int]
    """Indices whose reasoning the budget leaves out, oldest first (the unread ones too)."""
    leading_run: list[int]
    """Kept indices left out so that what goes is one leading run (bound providers)."""


def leave_out(
    kept: Sequence[int],
    tokens: Mapping[int, int],
    *,
    max_tokens: int | None,
    droppable: Collection[int],
    unread: Mapping[int, int],
    leading_run: bool,
    skipped: Sequence[int] = (),
) -> LeftOut:
    """The one limits decision of every conversation format (chat messages, block messages,
    input items), after the policy: the oldest `droppable` reasoning over `max_tokens`
    (`policy.over_budget`), then, with `leading_run`, every kept index before the last one
    left out. `kept`: the indices sending reasoning; `tokens`: their estimated tokens (asked
    only with a budget); `unread`: records the budget left unread (`unread_over_budget`, index
    -> tokens): counted as kept and over the budget whatever the rest holds; `skipped`: indices
    whose reasoning the policy already left out (they count for the leading run)."""
    over: list[int] = []
    if max_tokens is not None:
        counted = {**tokens, **unread} if unread else tokens
        over = sorted({*over_budget(list(counted), counted, max_tokens, droppable), *unread})
    if not leading_run:
        return LeftOut(over, [])
    gone = set(over)
    run = leading_run_violations([i for i in kept if i not in gone], [*skipped, *over])
    return LeftOut(over, run)


def unread_over_budget(
    stored: Mapping[int, int],
    own: Mapping[int, int],
    max_tokens: int,
    droppable: Collection[int],
) -> dict[int, int]:
    """The stored records the budget leaves out whatever the others hold, decided from their
    sizes before anything is read (`over_budget`'s rule on the same counts), so they are never
    fetched: index -> estimated tokens. `stored`: the tokens of the records the request would
    read; `own`: of the reasoning the client's messages carry and the policy keeps (a stored
    record takes the place of its message's own)."""
    tokens = {**own, **stored}
    over = over_budget(sorted(tokens), tokens, max_tokens, droppable)
    return {i: stored[i] for i in over if i in stored}


def apply_limits(
    rendered: Rendered,
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    reasoning_of: Mapping[int, Reasoning] | None = None,
    *,
    strip: StripRule = "any",
    max_tokens: int | None = None,
    count: TokenCounter = estimate_tokens,
    counted: TokenCounts | None = None,
    assistant: Sequence[int] | None = None,
    unread: Mapping[int, int] | None = None,
) -> tuple[Rendered, Limited]:
    """Leave out what the budget and the strip rule require: `rendered` as sent (a new value
    where anything was left out; `rendered` itself unchanged) and what was decided.

    `leading_run`: whatever is left out must be the oldest blocks. A message the policy does
    not keep counts as left out (whether or not the client still had its block), so every kept
    message before it is left out too.

    `reasoning_of` holds the reasoning of every kept and stripped index (what was sent, what
    the policy removed), counted with `count`; or `counted` counts them (see `TokenMemo`).
    Only what the budget and the summary's sums need is counted. `assistant`:
    `render.assistant_indices(messages)` when the caller has it. Indices taken out of `kept` go
    to `stripped` (strip rule) or `Limited.over_budget` (budget). `unread`: the
    records `unread_over_budget` left unread (index -> tokens): counted in the budget as if
    they were kept, and over it whatever the rest holds.
    """
    if counted is None:
        counted = CountedMapping(reasoning_of or {}, count)
    limited = Limited()
    unread = unread or {}
    if not dialect.passthrough:
        rendered = _limit(
            rendered,
            messages,
            dialect,
            policy,
            limited,
            counted,
            strip,
            max_tokens,
            assistant,
            unread,
        )
    limited.sent = counted.total(rendered.kept)
    # `tokens` holds every index the budget left out (unread ones included).
    over_tokens = sum(limited.tokens.get(i, 0) for i in limited.over_budget)
    limited.saved = counted.total(rendered.stripped) + over_tokens
    return rendered, limited


def _limit(
    rendered: Rendered,
    messages: Sequence[Any],
    dialect: Dialect,
    policy: TurnPolicy,
    limited: Limited,
    counted: TokenCounts,
    strip: StripRule,
    max_tokens: int | None,
    assistant: Sequence[int] | None,
    unread: Mapping[int, int],
) -> Rendered:
    if max_tokens is None and strip != "leading_run":
        return rendered
    skipped: list[int] = []
    if strip == "leading_run":
        # Every message the policy does not keep may have had a block (a client that dropped
        # it sends nothing to tell): it counts as left out, as do what was stripped or cut.
        if assistant is None:
            assistant = [
                index
                for index, message in enumerate(messages)
                if isinstance(message, dict) and message.get("role") == "assistant"
            ]
        turn_start = rendered.turn_start
        skipped = [
            index for index in assistant if not policy.keeps(index, messages[index], turn_start)
        ]
        skipped += rendered.stripped
    if max_tokens is not None:
        limited.tokens = dict(zip(rendered.kept, counted.counts(rendered.kept), strict=True))
        limited.tokens.update(unread)  # counted as kept: over the budget whatever the rest holds
    droppable = (
        ()
        if max_tokens is None or policy.earlier_turns_required
        else {i for i in limited.tokens if i <= rendered.turn_start}
    )
    left = leave_out(
        rendered.kept,
        limited.tokens,
        max_tokens=max_tokens,
        droppable=droppable,
        unread=unread if max_tokens is not None else {},
        leading_run=strip == "leading_run",
        skipped=skipped,
    )
    limited.over_budget = left.over_budget
    if unread and max_tokens is not None:  # not read: over the budget, not missing
        missing = [i for i in rendered.missing if i not in unread]
        if len(missing) != len(rendered.missing):
            rendered = dataclasses.replace(rendered, missing=missing)
    rendered = _leave_out(rendered, messages, dialect, limited.over_budget)
    if strip == "leading_run":
        limited.leading_run = left.leading_run
        rendered = _leave_out(rendered, messages, dialect, limited.leading_run)
        if limited.leading_run:
            stripped = sorted([*rendered.stripped, *limited.leading_run])
            rendered = dataclasses.replace(rendered, stripped=stripped)
    return rendered


def _leave_out(
    rendered: Rendered, messages: Sequence[Any], dialect: Dialect, indices: Sequence[int]
) -> Rendered:
    """`rendered` with `indices` rendered with no reasoning and out of `kept` / `restored`."""
    if not indices:
        return rendered
    gone = set(indices)
    out = list(rendered.messages)
    for index in indices:
        out[index] = dialect.render(item_without_turn(messages[index]), None)
    return dataclasses.replace(
        rendered,
        messages=out,
        kept=[i for i in rendered.kept if i not in gone],
        restored=[i for i in rendered.restored if i not in gone],
    )
