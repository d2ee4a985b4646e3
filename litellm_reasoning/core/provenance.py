"""Which deployment may receive a record: signed and encrypted reasoning goes back only to a
deployment of the provider that issued it with the same credentials (organisation, account,
project); its readable text may still go where the target takes plain text."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from operator import attrgetter

from .healing import signed_or_encrypted
from .reasoning import Reasoning

_ORIGIN = attrgetter("origin")


def of_origin(
    stored: Mapping[int, Reasoning], origin: str, provider: str | None
) -> tuple[dict[int, Reasoning], list[int]]:
    """`stored` as the deployment of `origin` (`identity.origin_of`) may receive it, and the
    indices whose records another deployment of this provider issued with other credentials:
    their signed and encrypted parts are left out, their text stays. Another provider's
    records are the dialect's to judge (`dropped_foreign`)."""
    origins = set(map(_ORIGIN, stored.values()))
    origins.difference_update((None, origin))
    if not origins:  # every record issued here, or by nobody known: the common case, in C
        return dict(stored) if not isinstance(stored, dict) else stored, []
    foreign = [
        i
        for i, record in stored.items()
        if record.origin is not None
        and record.origin != origin
        and record.provider == provider
        and signed_or_encrypted(record)
    ]
    if not foreign:
        return dict(stored) if not isinstance(stored, dict) else stored, []
    out = dict(stored)
    for i in foreign:
        readable = readable_parts(out[i])
        if readable is None:
            del out[i]
        else:
            out[i] = readable
    return out, foreign


def readable_parts(record: Reasoning) -> Reasoning | None:
    """`record` without what only its issuer can read (signatures, encrypted and redacted
    data); None when nothing else is left."""
    parts = tuple(
        dataclasses.replace(part, signature=None)
        for part in record.parts
        if not part.data and part.text
    )
    if not parts:
        return None
    return dataclasses.replace(record, parts=parts, layout=(), origin=None)
