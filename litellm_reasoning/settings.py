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
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .core.policy import TurnPolicy
from .core.spelling import boolean, did_you_mean
from .stores import default_store_url

if TYPE_CHECKING:
    from .integration.reasoning_callback import ReasoningCallback

ENV_PREFIX = "LITELLM_REASONING_"
CONFIG_SECTION = "litellm_reasoning"
SWITCHES = ("LITELLM_REASONING_PATCH_LITELLM",)
"""Environment variables read outside the settings model (`integration.patches`)."""

logger = logging.getLogger("litellm_reasoning")


class SettingsError(ValueError):
    """A setting this package cannot use: one line naming it, its value and the closest valid
    name or value."""


def strict_boolean(value: Any) -> Any:
    """`value` as a boolean when it is text (`spelling.boolean`: pydantic alone would read
    `on`, `t`, `y`...); anything else as it is."""
    return boolean(value) if isinstance(value, str) else value


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
    log_level: str = Field(
        default="INFO",
        description="INFO: one startup line (what the callback will do), then warnings only",
    )
    scope_from_client: bool = Field(
        default=True,
        description="honour the client-chosen end user and reasoning_namespace as scope parts",
    )
    legacy_keys: bool = Field(
        default=True,
        description="also read tool-call records under earlier releases' keys and write a "
        "marked copy under 0.2.0/0.3.0's (rolling upgrades)",
    )

    @field_validator("scope_from_client", "legacy_keys", mode="before")
    @classmethod
    def _strict_boolean(cls, value: Any) -> Any:
        return strict_boolean(value)

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
        unknown = sorted(set(raw) - set(cls.model_fields))
        if unknown:
            raise SettingsError(
                f"unknown setting {unknown[0]!r} in callback_settings.{CONFIG_SECTION}"
                f"{did_you_mean(unknown[0], cls.model_fields)}; "
                f"known: {', '.join(cls.model_fields)}"
            )
        environ = os.environ if environ is None else environ
        cls.warn_unknown_environment(environ)
        for switch in SWITCHES:
            if switch in environ:
                try:
                    boolean(environ[switch])
                except ValueError as exc:
                    raise SettingsError(f"{switch}: {exc}") from None
        from_env: dict[str, str] = {}
        for name in cls.model_fields:
            value = environ.get(ENV_PREFIX + name.upper())
            if value is None:
                continue
            from_env[name] = ENV_PREFIX + name.upper()
            if name in ("dialects", "policies"):
                try:
                    raw[name] = json.loads(value)
                except ValueError as exc:
                    raise ValueError(f"{ENV_PREFIX}{name.upper()} is not JSON: {exc}") from exc
            else:
                raw[name] = value
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise SettingsError(_one_line(exc, from_env)) from None

    @classmethod
    def environment_names(cls) -> list[str]:
        return [ENV_PREFIX + name.upper() for name in cls.model_fields] + list(SWITCHES)

    @classmethod
    def warn_unknown_environment(cls, environ: Mapping[str, str]) -> list[str]:
        """One warning per `LITELLM_REASONING_*` variable this package does not read (a typo
        would otherwise be ignored silently), with the closest valid name."""
        known = cls.environment_names()
        unknown = sorted(k for k in environ if k.startswith(ENV_PREFIX) and k not in known)
        for name in unknown:
            if name not in _WARNED:
                _WARNED.add(name)
                logger.warning(
                    "litellm-reasoning: environment variable %s is not a setting and is ignored%s",
                    name,
                    did_you_mean(name, known),
                )
        return unknown


_WARNED: set[str] = set()


def _one_line(exc: ValidationError, from_env: Mapping[str, str]) -> str:
    """The first problem pydantic found, as `setting=value: what is wrong` (the setting named
    as the user wrote it: its environment variable, or its key in the config section)."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    if loc and loc[0] in from_env:
        loc[0] = f"{from_env[loc[0]]} ({loc[0]})"
    else:
        loc.insert(0, f"callback_settings.{CONFIG_SECTION}")
    name = ".".join(loc)
    message = str(error["msg"]).removeprefix("Value error, ")
    value = error.get("input")
    if isinstance(value, str) and value in message:
        return f"{name}: {message}"
    return f"{name}={value!r}: {message}"


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
        ) from None
    _log_through_litellm(settings.log_level)
    callback = ReasoningCallback(
        store=settings.store,
        namespace=settings.namespace,
        dialects=settings.dialects,
        policies={pattern: policy.value for pattern, policy in settings.policies.items()},
        capture_wait_seconds=settings.capture_wait_seconds,
        max_reasoning_tokens=settings.max_reasoning_tokens,
        scope_from_client=settings.scope_from_client,
        legacy_keys=settings.legacy_keys,
    )
    logger.info("%s", startup_line(callback, settings))
    return callback


def startup_line(callback: ReasoningCallback, settings: Settings) -> str:
    """The sign of life: version, store and its persistence, scope, policy overrides."""
    from ._version import __version__
    from .accelerator import NATIVE
    from .stores import ResilientStore

    store = callback.store
    if isinstance(store, ResilientStore):
        kept = f"{store.name} (persistent, shared with every process using it)"
    else:
        kept = f"{type(store).__name__} (this process only: lost on restart)"
    scope = "namespace + virtual key + team" + (
        " + end user / reasoning_namespace" if settings.scope_from_client else ""
    )
    overrides = [f"{p}: {v.value}" for p, v in settings.policies.items()]
    overrides += [f"{p}: {d}" for p, d in settings.dialects.items()]
    return (
        f"litellm-reasoning {__version__} active: store {kept}; namespace {settings.namespace!r}; "
        f"scope {scope}; policies from the model table"
        + (f" with overrides {', '.join(overrides)}" if overrides else "")
        + (
            f"; at most {settings.max_reasoning_tokens} reasoning tokens a request"
            if settings.max_reasoning_tokens is not None
            else ""
        )
        + ("; native accelerator" if NATIVE is not None else "; pure Python (no accelerator)")
    )


def _loaded_by_the_proxys_config() -> bool:
    """Whether the LiteLLM proxy's config loader is asking (`litellm_settings: callbacks:`)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "get_instance_fn" and str(
            frame.f_globals.get("__name__", "")
        ).startswith("litellm.proxy"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _detailed_debug() -> bool:
    try:
        from litellm._logging import verbose_logger
    except ImportError:
        return False
    return bool(verbose_logger.isEnabledFor(logging.DEBUG))


def callback_for_the_proxy() -> ReasoningCallback:
    """`callback_from_environment`, for `litellm_reasoning.callback`. Loaded by the proxy's
    config, a bad setting ends the process with ONE line on stderr naming the setting, its
    value and the closest valid one (exit code 2), not the proxy's chained traceback of its
    startup; `--detailed_debug` keeps the traceback."""
    try:
        return callback_from_environment()
    except (RuntimeError, TypeError, ValueError) as exc:
        if not _loaded_by_the_proxys_config() or _detailed_debug():
            raise
        sys.stderr.write(f"{exc}\n")
        sys.stderr.flush()
        os._exit(2)
