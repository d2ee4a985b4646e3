"""The optional native accelerator (`litellm_reasoning._accel`, compiled from `_accel.c` when
the package was built with a C compiler): canonical bytes, chained digests and store keys of
many messages in one call, byte for byte what `core.identity` computes (which stays the
contract: tests/core/test_accelerator.py compares them), for the prefix cache. `digests` exposes
its BLAKE2b (the chain's hash) to that test (the stores' decode cache keys records by Python's
own keyed hash of their bytes, which costs less than any digest). `without_turn` is
`turns.without_turn` with the items to look at found in C; `filed_for` the engine's check of a
read's records against their messages' conversations, in one pass.

`NATIVE` is the module, or None: not built, or `LITELLM_REASONING_PURE_PYTHON=1` in the
environment (the pure-Python path, e.g. to compare). Read once at import."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from .core import turns
from .core.extract import BLOCK_TYPES, CARRIER_KEYS, THOUGHT_SEPARATOR
from .core.identity import EXTRAS_KEY
from .core.render import Replay
from .core.turns import TURN_KEY

PURE_PYTHON_ENV = "LITELLM_REASONING_PURE_PYTHON"


class Native(Protocol):
    """What `_accel` offers (its docstrings say what each computes): its type."""

    def configure(
        self,
        turn_key: str,
        extras_key: str,
        block_types: tuple[str, ...],
        carrier_keys: tuple[str, ...],
        separator: str,
        /,
    ) -> None: ...

    def walk(
        self, messages: list[object], start: int, previous: str, /
    ) -> tuple[
        int, list[bytes], list[str], list[int], list[int], list[int], list[int], list[int]
    ]: ...

    def keys(
        self,
        messages: list[object],
        indices: list[int],
        shapes: list[bytes],
        digests: list[str],
        users: list[int],
        head: bytes,
        system: bytes,
        position_head: bytes,
        /,
    ) -> list[str | None]: ...

    def digests(self, datas: list[bytes], digest_size: int, person: bytes, /) -> list[bytes]: ...

    def copy(self, values: list[object], /) -> list[object] | None: ...

    def equal_prefix(self, messages: list[object], copies: list[object], limit: int, /) -> int: ...

    def exact_prefix(self, items: list[object], copies: list[object], limit: int, /) -> int: ...

    def turn_marked(self, items: list[object], /) -> list[int]: ...

    def sizes(self, shapes: list[bytes], start: int, total: int, overhead: int, /) -> list[int]: ...

    def untrack(self, objects: list[Any], /) -> None: ...

    def filed_for(
        self, keys: dict[int, str], before: dict[int, str], found: dict[str, Any], /
    ) -> bool: ...

    @property
    def replay(self) -> Replay: ...


def load() -> Native | None:
    """The accelerator, configured with the names `identity.read` looks for; None without it."""
    if os.environ.get(PURE_PYTHON_ENV, "").lower() in {"1", "true", "yes"}:
        return None
    try:
        native = cast(Native, importlib.import_module("litellm_reasoning._accel"))
    except ImportError:  # built without a C compiler
        return None
    native.configure(
        TURN_KEY, EXTRAS_KEY, tuple(BLOCK_TYPES), tuple(sorted(CARRIER_KEYS)), THOUGHT_SEPARATOR
    )
    return native


NATIVE = load()


def turn_marked(items: Sequence[Any]) -> list[int] | None:
    """The indices of the items that may carry `turn` (`_accel.turn_marked`), for
    `turns.without_turn`; None without the accelerator: every item may."""
    if NATIVE is None or type(items) is not list:
        return None
    return NATIVE.turn_marked(items)


def without_turn(items: Sequence[Any]) -> list[Any]:
    """`turns.without_turn(items)`, with the items that may carry `turn` found in C first
    (`turn_marked`): a long conversation holds none, and each item cost a Python call."""
    marked = turn_marked(items)
    return turns.without_turn(items, marked)


def filed_for(
    keys: Mapping[int, str], before: Mapping[int, str], found: Mapping[str, Any]
) -> bool | None:
    """`_accel.filed_for` (no record found under `keys` filed for another conversation than
    its message's); None without the accelerator, or where a mapping is not a dict that looks
    up as one: asked in Python then."""
    if (
        NATIVE is None
        or type(keys) is not dict
        or type(before) is not dict
        or not isinstance(found, dict)
        or type(found).get is not dict.get
    ):
        return None
    return NATIVE.filed_for(keys, before, found)
