"""Reading LiteLLM's per-call kwargs: the call type, the deployment a call goes to, its tenant
scope, its credential fingerprint and request parameters; and removing `turn` from messages."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import litellm
from litellm import get_llm_provider

from ..core import identity
from ..core.policy import provider_manages_thinking, template_keeps_thinking
from ..memo.targets import TargetCache
from ..wire import issued_by_endpoint

COMPLETION_CALL_TYPES = frozenset({"completion", "acompletion"})
RESPONSES_CALL_TYPES = frozenset({"responses", "aresponses"})
MESSAGES_CALL_TYPES = frozenset({"anthropic_messages"})


def call_type_name(call_type: Any) -> str:
    return str(getattr(call_type, "value", call_type) or "")


def as_dict(obj: Any) -> dict[str, Any] | None:
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        result = dump()
        return result if isinstance(result, dict) else None
    return None


def scope_of(kwargs: Mapping[str, Any], namespace: str, *, from_client: bool) -> str:
    """The tenant scope of a call: the namespace, the proxy's virtual key and team, and (when
    `from_client`) the end user and a namespace the client chose."""
    metadata: dict[str, Any] = {}
    params = kwargs.get("litellm_params")
    for source in (
        params.get("metadata") if isinstance(params, dict) else None,
        kwargs.get("litellm_metadata"),
        kwargs.get("metadata"),
    ):
        if isinstance(source, dict):
            metadata.update(source)
    parts = {
        "ns": (metadata.get("reasoning_namespace") if from_client else None) or namespace,
        "key": metadata.get("user_api_key_hash"),
        "team": metadata.get("user_api_key_team_id"),
        "user": (metadata.get("user_api_key_end_user_id") or kwargs.get("user"))
        if from_client
        else None,
    }
    return identity.scope_string(parts)


def request_facts(kwargs: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(has tools, the provider manages thinking itself, the chat template keeps thinking):
    read from the call's parameters, its `optional_params` and their `extra_body`."""
    optional = kwargs.get("optional_params")
    request = [kwargs, optional if isinstance(optional, dict) else {}]
    request += [r["extra_body"] for r in list(request) if isinstance(r.get("extra_body"), dict)]
    has_tools = any(r.get("tools") for r in request)
    return has_tools, provider_manages_thinking(request), template_keeps_thinking(request)


def deployment_key(kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """Every input of `deployment`."""
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, dict) else {}
    metadata = kwargs.get("metadata")
    litellm_metadata = kwargs.get("litellm_metadata")
    return (
        kwargs.get("model"),
        kwargs.get("api_base"),
        params.get("api_base"),
        kwargs.get("custom_llm_provider"),
        params.get("custom_llm_provider"),
        metadata.get("model_group") if isinstance(metadata, dict) else None,
        litellm_metadata.get("model_group") if isinstance(litellm_metadata, dict) else None,
    )


def deployment(kwargs: Mapping[str, Any]) -> tuple[str | None, str, str | None, list[str]]:
    """The deployment a call hits: LiteLLM provider, model without its provider prefix,
    api_base, and the names overrides may match (`provider/model`, the model as given, the
    Router / proxy model group)."""
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, dict) else {}
    model = str(kwargs.get("model") or "")
    api_base = kwargs.get("api_base") or params.get("api_base")
    provider = kwargs.get("custom_llm_provider") or params.get("custom_llm_provider")
    bare = model
    if provider and model.startswith(f"{provider}/"):
        bare = model[len(provider) + 1 :]
    elif not provider:
        # No provider LiteLLM knows: rendered as passthrough.
        with contextlib.suppress(Exception):
            bare, provider, _, _ = get_llm_provider(model=model, api_base=api_base)
    names = [f"{provider}/{bare}", model]
    # Chat calls carry the Router / proxy model group in `metadata`, Responses calls in
    # `litellm_metadata`.
    for key in ("metadata", "litellm_metadata"):
        metadata = kwargs.get(key)
        if isinstance(metadata, dict) and metadata.get("model_group"):
            names.append(str(metadata["model_group"]))
    return provider, bare, api_base, names


