"""Settings for the proxy's ready instance, validated with pydantic.

Two sources, the second overriding the first:

1. the proxy config's `callback_settings: litellm_reasoning: {...}` section (LiteLLM puts that
   section on `litellm.callback_settings` before it loads `litellm_settings.callbacks`, so the
   instance sees it when the proxy first asks for `litellm_reasoning.callback`);
2. `LITELLM_REASONING_<NAME>` environment variables.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .core.policy import TurnPolicy
from .stores import default_store_url

if TYPE_CHECKING:
    from .integration.reasoning_callback import ReasoningCallback

ENV_PREFIX = "LITELLM_REASONING_"
CONFIG_SECTION = "litellm_reasoning"


class Settings(BaseModel):
    """What the proxy's instance is built from."""

    model_config = ConfigDict(extra="forbid")

    store: str = Field(default_factory=default_store_url, description="store URL")
    namespace: str = "default"
    dialects: dict[str, str] = Field(default_factory=dict, description="{pattern: dialect}")
    policies: dict[str, TurnPolicy] = Field(default_factory=dict, description="{pattern: policy}")
    capture_wait_seconds: float = Field(default=2.0, ge=0, le=60)
    max_reasoning_tokens: int | None = Field(
        default=None, ge=0, description="cap on the reasoning tokens one request carries"
    )
    log_level: str = "WARNING"
    scope_from_client: bool = Field(
        default=True,
        description="honour the client-chosen end user and reasoning_namespace as scope parts",
    )
    legacy_keys: bool = Field(
        default=True, description="also read and write tool-call records under the 0.1.0 keys"
    )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if not isinstance(logging.getLevelName(value.upper()), int):
            raise ValueError(f"unknown log level {value!r}")
        return value.upper()

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str) -> str:
        from .stores import check_store_url

        check_store_url(value)  # the scheme and options; nothing is opened here
        return value

    @field_validator("dialects")
    @classmethod
    def _known_dialects(cls, value: dict[str, str]) -> dict[str, str]:
        from .wire import get_dialect

        for name in value.values():
            get_dialect(name)
        return value

    @classmethod
    def load(
        cls, config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        """Settings from a config section and the environment (which wins)."""
        raw: dict[str, Any] = dict(config or {})
        environ = os.environ if environ is None else environ
        for name in cls.model_fields:
            value = environ.get(ENV_PREFIX + name.upper())
            if value is None:
                continue
            if name in ("dialects", "policies"):
                try:
                    raw[name] = json.loads(value)
                except ValueError as exc:
                    raise ValueError(f"{ENV_PREFIX}{name.upper()} is not JSON: {exc}") from exc
            else:
                raw[name] = value
        return cls.model_validate(raw)


_MISSPELLINGS = (
    "litellm-reasoning",
    "litellm_reasoning.callback",
    "reasoning",
    "LiteLLM-Reasoning",
)


def _proxy_config_section() -> Mapping[str, Any]:
    import litellm

    sections = getattr(litellm, "callback_settings", None) or {}
    if not isinstance(sections, Mapping):
        return {}
    section = sections.get(CONFIG_SECTION)
    if section is None:
        for name in _MISSPELLINGS:
            if name in sections:
                raise ValueError(
                    f"callback_settings has a section {name!r}; this package reads "
                    f"callback_settings.{CONFIG_SECTION} (with an underscore)"
                )
        return {}
    if not isinstance(section, Mapping):
        raise ValueError(
            f"callback_settings.{CONFIG_SECTION} is {type(section).__name__} {section!r}, "
            "not a mapping of settings (store, namespace, policies, ...)"
        )
    return section


def _log_through_litellm(level: str) -> None:
    """The package's lines in the proxy's output as LiteLLM formats its own (its handler), at
    the configured level, or DEBUG when LiteLLM's own debugging is on (`--detailed_debug`)."""
    package = logging.getLogger("litellm_reasoning")
    numeric = logging.getLevelName(level)
    try:
        from litellm._logging import handler, verbose_logger
    except ImportError:  # another LiteLLM layout: Python's default handling
        package.setLevel(numeric)
        return
    if verbose_logger.isEnabledFor(logging.DEBUG):
        numeric = min(numeric, logging.DEBUG)
    package.setLevel(numeric)
    if handler not in package.handlers:
        package.addHandler(handler)


def callback_from_environment() -> ReasoningCallback:
    """The proxy's instance. A bad setting fails loudly at startup, naming it."""
    from .integration.reasoning_callback import ReasoningCallback

    try:
        settings = Settings.load(_proxy_config_section())
    except (ValidationError, ValueError) as exc:
        raise RuntimeError(
            f"litellm-reasoning: invalid setting (callback_settings.{CONFIG_SECTION} or "
            f"{ENV_PREFIX}*): {exc}"
        ) from exc
    _log_through_litellm(settings.log_level)
    return ReasoningCallback(
        store=settings.store,
        namespace=settings.namespace,
        dialects=settings.dialects,
        policies={pattern: policy.value for pattern, policy in settings.policies.items()},
        capture_wait_seconds=settings.capture_wait_seconds,
        max_reasoning_tokens=settings.max_reasoning_tokens,
        scope_from_client=settings.scope_from_client,
        legacy_keys=settings.legacy_keys,
    )
