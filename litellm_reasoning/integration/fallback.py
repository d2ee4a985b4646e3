"""The callback's two fallbacks, the only places its failures stop. Request side (`fail_open`): a
failure inside the callback lets the request through as the client sent it, less `turn` (which
no provider takes); every request-side hook's flow runs inside it. Everywhere else
(`Contained`: the reply side, LiteLLM functions patched, reporting): a failure is logged and
goes no further, costing at most a capture."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from types import TracebackType
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
        let_through(report, where, exc, body, field, sent, state)


def let_through(
    report: Reporter,
    where: str,
    exc: Exception,
    body: MutableMapping[str, Any],
    field: str,
    sent: Any,
    state: CallState | None = None,
) -> None:
    """What `fail_open` does with a failure `exc`: logged once (per kind, per minute), nothing
    of the store goes out with the call (`state`), and `body[field]` is `sent` (what the client
    sent) less `turn`."""
    report.fail(where, exc)
    if state is not None:
        state.handled = True
        state.forget_restored()
    if isinstance(sent, list):
        body[field] = without_turn(sent)


class Contained:
    """The fallback where no request is to be let through: a failure inside the `with` block
    is handed to `fail` (`Reporter.fail`: logged once per kind per minute, counted) and goes no
    further; the call it belongs to goes on unchanged. (A class, not a generator: it sits on
    every request's path.)"""

    __slots__ = ("fail", "where")

    def __init__(self, fail: Callable[[str, BaseException], None], where: str) -> None:
        self.fail = fail
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if not isinstance(exc, Exception):  # none, or a cancellation / interrupt: goes on
            return False
        self.fail(self.where, exc)
        return True
