"""A tool-call key two conversations of one tenant share, told apart.

A tool-call message is keyed by its calls and its place in its turn, not by the history
before it (`identity`), so an edited or cut history still finds its record. With
deterministic tool-call ids (Kimi's `functions.<name>:<idx>`, a local server's `call_0`) two
conversations can reach the same key. Every such record therefore carries the digest of the
conversation before its message (`Reasoning.conversation`), and a store writing one compares
it with the record already there, atomically (`placement`):

* the same conversation (or no record): written under the key, as any record;
* a second conversation: the record there is marked shared (`SHARED` before its digest) and
  stays for its conversation; the new one goes under `exact_key`, as do all later ones.

A read (`reading`) restores a record filed for the message's own conversation, and one of a
single writer whatever its digest (the history was cut or edited, nothing else wrote there);
at a shared key it reads the message's `exact_key`, and a message whose exact copy is not
there (a history cut at its head, meeting a key two conversations wrote) restores nothing:
two records would fit, neither is guessed. Pure: decisions only.
"""

from __future__ import annotations

import enum

SHARED = "*"
"""Marks the conversation digest of a record whose key another conversation wrote too."""


class Placement(enum.Enum):
    """Where a store writes a record with a conversation digest (`placement`)."""

    KEY = "key"
    """Under its key, replacing what is there."""
    KEY_MARKED = "key_marked"
    """Under its key with its digest marked shared: the first writer rewriting its record."""
    EXACT = "exact"
    """Under `exact_key`: the key is shared already."""
    SPLIT = "split"
    """Under `exact_key`, after marking the record under the key shared (`marked`)."""


def placement(held: str | None, writing: str) -> Placement:
    """Where a record of conversation `writing` goes when its key holds a record of
    conversation `held` (None: no live record there, or one without a digest, which an
    earlier release wrote). A record marked shared already (copied from another store) goes
    under its key as it is."""
    if held is None or held == writing or writing.startswith(SHARED):
        return Placement.KEY
    if held == SHARED + writing:
        return Placement.KEY_MARKED
    if held.startswith(SHARED):
        return Placement.EXACT
    return Placement.SPLIT


def to_place(conversation: str | None) -> str | None:
    """The digest a store places a record with `conversation` by; None: the record is written
    under its key as it is (it has none, or is marked shared already: copied from a store)."""
    if conversation is None or conversation.startswith(SHARED):
        return None
    return conversation


def marked(conversation: str) -> str:
    """`conversation` marked shared (idempotent)."""
    return conversation if conversation.startswith(SHARED) else SHARED + conversation


def mark_left_by(conversation: str | None) -> str | None:
    """What stays under the key when a record filed with `conversation` leaves it (a refusal
    evicts it): the mark, where it is marked shared, so another conversation's read still goes
    to its own `exact_key` (the mark gone, a miss at the key looks no further); None: nothing."""
    if conversation is None or not conversation.startswith(SHARED):
        return None
    return conversation


def exact_key(key: str, conversation: str) -> str:
    """Where the record of conversation `conversation` (its digest, unmarked) goes once `key`
    is shared. Hashed keys are hex, so the colon cannot occur in any other key."""
    return f"{key}:{conversation}"


class Reading(enum.Enum):
    """What a read does with the record under a message's key (`reading`)."""

    RESTORE = "restore"
    """Filed for this conversation, or by a single writer: restored."""
    OTHER = "other"
    """Filed by a single writer for another conversation: restored (a history cut or edited
    before the message) unless this conversation's own capture is still running."""
    EXACT = "exact"
    """The key is shared: only the message's `exact_key` can hold its record."""


def reading(held: str | None, before: str) -> Reading:
    """What to do with a record of conversation `held` under the key of a message whose
    conversation before it has the digest `before`."""
    if held is None or held == before or held == SHARED + before:
        return Reading.RESTORE
    if held.startswith(SHARED):
        return Reading.EXACT
    return Reading.OTHER
