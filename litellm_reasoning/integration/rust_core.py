"""LiteLLM's opt-in Rust core (`LITELLM_RUST=true`, or `litellm.rust(True)`), which serves some
Anthropic-format (`/v1/messages`) calls natively: it runs the deployment hook but no reply
hook, so a reply it serves is never captured.

LiteLLM 1.110+ keeps a call on Python when a callback defines `async_pre_request_hook`, and
`ReasoningCallback` does; LiteLLM 1.106 and 1.108 route by provider alone, so there the
callback can only say, once per model, what will not work."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

logger = logging.getLogger("litellm_reasoning")

_checked: set[tuple[str | None, str | None]] = set()
"""Deployments already asked about: the route is decided once per deployment, not per request.
Bounded (`_MAX_CHECKED`, then forgotten): clients choose model names on a wildcard route."""
_MAX_CHECKED = 4096


def serves_messages(provider: str | None, model: str | None) -> bool:
    """Whether LiteLLM's Rust core would serve an async Anthropic-format call to this
    deployment from a process with this callback registered."""
    try:
        from litellm.rust_bridge import catalog
    except ImportError:  # a LiteLLM without a Rust core
        return False
    context: dict[str, Any] = {"route": catalog.Route.MESSAGES, "provider": provider}
    fields = {f.name for f in dataclasses.fields(catalog.RouteContext)}
    if "model" in fields:
        context["model"] = model
    if "features" in fields and hasattr(catalog, "Feature"):
        pre_request_hook = getattr(catalog.Feature, "PRE_REQUEST_HOOK", None)
        if pre_request_hook is not None:  # the callback defines `async_pre_request_hook`
            context["features"] = frozenset({pre_request_hook})
    decided = catalog.decision(catalog.RouteContext(**context))
    return getattr(decided, "name", "PYTHON") != "PYTHON"


def warn_if_served_natively(provider: str | None, model: str | None) -> None:
    """One warning per deployment whose Anthropic-format calls the Rust core serves."""
    if (provider, model) in _checked:
        return
    if len(_checked) >= _MAX_CHECKED:
        _checked.clear()
    _checked.add((provider, model))
    if not serves_messages(provider, model):
        return
    logger.warning(
        "litellm-reasoning: LiteLLM's Rust core (LITELLM_RUST) serves /v1/messages calls to "
        "%s/%s: their replies reach no Python hook, so their thinking blocks are not captured "
        "and a client that drops them gets nothing back for its next request. Unset "
        "LITELLM_RUST, or use LiteLLM 1.110+, where litellm-reasoning keeps this route on Python",
        provider,
        model,
    )
