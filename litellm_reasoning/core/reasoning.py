"""The canonical record of one assistant message's reasoning.

Every provider format is read into these frozen values and rendered back out of them, so the
store, the turn rule and the dialects share one vocabulary. Pure data: no LiteLLM, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Literal

PartKind = Literal["thinking", "redacted", "encrypted"]

SCHEMA_VERSION = 1


def _text(raw: Any) -> str | None:
    return raw if isinstance(raw, str) else None


def _layout(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(entry, str) for entry in raw):
        return ()
    return tuple(raw)


def tokens_of_chars(chars: int) -> int:
    """`Reasoning.estimated_tokens` of a record of `chars` characters (text and opaque
    payloads: what a store keeps as its size), so a budget can decide before it reads."""
    return -(-chars // 4)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningPart:
    """One piece of reasoning, in the order the provider produced it."""

    kind: PartKind = "thinking"
    """`thinking`: readable text (maybe signed); `redacted`: opaque data only;
    `encrypted`: an opaque encrypted item (OpenAI Responses, OpenRouter)."""
    text: str = ""
    """Readable reasoning text (a summary on some providers). Empty for opaque parts."""
    signature: str | None = None
    """Provider signature over `text` (Anthropic, Bedrock, Gemini thought signature)."""
    data: str | None = None
    """Opaque payload: redacted thinking data or encrypted content."""
    id: str | None = None
    """Provider id of the item (Responses `rs_…`, OpenRouter detail id)."""
    details: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)
    """Provider extras that must travel unchanged (format, index, summary list …)."""

    @property
    def is_opaque(self) -> bool:
        """True when the part carries a token only its issuer can verify."""
        return self.signature is not None or self.data is not None or self.kind != "thinking"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.text:
            out["text"] = self.text
        for name in ("signature", "data", "id"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ReasoningPart:
        kind = raw.get("kind", "thinking")
        if kind not in ("thinking", "redacted", "encrypted"):
            raise ValueError(f"unknown reasoning part kind {kind!r}")
        return _built_part(
            kind,
            str(raw.get("text", "")),
            raw.get("signature"),
            raw.get("data"),
            raw.get("id"),
            dict(raw.get("details") or {}),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning:
    """All reasoning of one assistant message, with who issued it."""

    parts: tuple[ReasoningPart, ...] = ()
    provider: str | None = None
    """LiteLLM provider that produced it (`deepseek`, `anthropic` …); None if the client sent it."""
    model: str | None = None
    """Model that produced it, as the deployment named it."""
    superseded: bool = False
    """A copy kept under the previous release's key for its replicas during a rolling upgrade
    (`identity.previous_tool_call_keys`); this release never restores one."""
    layout: tuple[str, ...] = ()
    """Where each block stood among the reply's content blocks, in order (Claude): `r` the next
    reasoning part, `u` the next tool call, `t<n>` a text block of n characters. Empty: not
    known (the reasoning goes first, as LiteLLM puts it)."""
    origin: str | None = None
    """`identity.origin_of` the deployment that issued it (endpoint and credential, one-way):
    signed and encrypted parts go back only to a deployment of the same origin. None: not
    known (a record of release 0.2.0 or earlier, the client's own)."""
    deployment: str | None = None
    """LiteLLM's id of the Router deployment that issued it, when there was one."""
    conversation: str | None = field(default=None, compare=False)
    """For a record under a tool-call key (which two conversations can share): the digest of
    the conversation before its message, marked once another conversation wrote the key
    (`shared_keys`). Kept beside the record by the stores (the codec's envelope), not in
    `to_json`; None: any other record, or one an earlier release wrote."""
    # Derived from `parts` when first asked for (a record is read on many requests: its text,
    # emptiness and size are worked out once per process). Not part of its value.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    _empty: bool | None = field(default=None, init=False, repr=False, compare=False)
    _tokens: int | None = field(default=None, init=False, repr=False, compare=False)
    _plain: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    """`render`'s decision for a message that carries nothing of its own and takes this record
    (dialect name, outcome, the fields it adds as (key, value) pairs: none, sent as it is), the
    last dialect's only: a cold request restores hundreds of records the process decided for
    before. Never a reference back to a render recipe (which holds the record: a cycle the
    collector cannot free once the record is off its lists)."""

    @property
    def text(self) -> str:
        """The readable reasoning, concatenated in order (what `reasoning_content` carries)."""
        text = self._text
        if text is None:
            text = "".join(part.text for part in self.parts if part.kind == "thinking")
            object.__setattr__(self, "_text", text)
        return text

    @property
    def is_empty(self) -> bool:
        empty = self._empty
        if empty is None:
            empty = not any(part.text or part.is_opaque for part in self.parts)
            object.__setattr__(self, "_empty", empty)
        return empty

    @property
    def estimated_tokens(self) -> int:
        """Rough reasoning tokens: characters / 4 over the readable text and the opaque
        payloads (signature, redacted or encrypted data). An opaque payload stands for the full
        reasoning the provider bills (Claude returns a summary and encrypts the full thinking
        in the signature), so it is counted too. No tokenizer: the budget needs an order of
        magnitude, not the provider's exact count."""
        tokens = self._tokens
        if tokens is None:
            chars = 0
            for part in self.parts:
                chars += len(part.text) + len(part.signature or "") + len(part.data or "")
            tokens = tokens_of_chars(chars)
            object.__setattr__(self, "_tokens", tokens)
        return tokens

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": SCHEMA_VERSION,
            "parts": [part.to_json() for part in self.parts],
            "provider": self.provider,
            "model": self.model,
        }
        if self.superseded:
            out["superseded"] = True  # ignored by 0.1.0, which reads the rest as before
        if self.layout:
            out["layout"] = list(self.layout)  # ignored by 0.1.0 too
        if self.origin is not None:
            out["origin"] = self.origin  # ignored by 0.1.0 and 0.2.0
        if self.deployment is not None:
            out["deployment"] = self.deployment
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any], *, conversation: str | None = None) -> Reasoning:
        """The record `to_json` wrote; `conversation`: what the stores keep beside it."""
        if raw.get("v") != SCHEMA_VERSION:
            raise ValueError(f"unsupported reasoning record version {raw.get('v')!r}")
        return _built(
            tuple(map(ReasoningPart.from_json, raw.get("parts", ()))),
            raw.get("provider"),
            raw.get("model"),
            raw.get("superseded") is True,
            _layout(raw.get("layout")),
            _text(raw.get("origin")),
            _text(raw.get("deployment")),
            conversation,
        )

    @classmethod
    def from_text(
        cls, text: str, *, provider: str | None = None, model: str | None = None
    ) -> Reasoning:
        return cls(
            parts=(ReasoningPart(text=text),) if text else (), provider=provider, model=model
        )


