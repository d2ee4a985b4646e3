"""Prometheus counters for the callback's decisions, when `prometheus_client` is installed.

Registered once, in prometheus_client's default registry: the LiteLLM proxy's `/metrics`
(enabled with `callbacks: ["prometheus"]`) serves that registry, so the counters appear there
beside LiteLLM's own. Without `prometheus_client` every call here is a no-op.

* `litellm_reasoning_requests_total{dialect, policy}`: requests rendered;
* `litellm_reasoning_messages_total{dialect, policy, decision}`: assistant messages per decision
  (`kept`, `restored`, `reordered`, `stripped`, `dropped_foreign`, `missing`, `over_budget`);
* `litellm_reasoning_tokens_total{dialect, policy, kind}`: estimated reasoning tokens `sent`
  and `saved`;
* `litellm_reasoning_refusals_total{dialect, kind}`: provider refusals of reasoning the callback
  sent, healed (`healing.Refusal`);
* `litellm_reasoning_prompt_tokens_total{dialect, kind}`: input tokens the replies report, by how
  the provider's prompt cache served them (`cache_read`, `cache_write`, `uncached`).
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
    (
        "refusals",
        "litellm_reasoning_refusals",
        "Provider refusals of reasoning the callback sent, healed",
        ("dialect", "kind"),
    ),
    (
        "prompt",
        "litellm_reasoning_prompt_tokens",
        "Input tokens the replies report, by how the provider's prompt cache served them",
        ("dialect", "kind"),
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


_Children = tuple[Any, dict[str, Any], dict[str, Any]]
_CHILDREN: dict[tuple[str, str], _Children] = {}
"""(dialect, policy) -> the labelled counters it counts into (`labels()` takes a lock and
builds a key on every call: looked up once per label set instead)."""
_CHILDREN_OF: dict[str, Any] | None = None
"""The counters `_CHILDREN` belongs to."""


def _children(counters: dict[str, Any], dialect: str, policy: str) -> _Children:
    global _CHILDREN, _CHILDREN_OF
    if _CHILDREN_OF is not counters:
        _CHILDREN, _CHILDREN_OF = {}, counters
    children = _CHILDREN.get((dialect, policy))
    if children is None:
        children = (
            counters["requests"].labels(dialect, policy),
            {},
            {},
        )
        _CHILDREN[(dialect, policy)] = children
    return children


def record(summary: Mapping[str, Any]) -> None:
    """Count one request's decisions summary (see `decisions.summarize`): a few increments,
    whatever the history's length."""
    counters = _counters()
    if counters is None:
        return
    dialect, policy = str(summary["dialect"]), str(summary["policy"])
    requests, by_decision, by_kind = _children(counters, dialect, policy)
    requests.inc()
    for decision, count in summary["counts"].items():
        if count:
            child = by_decision.get(decision)
            if child is None:
                child = by_decision[decision] = counters["messages"].labels(
                    dialect, policy, decision
                )
            child.inc(count)
    for kind, tokens in summary["reasoning_tokens"].items():
        if tokens:
            child = by_kind.get(kind)
            if child is None:
                child = by_kind[kind] = counters["tokens"].labels(dialect, policy, kind)
            child.inc(tokens)


def record_refusal(dialect: str, kind: str) -> None:
    """Count one healed refusal."""
    counters = _counters()
    if counters is not None:
        counters["refusals"].labels(dialect, kind).inc()


def record_prompt_cache(dialect: str, tokens: Mapping[str, int]) -> None:
    """Count one reply's input tokens by how the prompt cache served them."""
    counters = _counters()
    if counters is not None:
        for kind, count in tokens.items():
            if count:
                counters["prompt"].labels(dialect, kind).inc(count)
