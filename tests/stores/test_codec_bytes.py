"""The codec's bytes do not depend on whether orjson is installed: where it writes a record
(LiteLLM's proxy installs it), it writes what `json` writes, byte for byte, so every release and
every replica reads every record, and a record rewritten unchanged is the same bytes (the decode
caches key records by their bytes). The suite runs on venvs with orjson (the proxy lines) and
without it (the SDK line): these tests check whichever path is installed against `json` itself."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from litellm_reasoning.core.reasoning import Reasoning, ReasoningPart
from litellm_reasoning.stores import _codec

# Any text but lone surrogates (a separate test): control characters, quotes, backslashes,
# non-BMP characters, U+2028 and U+007F, which JSON encoders are known to escape differently.
texts = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)),
    max_size=40,
)
maybe_text = st.one_of(st.none(), texts)
parts = st.builds(
    ReasoningPart,
    kind=st.sampled_from(["thinking", "redacted", "encrypted"]),
    text=texts,
    signature=maybe_text,
    data=maybe_text,
    id=maybe_text,
)
records = st.builds(
    Reasoning,
    parts=st.lists(parts, max_size=3).map(tuple),
    provider=maybe_text,
    model=maybe_text,
    superseded=st.booleans(),
    layout=st.lists(st.sampled_from(["r", "u", "t0", "t17"]), max_size=4).map(tuple),
    origin=maybe_text,
    deployment=maybe_text,
    conversation=maybe_text,
)
# Release 0.1.0's bytes of `RECORD`, pinned (stored key material: tests/core/test_golden_keys.py).
RECORD_BYTES_0_1_0 = (
    b'{"s":"ns=default","t":1700000000.123,"r":{"v":1,"parts":[{"kind":"thinking","text":'
    b'"think \xc3\xa9","signature":"sig"},{"kind":"redacted","data":"xx"}],"provider":'
    b'"anthropic","model":"claude"}}'
)
RECORD = Reasoning(
    parts=(
        ReasoningPart(text="think é", signature="sig"),
        ReasoningPart(kind="redacted", data="xx"),
    ),
    provider="anthropic",
    model="claude",
)
# Unix times as the stores pass them (and the small clocks tests use), rounded to 3 places.
created = st.one_of(
    st.floats(min_value=1.6e9, max_value=4.1e9),
    st.floats(min_value=0, max_value=1e6),
    st.integers(min_value=0, max_value=2**40),
)


def json_bytes(scope: str, record: Reasoning, created_at: float) -> bytes:
    """What the codec writes with the json module (what every earlier release wrote)."""
    payload: dict[str, Any] = {}
    if record.conversation is not None:
        payload["c"] = record.conversation
    payload.update(s=scope, t=round(created_at, 3), r=record.to_json())
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=400, deadline=None)
@given(scope=texts, record=records, created_at=created)
def test_the_codec_writes_the_json_modules_bytes_and_reads_them_back(
    scope: str, record: Reasoning, created_at: float
) -> None:
    written = _codec.encode(scope, record, created_at)
    assert written == json_bytes(scope, record, created_at)
    decoded = _codec.decode(written)
    assert decoded.record == record
    assert decoded.record is not None and decoded.record.conversation == record.conversation
    assert decoded.scope == scope


def _every_field(value: Any) -> dict[str, Any]:
    """Each dataclass field of `value` (those left out of `==` too), parts field by field."""
    out = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Reasoning):
        out["parts"] = [_every_field(part) for part in value.parts]
    return out


@settings(max_examples=200, deadline=None)
@given(scope=texts, record=records, created_at=created)
def test_a_decoded_record_is_what_the_constructors_build_field_by_field(
    scope: str, record: Reasoning, created_at: float
) -> None:
    """Decoding builds records slot by slot (a quarter of the dataclasses' `__init__`): every
    field is set, to what the constructors would set, including those `==` leaves out (the
    conversation, the cached text, emptiness and size), so a field added later and not built
    fails here rather than on a read."""
    written = _codec.encode(scope, record, created_at)
    decoded = _codec.decode(written)
    fresh = dataclasses.replace(record)  # by the constructor: nothing cached yet
    assert decoded.record is not None
    assert _every_field(decoded.record) == _every_field(fresh)
    assert _every_field(decoded) == _every_field(
        _codec.Decoded(scope, round(created_at, 3), fresh, len(written))
    )
    # the cached values, worked out on the built record as on the constructed one
    assert (decoded.record.text, decoded.record.is_empty, decoded.record.estimated_tokens) == (
        fresh.text,
        fresh.is_empty,
        fresh.estimated_tokens,
    )


def test_a_record_with_provider_details_is_written_by_json() -> None:
    """Provider `details` may hold values the two encoders write differently (a float json
    writes as `1e-05`, orjson 3.13 as `0.00001`; an integer orjson refuses): such a record is
    written as json writes it."""
    record = Reasoning(
        parts=(ReasoningPart(text="t", details={"small": 1e-5, "big": 1e16, "n": 2**70}),),
        provider="gemini",
    )
    written = _codec.encode("s", record, 1700000000.5)
    assert written == json_bytes("s", record, 1700000000.5)
    assert b'"small":1e-05' in written and b'"n":1180591620717411303424' in written
    assert _codec.decode(written).record == record


def test_what_only_json_reads_is_still_read() -> None:
    """Bytes an earlier release or another program wrote that orjson refuses (an escaped lone
    surrogate; `NaN`) are read by json, as before; junk is a missing record, not an error."""
    odd = Reasoning(parts=(ReasoningPart(text="a\ud83d", details={"x": float("inf")}),))
    payload = {"s": "s", "t": 1.0, "r": odd.to_json()}
    escaped = json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode()
    assert b"\\ud83d" in escaped and b"Infinity" in escaped
    assert _codec.decode(escaped).record == odd
    junk = _codec.decode(b'{"s":"s","t":1.0,"r":{"v":1,"parts":[')
    assert (junk.scope, junk.created_at, junk.record) == ("", 0.0, None)


def test_orjson_writes_where_it_is_installed() -> None:
    """The fast path is taken wherever orjson can be imported (the proxy's install)."""
    installed = importlib.util.find_spec("orjson") is not None
    assert (_codec._orjson is not None) is installed


def test_record_codec_writes_and_reads_the_0_1_0_bytes() -> None:
    """The record release 0.1.0 wrote, pinned (with orjson and without it): written byte for
    byte, read back."""
    assert _codec.encode("ns=default", RECORD, 1700000000.123456) == RECORD_BYTES_0_1_0
    decoded = _codec.decode(RECORD_BYTES_0_1_0)
    assert (decoded.scope, decoded.created_at, decoded.record) == (
        "ns=default",
        1700000000.123,
        RECORD,
    )
    assert decoded.size == len(RECORD_BYTES_0_1_0)
