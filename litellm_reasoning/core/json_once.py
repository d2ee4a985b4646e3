"""`json.JSONEncoder.encode` without its per-call setup: for the encodings every message of a
request goes through (identity's shapes), where that setup was a large share of the cost.

Pure: no LiteLLM, no I/O, no state between calls.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any


def made_once(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """`encoder.encode`, without building its C encoder on every call (that build was a third
    of the cost of encoding a message's shape): the C encoder `encode` builds, with the same
    arguments, built once, but without the circular-reference check (its memo of ids would be
    shared by every thread). Parsed JSON holds no cycle; a value that does ends in a
    `RecursionError` instead of a `ValueError`, and a failing render lets the request through
    as sent, as any failure does. Byte for byte `encoder.encode` (tests/core/test_json_once.py,
    tests/core/test_golden_keys.py); without CPython's C accelerator, `encoder.encode` itself."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.indent is not None:
        return encoder.encode
    ascii_only = encoder.ensure_ascii
    quote = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    made = make(
        None,
        encoder.default,
        quote,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def encode(value: Any) -> str:
        return "".join(made(value, 0))

    return encode
