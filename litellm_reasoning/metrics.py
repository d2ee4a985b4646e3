"""Prometheus counters for the callback's decisions, when `prometheus_client` is installed.

Registered once, in prometheus_client's default registry: the LiteLLM proxy's `/metrics`
(enabled with `callbacks: ["prometheus"]`) serves that registry, so the counters appear there
beside LiteLLM's own. Without `prometheus_client` every call here is a no-op.

* `litellm_reasoning_requests_total{dialect, policy}`: requests rendered;
* `litellm_reasoning_messages_total{dialect, policy, decision}`: assistant messages per decision
  (`kept`, `restored`, `stripped`, `dropped_foreign`, `missing`, `over_budget`);
* `litellm_reasoning_tokens_total{dialect, policy, kind}`: estimated reasoning tokens `sent`
  and `saved`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

_LOCK = threading.Lock()
_COUNTERS: dict[str, Any] | None = None
_UNAVAILABLE = False

_DEFINITIONS = (
    ("requests", "litellm_reasoning_requests", "Requests rendered", ("dialect", "policy")),
    (
        "messages",
        "litellm_reasoning_messages",
        "Assistant messages per reasoning decision",
        ("dialect", "policy", "decision"),
    ),
    (
        "tokens",
        "litellm_reasoning_tokens",
        "Estimated reasoning tokens sent and saved",
        ("dialect", "policy", "kind"),
    ),
)


def _counters() -> dict[str, Any] | None:
    """The counters, created on first use (None without prometheus_client)."""
    global _COUNTERS, _UNAVAILABLE
    if _COUNTERS is not None or _UNAVAILABLE:
        return _COUNTERS
    with _LOCK:
        if _COUNTERS is not None or _UNAVAILABLE:
            return _COUNTERS
        try:
            from prometheus_client import REGISTRY, Counter
        except ImportError:
            _UNAVAILABLE = True
            return None
        counters: dict[str, Any] = {}
        for key, name, documentation, labels in _DEFINITIONS:
            try:
                counters[key] = Counter(name, documentation, labels)
            except ValueError:
                # Already registered (this module imported twice, e.g. by file path in the
                # proxy): count into the existing collector.
                counters[key] = REGISTRY._names_to_collectors[name]
        _COUNTERS = counters
        return _COUNTERS


def available() -> bool:
    return _counters() is not None


def record(summary: Mapping[str, Any]) -> None:
    """Count one request's decisions summary (see `decisions.summarize`)."""
    counters = _counters()
    if counters is None:
        return
    dialect, policy = str(summary["dialect"]), str(summary["policy"])
    counters["requests"].labels(dialect, policy).inc()
    for decision, count in summary["counts"].items():
        if count:
            counters["messages"].labels(dialect, policy, decision).inc(count)
    for kind, tokens in summary["reasoning_tokens"].items():
        if tokens:
            counters["tokens"].labels(dialect, policy, kind).inc(tokens)
