"""What a reply's usage says of the provider's prompt cache. Pure (no LiteLLM, no I/O).

Stripping earlier turns' reasoning changes the prompt's prefix, and with it what a provider's
prompt cache can reuse: the cached input tokens each reply reports show what a policy costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PromptCache:
    """A reply's input tokens by how the provider's prompt cache served them."""

    read: int
    """Served from the cache."""
    write: int
    """Written to the cache (Claude's cache creation)."""
    uncached: int
    """Neither."""

    def as_dict(self) -> dict[str, int]:
        return {"cache_read": self.read, "cache_write": self.write, "uncached": self.uncached}


def token_count(value: Any) -> int:
    """A usage field as a count (0: absent, negative or not an integer)."""
    return value if type(value) is int and value > 0 else 0


def _details(usage: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    for name in names:
        value = usage.get(name)
        if isinstance(value, Mapping):
            return value
    return {}


def prompt_cache_of(usage: Any) -> PromptCache | None:
    """The prompt cache of a usage mapping in LiteLLM's chat shape (`prompt_tokens` counts the
    cached tokens too; `prompt_tokens_details.cached_tokens` / `cache_write_tokens`, DeepSeek's
    `prompt_cache_hit_tokens`) or the Responses shape (`input_tokens`,
    `input_tokens_details.cached_tokens`). None: no input token count."""
    if not isinstance(usage, Mapping):
        return None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    if type(prompt) is not int:
        return None
    details = _details(usage, "prompt_tokens_details", "input_tokens_details")
    read = token_count(details.get("cached_tokens")) or token_count(
        usage.get("cache_read_input_tokens") or usage.get("prompt_cache_hit_tokens")
    )
    write = token_count(details.get("cache_write_tokens")) or token_count(
        details.get("cache_creation_tokens") or usage.get("cache_creation_input_tokens")
    )
    return PromptCache(read, write, max(0, prompt - read - write))
