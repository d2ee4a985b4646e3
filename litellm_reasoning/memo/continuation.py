"""Which remembered conversation a request reuses, for the prefix memos (`prefix_cache`,
`chain_digests`): a worker behind a busy key holds many conversations of one scope, and each
request should cost one comparison per conversation it does not continue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, TypeVar

Held = TypeVar("Held")


def best_earlier(
    items: Sequence[Any],
    candidates: Sequence[Held],
    held_items: Callable[[Held], Sequence[Any]],
    equal_start: Callable[[Any, Any], int],
) -> tuple[Held | None, int]:
    """The candidate `items` share the most leading items with, and how many: the longest
    one they continue whole (`longest_continued`), else the longest common start (an edited
    or forked conversation; (None, 0): none)."""
    continued = longest_continued(items, candidates, held_items, equal_start)
    if continued[0] is not None:
        return continued
    earlier: Held | None = None
    same = 0
    for candidate in candidates:
        matched = equal_start(items, held_items(candidate))
        if matched > same:
            earlier, same = candidate, matched
    return earlier, same


def longest_continued(
    items: Sequence[Any],
    candidates: Sequence[Held],
    held_items: Callable[[Held], Sequence[Any]],
    equal_start: Callable[[Any, Any], int],
) -> tuple[Held | None, int]:
    """The longest candidate whose every held item `items` repeats at the same place (an
    agent loop's next request), and how many items it holds; (None, 0) for none.
    `equal_start(items, held)`: how many leading items are equal, by the memo's own rule. Each
    candidate is first told apart by its last item alone (one comparison, where the
    conversations of one key differ), then checked whole, the longest first: the first one
    found is the answer (a request remembered beside a shorter one it repeats is compared
    once, not twice)."""
    count = len(items)
    helds = [
        (len(held), held, candidate) for candidate in candidates if (held := held_items(candidate))
    ]
    helds.sort(key=_LENGTH, reverse=True)
    for end, held, candidate in helds:
        if (
            end <= count
            and equal(items[end - 1], held[end - 1])
            and equal_start(items, held) == end
        ):
            return candidate, end
    return None, 0


_LENGTH = itemgetter(0)


def equal(item: Any, held: Any) -> bool:
    """`item == held`, False where `==` raises (such an object equals nothing)."""
    try:
        return bool(item == held)
    except Exception:
        return False
