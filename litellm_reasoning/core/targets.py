"""Which dialect and turn policy a deployment gets, from the provider LiteLLM resolved.

The table is data (`data/model_table.json`, loaded by `model_table`): rows per LiteLLM provider
and model pattern this package has verified rules for, each with its source. A provider that is
not listed is passed through untouched (only `turn` is removed), so adding the callback never
changes what an unknown target receives.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .dialect import Dialect
from .model_table import TEMPLATE_DIALECTS, ProviderRule, check_dialect_name, shipped_rules
from .policy import StripRule, TurnPolicy


@dataclass(frozen=True, slots=True)
class Target:
    """What one request's deployment gets."""

    dialect: Dialect
    """The family's dialect object (`wire`'s registry hands it to `resolve_target`)."""
    policy: TurnPolicy
    why: str
    strip: StripRule = "any"
    """The provider's rule for leaving reasoning out (`policy.STRIP_RULES`); an override of
    the policy keeps it: it is what the provider accepts, not a choice."""
    operator_policy: bool = False
    """The policy is the operator's explicit choice (an override): a refusal may narrow it,
    never widen it."""


PROVIDER_RULES: tuple[ProviderRule, ...] = shipped_rules()
"""The shipped table (`data/model_table.json`), in match order."""


@dataclass(frozen=True, slots=True)
class Override:
    """A user's choice for models matching `pattern` (fnmatch, on any name of the deployment)."""

    pattern: str
    dialect: str | None = None
    policy: TurnPolicy | None = None


DialectOf = Callable[[str], Dialect]
"""The registry's lookup of a dialect by name (`wire.get_dialect`): core names a dialect and
never imports the families, so the layer above hands the lookup in."""


def resolve_target(
    provider: str | None,
    model: str,
    api_base: str | None,
    *,
    dialect_of: DialectOf,
    has_tools: bool = False,
    preserved_thinking: bool = False,
    template_keeps_thinking: bool = False,
    model_keeps_thinking: bool = False,
    names: Iterable[str] = (),
    overrides: Iterable[Override] = (),
) -> Target:
    """The dialect and policy for a call to `model` on `provider` at `api_base` (`dialect_of`:
    the registry's lookup, `wire.get_dialect`).

    `names` are the other names the deployment is known by (model group, `provider/model`), which
    overrides may match. `model_keeps_thinking`: LiteLLM's model map says this Claude model
    keeps earlier turns' thinking in its context (`supports_thinking_cache_preservation`), which
    the table's own Claude rows say by name for the models it knows.
    """
    target = _default_target(
        provider or "",
        model,
        api_base,
        has_tools,
        preserved_thinking,
        model_keeps_thinking,
        dialect_of,
    )
    if template_keeps_thinking and target.dialect.name in TEMPLATE_DIALECTS:
        target = Target(
            target.dialect,
            TurnPolicy.ALL_TURNS,
            f"{target.why}; the request's chat template keeps earlier thinking "
            "(`chat_template_kwargs`)",
            target.strip,
        )
    candidates = [model, *names]
    for override in overrides:
        if any(fnmatch.fnmatchcase(name, override.pattern) for name in candidates if name):
            target = Target(
                dialect=dialect_of(override.dialect) if override.dialect else target.dialect,
                policy=override.policy or target.policy,
                why=f"override {override.pattern!r}",
                strip=target.strip,
                operator_policy=target.operator_policy or override.policy is not None,
            )
    return target


def _default_target(
    provider: str,
    model: str,
    api_base: str | None,
    has_tools: bool,
    preserved_thinking: bool,
    model_keeps_thinking: bool,
    dialect_of: DialectOf,
) -> Target:
    rule = next((r for r in PROVIDER_RULES if r.applies_to(provider, model, api_base)), None)
    if rule is None:
        return Target(
            dialect_of("passthrough"),
            TurnPolicy.CURRENT_TURN,
            f"no rules for {provider or '?'}/{model}",
        )
    policy, dialect = rule.policy, rule.dialect
    if has_tools:
        policy = rule.policy_with_tools or policy
        dialect = rule.dialect_with_tools or dialect
    why = rule.why
    if preserved_thinking and rule.policy_with_preserved_thinking:
        policy = rule.policy_with_preserved_thinking
    elif (
        model_keeps_thinking
        and rule.preserved_by_model_map
        and rule.policy_with_preserved_thinking
        and policy is not rule.policy_with_preserved_thinking
    ):
        policy = rule.policy_with_preserved_thinking
        why = f"{why}; LiteLLM's model map: this model keeps earlier thinking in its context"
    return Target(dialect_of(dialect), policy, why, rule.strip)


def parse_overrides(raw: Mapping[str, str] | None, *, kind: str) -> list[Override]:
    """Overrides from a `{pattern: dialect}` or `{pattern: policy}` mapping, validated now."""
    out: list[Override] = []
    for pattern, value in (raw or {}).items():
        if kind == "dialect":
            check_dialect_name(value)
            out.append(Override(pattern, dialect=value))
        else:
            out.append(Override(pattern, policy=TurnPolicy(value)))
    return out


def providers_markdown() -> str:
    """The supported-providers table `docs/providers.md` shows (a test keeps it in step)."""
    rows = []
    for rule in PROVIDER_RULES:
        policy = rule.policy.value
        if rule.policy_with_tools:
            policy += f"; with tools: {rule.policy_with_tools.value}"
        if rule.policy_with_preserved_thinking:
            policy += (
                "; provider-managed (`clear_thinking` false / `clear_thinking_20251015` / "
                "`reasoning_history: preserved`): "
                f"{rule.policy_with_preserved_thinking.value}"
            )
        if rule.strip == "leading_run":
            policy += " (only the oldest may be left out, as one leading run)"
        dialect = rule.dialect
        if rule.dialect_with_tools:
            dialect += f" (with tools: {rule.dialect_with_tools})"
        target = rule.target or f"`{rule.provider}/`" + (
            f" models matching `{rule.models}`" if rule.models else ""
        )
        if rule.api_bases and not rule.target:
            target += f" at an api_base matching `{rule.api_bases}`"
        why = f"{rule.why} ([source]({rule.source}))" if rule.source else rule.why
        rows.append((target, dialect, policy, why))
    rows.append(
        (
            "any other provider",
            "passthrough",
            "—",
            "sent as the client sent it; only `turn` removed",
        )
    )
    lines = ["| target | dialect | turns that keep reasoning | why |", "| --- | --- | --- | --- |"]
    # A `|` inside a cell (regex alternations) would end the cell.
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)
