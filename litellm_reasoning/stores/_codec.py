"""The bytes a persistent backend keeps per record, shared by SQLite and Redis.

`{"s": scope, "t": created unix time, "r": Reasoning.to_json()}` as compact UTF-8 JSON. The record
carries its own schema version (`types.SCHEMA_VERSION`); bytes that do not decode (another
version, damage) read as a missing record, never as an error.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from ..types import Reasoning

logger = logging.getLogger("litellm_reasoning")


@dataclass(frozen=True, slots=True)
class Decoded:
    scope: str
    created_at: float
    record: Reasoning | None


def encode(scope: str, record: Reasoning, created_at: float) -> bytes:
    payload = {"s": scope, "t": round(created_at, 3), "r": record.to_json()}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def decode(raw: bytes | str) -> Decoded:
    """The stored record; `record` is None when it cannot be read back."""
    try:
        payload = json.loads(raw)
        scope = str(payload.get("s", ""))
        created = float(payload.get("t", 0.0))
    except (ValueError, TypeError, AttributeError) as exc:
        logger.debug("litellm-reasoning: unreadable stored record (%s)", exc)
        return Decoded("", 0.0, None)
    try:
        record: Reasoning | None = Reasoning.from_json(payload["r"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        logger.debug("litellm-reasoning: unreadable stored record (%s)", exc)
        record = None
    return Decoded(scope, created, record)
