"""Settings read from the environment, validated with pydantic (the proxy path)."""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError, field_validator

if TYPE_CHECKING:
    from .reasoning_callback import ReasoningCallback

ENV_PREFIX = "LITELLM_REASONING_"


class Settings(BaseModel):
    """`LITELLM_REASONING_<NAME>` environment variables."""

    store: str = Field(default="memory://", description="store URL")
    namespace: str = "default"
    dialects: dict[str, str] = Field(default_factory=dict, description="JSON {pattern: dialect}")
    policies: dict[str, str] = Field(default_factory=dict, description="JSON {pattern: policy}")
    capture_wait_seconds: float = Field(default=2.0, ge=0, le=60)
    log_level: str = "WARNING"

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if not isinstance(logging.getLevelName(value.upper()), int):
            raise ValueError(f"unknown log level {value!r}")
        return value.upper()

    @classmethod
    def from_environment(cls) -> Settings:
        raw: dict[str, object] = {}
        for name in cls.model_fields:
            value = os.environ.get(ENV_PREFIX + name.upper())
            if value is None:
                continue
            raw[name] = json.loads(value) if name in ("dialects", "policies") else value
        return cls.model_validate(raw)


def callback_from_environment() -> ReasoningCallback:
    """The proxy's instance. A bad setting fails loudly at startup, naming the variable."""
    from .reasoning_callback import ReasoningCallback

    try:
        settings = Settings.from_environment()
    except (ValidationError, ValueError) as exc:
        raise RuntimeError(f"litellm-reasoning: invalid {ENV_PREFIX}* setting: {exc}") from exc
    logging.getLogger("litellm_reasoning").setLevel(settings.log_level)
    return ReasoningCallback(
        store=settings.store,
        namespace=settings.namespace,
        dialects=settings.dialects,
        policies=settings.policies,
        capture_wait_seconds=settings.capture_wait_seconds,
    )
