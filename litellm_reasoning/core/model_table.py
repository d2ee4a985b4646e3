"""The shipped model table (`data/model_table.json`): which dialect and policy each model gets.

The table is data so that a provider changing its rules is a one-row change with its source next
to it. Loaded and validated once, at import; a bad row is a packaging bug and fails loudly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .policy import STRIP_RULES, StripRule, TurnPolicy

TABLE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ProviderRule:
    """One row: a LiteLLM provider (and optionally a model pattern) and what it gets."""

    provider: str
    dialect: str
    policy: TurnPolicy
    why: str
    source: str = ""
    """Where the rule comes from (provider docs, an issue showing the error)."""
    models: str | None = None
    """A regular expression the model must contain for the row to apply."""
    api_bases: str | None = None
    """A regular expression the deployment's api_base must contain for the row to apply (an
    endpoint with rules of its own: Z.ai's Coding Plan keeps earlier thinking by default)."""
    policy_with_tools: TurnPolicy | None = None
    """A different policy when the request carries `tools`."""
    dialect_with_tools: str | None = None
    """A different dialect when the request carries `tools`."""
    policy_with_preserved_thinking: TurnPolicy | None = None
    """A different policy when the request has the provider decide which earlier thinking it
    keeps (Z.ai `thinking: {"clear_thinking": false}`, Claude context editing
    `clear_thinking_20251015`; `policy.provider_manages_thinking`)."""
    target: str = ""
    """How the providers table in the docs names what the row matches (default: its provider,
    models and api_bases)."""
    preserved_by_model_map: bool = False
    """LiteLLM's model map may say this row's model keeps earlier thinking in its context
    (`supports_thinking_cache_preservation`): then `policy_with_preserved_thinking` applies."""
    strip: StripRule = "any"
    """Which reasoning may be left out of a request: `any` (whatever the policy or budget
    says), or `leading_run` (only the oldest blocks, as one leading run: the provider binds
    each block to everything before it, so removing any other invalidates every later one)."""

    def applies_to(self, provider: str, model: str, api_base: str | None = None) -> bool:
        return (
            provider == self.provider
            and (self.models is None or re.search(self.models, model) is not None)
            and (self.api_bases is None or re.search(self.api_bases, api_base or "") is not None)
        )


_ROW_KEYS = frozenset(
    {
        "provider",
        "models",
        "api_bases",
        "dialect",
        "policy",
        "with_tools",
        "with_preserved_thinking",
        "preserved_by_model_map",
        "why",
        "source",
        "strip",
        "target",
    }
)


def _rule(raw: dict[str, Any]) -> ProviderRule:
    unknown = set(raw) - _ROW_KEYS
    if unknown:
        raise ValueError(f"model table row {raw.get('provider')!r}: unknown keys {sorted(unknown)}")
    strip = raw.get("strip", "any")
    if strip not in STRIP_RULES:
        raise ValueError(
            f"model table row {raw.get('provider')!r}: strip {strip!r} is not one of {STRIP_RULES}"
        )
    with_tools = raw.get("with_tools") or {}
    preserved = raw.get("with_preserved_thinking") or {}
    rule = ProviderRule(
        provider=raw["provider"],
        dialect=raw["dialect"],
        policy=TurnPolicy(raw["policy"]),
        why=raw["why"],
        source=raw.get("source", ""),
        models=raw.get("models"),
        api_bases=raw.get("api_bases"),
        policy_with_tools=TurnPolicy(with_tools["policy"]) if "policy" in with_tools else None,
        dialect_with_tools=with_tools.get("dialect"),
        policy_with_preserved_thinking=(
            TurnPolicy(preserved["policy"]) if "policy" in preserved else None
        ),
        strip=strip,
        preserved_by_model_map=raw.get("preserved_by_model_map") is True,
        target=raw.get("target", ""),
    )
    for name in (rule.dialect, rule.dialect_with_tools):
        if name is not None:
            check_dialect_name(name)
    for pattern in (rule.models, rule.api_bases):
        if pattern is not None:
            re.compile(pattern)
    return rule


def load_rules(text: str) -> tuple[ProviderRule, ...]:
    """Rules from a table document (the shipped one, or a test's)."""
    document = json.loads(text)
    if document.get("version") != TABLE_VERSION:
        raise ValueError(f"model table version {document.get('version')!r} is not supported")
    return tuple(_rule(row) for row in document["rows"])


def shipped_rules() -> tuple[ProviderRule, ...]:
    return load_rules(_SHIPPED_TEXT)


_SHIPPED_TEXT = (
    resources.files("litellm_reasoning").joinpath("data/model_table.json").read_text("utf-8")
)
"""The shipped table, read once (its rules and its dialect names come from it)."""

DIALECT_NAMES: frozenset[str] = frozenset(json.loads(_SHIPPED_TEXT)["dialects"])
"""Every dialect the adapters register, as the shipped table lists them (its `dialects`): a new
provider's adapter and its rows are one change of this data (`wire` checks that it registers
exactly these)."""


TEMPLATE_DIALECTS: frozenset[str] = frozenset(json.loads(_SHIPPED_TEXT)["chat_template_dialects"])
"""Dialects whose server renders a chat template (what `chat_template_kwargs` speaks to), as
the shipped table lists them."""


def check_dialect_name(name: str) -> str:
    """`name` when a dialect has it; a clear error listing the known ones otherwise."""
    if name not in DIALECT_NAMES:
        raise ValueError(f"unknown dialect {name!r}; known: {', '.join(sorted(DIALECT_NAMES))}")
    return name
