"""The AWS event-stream framing Bedrock's `converse-stream` answers in
(`application/vnd.amazon.eventstream`): each event a binary message of a prelude (total and
header lengths, their CRC32), string headers (`:event-type`, `:content-type`, `:message-type`),
a JSON payload and the message's CRC32. What botocore's parser, and so LiteLLM, reads."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7  # the header value type of a UTF-8 string


def _header(name: str, value: str) -> bytes:
    key, text = name.encode(), value.encode()
    return struct.pack(">B", len(key)) + key + struct.pack(">BH", _STRING, len(text)) + text


def event_message(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """One event, framed."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    body = json.dumps(payload, separators=(",", ":")).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return head + struct.pack(">I", zlib.crc32(head))


def event_stream(events: Iterable[tuple[str, Mapping[str, Any]]]) -> bytes:
    """(event type, payload) pairs, framed one after another."""
    return b"".join(event_message(kind, payload) for kind, payload in events)
