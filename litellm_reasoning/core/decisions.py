"""One request's decisions, as a small JSON-able summary: what happened to each assistant
message's reasoning and how many reasoning tokens were sent and saved.

Pure. The callback puts the summary where LiteLLM's logging integrations see it (the request's
`spend_logs_metadata`, so the StandardLoggingPayload and the proxy's spend logs carry it), logs
it at DEBUG and counts it in Prometheus (`metrics.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from .limits import Limited
from .render import Rendered
from .targets import Target

METADATA_KEY = "litellm_reasoning"
"""The key under `metadata.spend_logs_metadata` that holds the summary."""

DECISIONS = (
    "kept",
    "restored",
    "reordered",
    "stripped",
    "dropped_foreign",
    "missing",
    "over_budget",
)
"""Per assistant message: `kept` (sent as the client sent it), `restored` (sent from the
store: the client had dropped it), `stripped` (the client sent it, the policy or the strip rule
left it out), `dropped_foreign` (another issuer's or unsigned: the target cannot take it),
`missing` (the policy wants it but nobody had it), `over_budget` (left out by
`max_reasoning_tokens`), `reordered` (the client sent the provider's exact blocks in another
order or grouping: sent in the order the provider issued them)."""


def summarize(rendered: Rendered, target: Target, limited: Limited) -> dict[str, Any]:
    """The summary of one rendered request.

    `reasoning_tokens.sent` is the estimated reasoning sent; `saved` what the policy, the
    strip rule and the budget left out of what the client sent or the store held (reasoning
    the client dropped and the policy never asked for is not counted: it was never looked up).
    """
    # Built with C-level passes (dict.fromkeys, map): this runs on every request, over every
    # assistant message of the history. Later decisions override earlier ones, as listed.
    kept, restored = rendered.kept, rendered.restored
    groups = (
        ("reordered", rendered.reordered),
        ("stripped", rendered.stripped),
        ("dropped_foreign", rendered.dropped),
        ("missing", rendered.missing),
        ("over_budget", limited.over_budget),
    )
    if restored == kept and not any(indices for _, indices in groups):
        # Every decision `restored` (a client that drops reasoning, every record found: an
        # agent loop's request): one pass over the indices, in index order already.
        messages = dict.fromkeys(_names(sorted(kept)), "restored")
        counts = dict.fromkeys(DECISIONS, 0)
        counts["restored"] = len(messages)
        return _summary(target, limited, messages, counts)
    if restored == kept:  # a client that drops reasoning: everything sent came from the store
        per_message = dict.fromkeys(kept, "restored")
        n_restored = len(per_message)
    else:
        per_message = dict.fromkeys(kept, "kept")
        restored_kept = per_message.keys() & set(restored)
        per_message.update(dict.fromkeys(restored_kept, "restored"))
        n_restored = len(restored_kept)
    for name, indices in groups:
        if indices:
            per_message.update(dict.fromkeys(indices, name))
    counts = dict.fromkeys(DECISIONS, 0)
    if len(per_message) == len(kept) + sum(len(indices) for _, indices in groups):
        # No index in two lists (nor twice in one): each list's length is its count.
        counts["kept"], counts["restored"] = len(kept) - n_restored, n_restored
        for name, indices in groups:
            counts[name] = len(indices)
    else:
        counts.update(Counter(per_message.values()))
    order = sorted(per_message)
    keys = _names(order)
    single = [name for name, count in counts.items() if count]
    if len(single) == 1:
        messages = dict.fromkeys(keys, single[0])
    else:
        messages = dict(zip(keys, map(per_message.__getitem__, order), strict=True))
    return _summary(target, limited, messages, counts)


def _names(order: list[int]) -> Iterator[str]:
    """The summary's keys of the indices `order` (ascending)."""
    names = _index_names(order[-1] if order else 0)
    return map(names.__getitem__, order) if names else map(str, order)


def _summary(
    target: Target, limited: Limited, messages: dict[str, str], counts: dict[str, int]
) -> dict[str, Any]:
    return {
        "policy": target.policy.value,
        "dialect": target.dialect.name,
        "why": target.why,
        "messages": messages,
        "counts": counts,
        "reasoning_tokens": {"sent": limited.sent, "saved": limited.saved},
    }


_MAX_NAMED = 1 << 16
_INDEX_NAMES: list[str] = []
"""`str(i)` for the indices seen so far: the summary's keys, made once."""


def _index_names(top: int) -> list[str]:
    """`[str(i) for i in range(top + 1)]` or longer; empty above `_MAX_NAMED`."""
    global _INDEX_NAMES
    names = _INDEX_NAMES
    if top < len(names):
        return names
    if top >= _MAX_NAMED:
        return []
    # A new list, swapped in whole: a concurrent reader keeps a correct (shorter) one.
    size = min(max(top + 1, 2 * len(names)), _MAX_NAMED)
    names = [*names, *map(str, range(len(names), size))]
    _INDEX_NAMES = names
    return names


def with_summary(metadata: Any, summary: dict[str, Any]) -> dict[str, Any] | None:
    """`metadata.spend_logs_metadata` with the summary added under `METADATA_KEY` (a new dict:
    the caller's own `spend_logs_metadata` is left as it was). None when the caller set
    `spend_logs_metadata` to something that is not a mapping (left alone)."""
    existing = metadata.get("spend_logs_metadata") if isinstance(metadata, dict) else None
    if existing is None:
        return {METADATA_KEY: summary}
    if not isinstance(existing, dict):
        return None
    return {**existing, METADATA_KEY: summary}


def summary_of(
    target: Target, per_message: dict[str, str], sent: int, saved: int = 0
) -> dict[str, Any]:
    """A summary from decisions already made per message (the Anthropic-format and native
    Responses paths, whose messages are not chat messages), in `summarize`'s schema."""
    counts = dict.fromkeys(DECISIONS, 0)
    counts.update(Counter(per_message.values()))
    return {
        "policy": target.policy.value,
        "dialect": target.dialect.name,
        "why": target.why,
        "messages": per_message,
        "counts": counts,
        "reasoning_tokens": {"sent": sent, "saved": saved},
    }
