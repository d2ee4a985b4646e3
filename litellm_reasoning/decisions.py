"""One request's decisions, as a small JSON-able summary: what happened to each assistant
message's reasoning and how many reasoning tokens were sent and saved.

Pure. The callback puts the summary where LiteLLM's logging integrations see it (the request's
`spend_logs_metadata`, so the StandardLoggingPayload and the proxy's spend logs carry it), logs
it at DEBUG and counts it in Prometheus (`metrics.py`).
"""

from __future__ import annotations

from typing import Any

from .limits import Limited
from .render import Rendered
from .targets import Target

METADATA_KEY = "litellm_reasoning"
"""The key under `metadata.spend_logs_metadata` that holds the summary."""

DECISIONS = ("kept", "restored", "stripped", "dropped_foreign", "missing", "over_budget")
"""Per assistant message: `kept` (sent as the client sent it), `restored` (sent from the
store: the client had dropped it), `stripped` (the client sent it, the policy or the strip rule
left it out), `dropped_foreign` (another issuer's or unsigned: the target cannot take it),
`missing` (the policy wants it but nobody had it), `over_budget` (left out by
`max_reasoning_tokens`)."""


def summarize(rendered: Rendered, target: Target, limited: Limited) -> dict[str, Any]:
    """The summary of one rendered request.

    `reasoning_tokens.sent` is the estimated reasoning sent; `saved` what the policy, the
    strip rule and the budget left out of what the client sent or the store held (reasoning
    the client dropped and the policy never asked for is not counted: it was never looked up).
    """
    per_message: dict[int, str] = {}
    restored = set(rendered.restored)
    for index in rendered.kept:
        per_message[index] = "restored" if index in restored else "kept"
    for name, indices in (
        ("stripped", rendered.stripped),
        ("dropped_foreign", rendered.dropped),
        ("missing", rendered.missing),
        ("over_budget", limited.over_budget),
    ):
        for index in indices:
            per_message[index] = name
    sent = sum(limited.tokens.get(i, 0) for i in rendered.kept)
    saved = sum(limited.tokens.get(i, 0) for i in (*rendered.stripped, *limited.over_budget))
    counts = dict.fromkeys(DECISIONS, 0)
    for decision in per_message.values():
        counts[decision] += 1
    return {
        "policy": target.policy.value,
        "dialect": target.dialect,
        "why": target.why,
        "messages": {str(i): per_message[i] for i in sorted(per_message)},
        "counts": counts,
        "reasoning_tokens": {"sent": sent, "saved": saved},
    }


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
