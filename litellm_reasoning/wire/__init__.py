"""Dialects by name: how a target wants reasoning on the messages it is sent.

One adapter module per provider family (`wire/<family>.py` or `wire/<family>/`); every dialect
class it defines with a `name` of its own is registered here by finding it, so a new provider
is its adapter and its rows in the model table (`data/model_table.json`, whose `dialects` list
must name exactly what is registered: checked at import)."""

from __future__ import annotations

import importlib
import pkgutil

from ..core.dialect import REASONING_KEYS, Dialect, strip_reasoning
from ..core.model_table import DIALECT_NAMES
from ._base import BaseDialect


def _found() -> dict[str, Dialect]:
    for module in pkgutil.walk_packages(__path__, __name__ + "."):
        importlib.import_module(module.name)
    out: dict[str, Dialect] = {}
    classes = list(BaseDialect.__subclasses__())
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        name = cls.__dict__.get("name")  # its own: a subclass inherits its parent's
        if name:
            if name in out:
                raise RuntimeError(f"two dialects named {name!r}")
            out[name] = cls()
    return out


_DIALECTS = _found()

if set(_DIALECTS) != DIALECT_NAMES:  # the model table's list of names is this registry's
    raise RuntimeError(f"dialect names out of step: {sorted(set(_DIALECTS) ^ DIALECT_NAMES)}")


def get_dialect(name: str) -> Dialect:
    """The dialect called `name`; a clear error lists the known ones."""
    try:
        return _DIALECTS[name]
    except KeyError:
        raise ValueError(
            f"unknown dialect {name!r}; known: {', '.join(sorted(_DIALECTS))}"
        ) from None


def dialect_names() -> list[str]:
    return sorted(_DIALECTS)


__all__ = ["REASONING_KEYS", "Dialect", "dialect_names", "get_dialect", "strip_reasoning"]