# Decoding builds a record per stored record a process first reads (a proxy worker's first
# request of a long conversation: hundreds). The dataclasses' own `__init__` (keyword
# arguments, then `object.__setattr__` per field of a frozen class) is three quarters of
# building one; these set each slot through its descriptor, the same values, a quarter of the
# cost (tests/stores/test_codec_bytes.py keeps what they build equal to the constructors', field
# by field).
_PART_SLOTS = ("kind", "text", "signature", "data", "id", "details")
_RECORD_SLOTS = (
    "parts",
    "provider",
    "model",
    "superseded",
    "layout",
    "origin",
    "deployment",
    "conversation",
    "_text",
    "_empty",
    "_tokens",
    "_plain",
)
_new = object.__new__
(_set_kind, _set_text, _set_signature, _set_data, _set_id, _set_details) = (
    ReasoningPart.__dict__[name].__set__ for name in _PART_SLOTS
)
(
    _set_parts,
    _set_provider,
    _set_model,
    _set_superseded,
    _set_layout,
    _set_origin,
    _set_deployment,
    _set_conversation,
    _set_cached_text,
    _set_cached_empty,
    _set_cached_tokens,
    set_plain,
) = (Reasoning.__dict__[name].__set__ for name in _RECORD_SLOTS)


def _built_part(
    kind: PartKind,
    text: str,
    signature: str | None,
    data: str | None,
    id: str | None,
    details: dict[str, Any],
) -> ReasoningPart:
    """`ReasoningPart(kind=kind, text=text, ...)`, built slot by slot."""
    part: ReasoningPart = _new(ReasoningPart)
    _set_kind(part, kind)
    _set_text(part, text)
    _set_signature(part, signature)
    _set_data(part, data)
    _set_id(part, id)
    _set_details(part, details)
    return part


def _built(
    parts: tuple[ReasoningPart, ...],
    provider: str | None,
    model: str | None,
    superseded: bool,
    layout: tuple[str, ...],
    origin: str | None,
    deployment: str | None,
    conversation: str | None,
) -> Reasoning:
    """`Reasoning(parts=parts, provider=provider, ...)`, built slot by slot."""
    record: Reasoning = _new(Reasoning)
    _set_parts(record, parts)
    _set_provider(record, provider)
    _set_model(record, model)
    _set_superseded(record, superseded)
    _set_layout(record, layout)
    _set_origin(record, origin)
    _set_deployment(record, deployment)
    _set_conversation(record, conversation)
    _set_cached_text(record, None)
    _set_cached_empty(record, None)
    _set_cached_tokens(record, None)
    set_plain(record, None)
    return record


counted_tokens = attrgetter("_tokens")
"""A record's `estimated_tokens` once worked out, else None: read in C (`map` over many
records), where the property is a Python call per record."""
