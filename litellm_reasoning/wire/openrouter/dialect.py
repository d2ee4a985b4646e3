"""OpenRouter: `reasoning_details` sent back unmodified on the assistant message.

OpenRouter answers with `reasoning_details` (`reasoning.text` with an optional `signature`,
`reasoning.summary`, `reasoning.encrypted` with `data`; each with `format`, `index`, maybe `id`)
and wants them back "unmodified" to continue the reasoning; the upstream model's own rules still
apply behind it (provider rules §8). LiteLLM keeps them in `provider_specific_fields` on replies
and does not produce the request field, so this dialect puts the list top-level on the message,
where LiteLLM passes it to the wire (1.106.12 and 1.110.2).

Issuers. A detail whose `format` names a signed or encrypted upstream format
(`anthropic-claude-v1`, `openai-responses-v1`, `google-gemini-v1`), or that carries a signature
or encrypted data at all, is only valid for that upstream family, and only as OpenRouter relayed
it: it goes back through OpenRouter to a model of the same family and nowhere else (not to the
Anthropic API directly: nothing shows OpenRouter-relayed signatures verify there). Plain text
details of an unknown format may go to any OpenRouter model. Records from any other provider
(Anthropic's own blocks, DeepSeek's text) carry no OpenRouter details and are left out: turning
them into details would fabricate a format OpenRouter never issued. A record is sent whole or
not at all (half a Claude thinking run is invalid). Pure: no LiteLLM, no I/O.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from ...core.reasoning import Reasoning
from .._base import BaseDialect, strip_reasoning

FORMAT_FAMILIES = {
    "anthropic-claude-v1": "anthropic",
    "openai-responses-v1": "openai",
    "google-gemini-v1": "google",
}
"""OpenRouter detail formats that only their upstream family can read (signed or encrypted)."""

ISSUER = "openrouter"


def details_of(reasoning: Reasoning) -> list[dict[str, Any]] | None:
    """The OpenRouter details `reasoning` was read from, in order; None if any part has none."""
    details = [part.details.get("reasoning_detail") for part in reasoning.parts]
    if not details or not all(isinstance(d, dict) for d in details):
        return None
    return [d for d in details if isinstance(d, dict)]


def detail_family(detail: dict[str, Any]) -> str | None:
    """The upstream family a detail is bound to; `"?"` when opaque but of an unknown format."""
    family = FORMAT_FAMILIES.get(str(detail.get("format")))
    if family is not None:
        return family
    if detail.get("signature") or detail.get("data") or detail.get("type") == "reasoning.encrypted":
        return "?"
    return None


class OpenRouterDialect(BaseDialect):
    """`reasoning_details` as OpenRouter issued them, for a model of no known family."""

    name: ClassVar[str] = "openrouter"
    family: ClassVar[str | None] = None
    """The upstream family of the target model (`anthropic/…` → `anthropic`)."""
    prefers_opaque: ClassVar[bool] = True

    def accepts(self, reasoning: Reasoning) -> bool:
        """Issued by OpenRouter (or kept by the client), whole, and readable by this family."""
        if reasoning.provider not in (None, ISSUER):
            return False
        details = details_of(reasoning)
        if details is None:
            return False
        return all(detail_family(d) in (None, self.family) for d in details)

    def render(self, message: dict[str, Any], reasoning: Reasoning | None) -> dict[str, Any]:
        out = strip_reasoning(message)
        if reasoning is not None and self.accepts(reasoning):
            out["reasoning_details"] = copy.deepcopy(details_of(reasoning))
        return out


class OpenRouterAnthropicDialect(OpenRouterDialect):
    name: ClassVar[str] = "openrouter_anthropic"
    family: ClassVar[str | None] = "anthropic"


class OpenRouterOpenAIDialect(OpenRouterDialect):
    name: ClassVar[str] = "openrouter_openai"
    family: ClassVar[str | None] = "openai"


class OpenRouterGoogleDialect(OpenRouterDialect):
    name: ClassVar[str] = "openrouter_google"
    family: ClassVar[str | None] = "google"