_CREDENTIALS = (
    "api_key",
    "organization",
    "vertex_project",
    "vertex_credentials",
    "aws_access_key_id",
    "aws_role_name",
    "aws_profile_name",
    "aws_bedrock_runtime_endpoint",
)
"""What tells one organisation, account or project apart among a provider's deployments."""


def origin(kwargs: Mapping[str, Any], provider: str | None) -> tuple[str, str | None]:
    """(`identity.origin_of` the deployment a call goes to, its Router id), from what the
    caller or the Router deployment gave: on the sync path LiteLLM's logging details also
    hold resolved values at the top level (an env key), so `litellm_params` (as given) wins,
    and both paths fingerprint a deployment alike."""
    params = kwargs.get("litellm_params")
    params = params if isinstance(params, dict) else {}
    details = "additional_args" in kwargs

    def given(name: str) -> Any:
        if name in params:
            return params.get(name)
        return None if details else kwargs.get(name)

    info = given("model_info")
    deployment_id = info.get("id") if isinstance(info, dict) else None
    credentials = [given(name) for name in _CREDENTIALS]
    named = given("litellm_credential_name")
    if isinstance(named, str) and named:
        # LiteLLM fills what the call does not give from the named credential (at a point a
        # hook may precede): the fingerprint is of the credential the call will use.
        values = _credential_values(named)
        credentials = [
            given_value if given_value is not None else values.get(name)
            for name, given_value in zip(_CREDENTIALS, credentials, strict=True)
        ]
        if not values:  # unknown here: at least two names are two issuers
            credentials.append(f"credential:{named}")
    # Not the endpoint: LiteLLM's logging details hold the resolved URL where the deployment
    # hook has none, and an endpoint does not tell organisations apart, its credential does;
    # but a self-hosted server makes its own blobs (always given its api_base).
    if issued_by_endpoint(provider):
        base = given("api_base")
        credentials.append(str(base).rstrip("/").lower() if base else None)
    fingerprint = identity.origin_of(provider, credentials)
    return fingerprint, str(deployment_id) if deployment_id is not None else None


def _credential_values(name: str) -> dict[str, Any]:
    """The values of LiteLLM's named credential `name` (`litellm.credential_list`; {} when
    there is none of that name)."""
    try:
        from litellm.litellm_core_utils.credential_accessor import CredentialAccessor

        credential = CredentialAccessor.find_credential(name)
    except Exception:  # a LiteLLM without named credentials
        return {}
    values = getattr(credential, "credential_values", None)
    return dict(values) if isinstance(values, dict) else {}


class CallFacts(NamedTuple):
    """What the engine needs of one call's kwargs, read once where a hook receives them: the
    engine works from this value and never reads kwargs itself. (A named tuple: immutable,
    and made in C on every request, a fifth of a frozen dataclass's cost.)"""

    scope: str
    """The tenant scope (`scope_of`)."""
    provider: str | None
    """LiteLLM's provider of the deployment."""
    model: str
    """The model without its provider prefix."""
    api_base: str | None
    names: tuple[str, ...]
    """The names overrides may match (`deployment`)."""
    has_tools: bool
    preserved_thinking: bool
    """The provider manages thinking itself (`request_facts`)."""
    template_kept: bool
    """The chat template keeps thinking (`request_facts`)."""
    model_keeps_thinking: bool
    """LiteLLM's model map says the model keeps earlier thinking in its context
    (`thinking_cache_preserved_in_model_map`, read on every request)."""
    origin: str
    """`identity.origin_of` the deployment (`origin`)."""
    deployment_id: str | None
    """Its Router id."""

    @property
    def target_key(self) -> tuple[Any, ...]:
        """Everything a chat target is resolved from, besides the operator's overrides (the
        fields from `provider` to `model_keeps_thinking`)."""
        return self[1:9]


