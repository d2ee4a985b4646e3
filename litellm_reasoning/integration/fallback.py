"""The one fallback of the request side: a failure inside the callback lets the request through
as the client sent it, less `turn` (which no provider takes). Every request-side hook's flow
runs inside `fail_open`; the reply side's failures only ever cost a capture."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from ..core.turns import without_turn
from .calls import CallState
from .reporting import Reporter


@contextmanager
def fail_open(
    report: Reporter,
    where: str,
    body: MutableMapping[str, Any],
    field: str,
    state: CallState | None = None,
) -> Iterator[None]:
    """The one fallback of the request side: a failure inside the block is logged once (per
    kind, per minute), nothing of the store goes out with the call (`state`), and `body[field]`
    is what the client sent less `turn`, which no provider takes. The request goes on."""
    sent = body.get(field)
    try:
        yield
    except Exception as exc:
        report.fail(where, exc)
        if state is not None:
            state.handled = True
            state.forget_restored()
        if isinstance(sent, list):
            body[field] = without_turn(sent)
