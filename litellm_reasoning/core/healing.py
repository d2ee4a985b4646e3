"""Which provider refusals name reasoning the callback put in a request, and what heals them.

A provider that refuses reasoning the callback restored (a signature it no longer accepts, an
encrypted item of another organisation, a block bound to another prefix) would refuse it again on
every retry and every later request of the conversation: the records restored into the refused
request are evicted, so the retry goes without them. A provider that asks for reasoning the
policy left out (DeepSeek's and Kimi's "must be passed back") gets every turn's reasoning from
then on. A refusal the callback did not cause (nothing restored, nothing left out) changes
nothing.

Pure: no LiteLLM, no I/O, no locks. The error texts are the providers' own (shared notes,
provider rules §1, §6, §7, §9 and §13).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from .policy import TurnPolicy
from .reasoning import Reasoning


class Refusal(str, Enum):
    """What a provider refused, by the reasoning it names."""

    SIGNED_BLOCKS = "signed_blocks"
    """Claude on Anthropic, Bedrock and Vertex: a thinking block's signature is invalid, bound
    to another conversation, modified, or missing."""
    THOUGHT_SIGNATURE = "thought_signature"
    """Gemini (AI Studio, Vertex): a thought signature it cannot verify."""
    ENCRYPTED_ITEM = "encrypted_item"
    """OpenAI Responses: an encrypted reasoning item it cannot decrypt, or an `rs_` id it does
    not hold, or a reasoning item without the item it preceded."""
    REASONING_REQUIRED = "reasoning_required"
    """DeepSeek, Kimi, Z.ai and their relays: earlier assistant messages' reasoning must be
    passed back."""
    REASONING_REJECTED = "reasoning_rejected"
    """The target takes no reasoning in its input (DeepSeek-R1 on Bedrock)."""


# (refusal, every lower-cased piece one error text holds); the first match wins, so the Gemini
# texts (which also say "signature") come before Claude's.
_PATTERNS: tuple[tuple[Refusal, tuple[str, ...]], ...] = (
    (Refusal.THOUGHT_SIGNATURE, ("corrupted thought signature",)),
    (Refusal.THOUGHT_SIGNATURE, ("invalid thought signature",)),
    (Refusal.SIGNED_BLOCKS, ("invalid `signature` in `thinking` block",)),
    (Refusal.SIGNED_BLOCKS, ("bound to a different conversation",)),
    (Refusal.SIGNED_BLOCKS, ("redacted_thinking` blocks in the latest assistant", "modified")),
    (Refusal.SIGNED_BLOCKS, ("thinking.signature", "field required")),
    (Refusal.SIGNED_BLOCKS, ("thinking.signature", "valid string")),
    (Refusal.SIGNED_BLOCKS, ("validationexception", "invalid signature")),
    (Refusal.ENCRYPTED_ITEM, ("invalid_encrypted_content",)),
    (Refusal.ENCRYPTED_ITEM, ("encrypted content", "could not be verified")),
    (Refusal.ENCRYPTED_ITEM, ("item with id 'rs_", "not found")),
    (Refusal.ENCRYPTED_ITEM, ("of type 'reasoning' was provided without its required following",)),
    (Refusal.REASONING_REQUIRED, ("reasoning_content", "must be passed back")),
    (Refusal.REASONING_REQUIRED, ("reasoning_content", "is missing")),
    (Refusal.REASONING_REQUIRED, ("missing `reasoning_content`",)),
    (Refusal.REASONING_REJECTED, ("cannot contain reasoning content",)),
)

_SIGNED_REFUSALS = (Refusal.SIGNED_BLOCKS, Refusal.THOUGHT_SIGNATURE, Refusal.ENCRYPTED_ITEM)


def classify(error_text: str) -> Refusal | None:
    """The refusal an error's text states (LiteLLM's exception message carries the provider's
    body), or None for any other error."""
    lower = error_text.lower()
    for refusal, pieces in _PATTERNS:
        if all(piece in lower for piece in pieces):
            return refusal
    return None


K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Healing(Generic[K]):
    """What one refusal changes."""

    refusal: Refusal
    evict: tuple[K, ...] = ()
    """The keys of the restored records that go: never restored again."""
    policy: TurnPolicy | None = None
    """The target's policy from now on (None: unchanged)."""


def heal(
    refusal: Refusal, restored: Mapping[K, Reasoning], policy: TurnPolicy
) -> Healing[K] | None:
    """What heals `refusal` of a request into which the records `restored` went (by key) and
    that was rendered under `policy`; None when the callback did not cause it.

    Signed or encrypted reasoning: every such record restored into the request is evicted (the
    provider names one block, but on binding models a block is refused for what precedes it,
    and an error names only the first it met: keeping any would refuse the retry again).
    """
    if refusal in _SIGNED_REFUSALS:
        evict = tuple(key for key, record in restored.items() if signed_or_encrypted(record))
        return Healing(refusal, evict=evict) if evict else None
    if refusal is Refusal.REASONING_REQUIRED:
        # Only the policy can have left earlier turns' reasoning out; every turn's is the most
        # any of these providers asks for.
        if policy is TurnPolicy.ALL_TURNS:
            return None
        return Healing(refusal, policy=TurnPolicy.ALL_TURNS)
    if refusal is Refusal.REASONING_REJECTED:
        return Healing(refusal, policy=TurnPolicy.NONE) if restored else None
    return None


_BREADTH = {
    TurnPolicy.NONE: 0,
    TurnPolicy.CURRENT_TURN: 1,
    TurnPolicy.TOOL_CALLS_ALL_TURNS: 2,
    TurnPolicy.ALL_TURNS: 3,
}


def widens(new: TurnPolicy, old: TurnPolicy) -> bool:
    """Whether `new` sends reasoning `old` leaves out (what a refusal may not do to an
    operator's explicit policy)."""
    return _BREADTH[new] > _BREADTH[old]


def signed_or_encrypted(record: Reasoning) -> bool:
    """Whether `record` holds what only its issuer can read (a signature, encrypted data)."""
    return any(part.signature or part.data for part in record.parts)


def fingerprint(record: Reasoning) -> str:
    """A short digest of what a record would send (its texts, signatures and opaque data):
    a refused record is recognised by it, a later record under the same key is not."""
    digest = hashlib.blake2b(digest_size=12, person=b"lr-refused")
    for part in record.parts:
        for value in (part.kind, part.text, part.signature or "", part.data or "", part.id or ""):
            digest.update(value.encode("utf-8", "surrogatepass"))
            digest.update(b"\x00")
    return digest.hexdigest()