class FactsReader:
    """`CallFacts` of a call's kwargs for one callback (its namespace and scope setting). The
    deployment a call hits is worked out once per distinct deployment inputs: LiteLLM's
    provider lookup is most of a short request's fixed cost (bounded and thread-safe as
    `TargetCache`)."""

    def __init__(self, namespace: str, from_client: bool, max_entries: int = 1024) -> None:
        self.namespace = namespace
        self.from_client = from_client
        self._deployments = TargetCache(max_entries)

    def __call__(self, kwargs: Mapping[str, Any]) -> CallFacts:
        has_tools, preserved_thinking, template_kept = request_facts(kwargs)
        provider, model, api_base, names = self.deployment(kwargs)
        fingerprint, deployment_id = origin(kwargs, provider)
        return CallFacts(
            scope_of(kwargs, self.namespace, from_client=self.from_client),
            provider,
            model,
            api_base,
            names,
            has_tools,
            preserved_thinking,
            template_kept,
            thinking_cache_preserved_in_model_map(provider, model),
            fingerprint,
            deployment_id,
        )

    def deployment(
        self, kwargs: Mapping[str, Any]
    ) -> tuple[str | None, str, str | None, tuple[str, ...]]:
        """`deployment(kwargs)` (its names a tuple), remembered by its inputs."""
        key: tuple[Any, ...] | None = deployment_key(kwargs)
        known: tuple[str | None, str, str | None, tuple[str, ...]] | None
        try:
            known = self._deployments.get(key)
        except TypeError:  # an unhashable input: worked out every time
            known, key = None, None
        if known is None:
            provider, model, api_base, names = deployment(kwargs)
            known = (provider, model, api_base, tuple(names))
            if key is not None:
                self._deployments.put(key, known)
        return known


def request_param(kwargs: Mapping[str, Any], name: str) -> Any:
    """A request parameter given directly or in `extra_body`."""
    if name in kwargs:
        return kwargs[name]
    extra = kwargs.get("extra_body")
    return extra.get(name) if isinstance(extra, dict) else None


def is_sync_details(kwargs: Any) -> bool:
    """`kwargs` is LiteLLM's logging state itself (the sync path's `log_pre_api_call`)."""
    return isinstance(kwargs, dict) and "additional_args" in kwargs


def thinking_default_in_model_map(provider: str | None, model: str | None) -> str | None:
    """Whether LiteLLM's model map says `model` thinks without being asked (`"always"`: its
    `thinking_always_on`; `"on"`: `thinking_on_by_default`; `"off"`: one of them is false and
    neither true; None: the map does not say). Read each time, not remembered: LiteLLM adds to
    a deployment's entry after its first call, and two dict reads cost less than a cache."""
    info = _map_entry(provider, model)
    if info is None:
        return None
    if info.get("thinking_always_on") is True:
        return "always"
    if info.get("thinking_on_by_default") is True:
        return "on"
    # Only a value says so: LiteLLM fills a deployment's entry with these keys set to None.
    if info.get("thinking_always_on") is False or info.get("thinking_on_by_default") is False:
        return "off"
    return None


def reasoning_contexts_in_model_map(provider: str | None, model: str | None) -> tuple[str, ...]:
    """The `reasoning.context` values LiteLLM's model map says `model` takes (its
    `reasoning_contexts`; empty: it does not say, or the model takes none)."""
    info = _map_entry(provider, model)
    values = info.get("reasoning_contexts") if info is not None else None
    if not isinstance(values, list):
        return ()
    return tuple(v for v in values if isinstance(v, str))


def thinking_cache_preserved_in_model_map(provider: str | None, model: str | None) -> bool:
    """Whether LiteLLM's model map says `model` keeps earlier turns' thinking in its context
    (`supports_thinking_cache_preservation`: Claude Opus 4.5+, Sonnet 4.6+, 5.x)."""
    info = _map_entry(provider, model)
    return bool(info and info.get("supports_thinking_cache_preservation") is True)


def _map_entry(provider: str | None, model: str | None) -> dict[str, Any] | None:
    """LiteLLM's model map entry of `model` (`provider/model` first): one that prices the
    model, as the map's own and an operator's do. The entries LiteLLM's Router makes for its
    deployments are a family's guessed profile without prices (a Sonnet 5.5 deployment got
    Sonnet 5's `thinking_on_by_default`): not an answer."""
    if not model:
        return None
    for key in (f"{provider}/{model}", model):
        info = litellm.model_cost.get(key)
        if (
            isinstance(info, dict)
            and info.get("litellm_provider")
            and isinstance(info.get("input_cost_per_token"), int | float)
        ):
            return info
    return None
