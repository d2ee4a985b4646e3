"""Loaded by every process started with this directory on `PYTHONPATH` (`diag_workers.py` puts it
there for the proxies it starts): per process, the garbage collector's collections per
generation and their thread CPU time, written to `$GC_PROBE_DIR/<arm>-<pid>.json` after each
full collection and at exit. Nothing happens without `GC_PROBE_DIR`. With `GC_PROBE_CENSUS=1`,
also what each collection of the middle generation moves to the oldest, by type: the objects
the collector counts towards its next full collection. The census lists the young generations
from inside the collector's callback, which CPython does not make safe (an object being freed
can be listed): it has crashed a worker now and then; a diagnostic, never for a measured run."""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import time
from collections import Counter
from typing import Any

_DIR = os.environ.get("GC_PROBE_DIR")
_ARM = os.environ.get("GC_PROBE_ARM", "proxy")
_stats: dict[str, Any] = {"collections": [0, 0, 0], "seconds": [0.0, 0.0, 0.0]}
_started = [0.0]
_CENSUS = os.environ.get("GC_PROBE_CENSUS") == "1"
_promoted: Counter[str] = Counter()


def _kind(obj: object) -> str:
    """Its type's name only: an object of a young generation may be half-built (a list whose
    items are not filled in, a dict being merged), so nothing inside it is read."""
    return type(obj).__qualname__


def _dump() -> None:
    codec = sys.modules.get("litellm_reasoning.stores._codec")
    if codec is not None:  # the callback's decoded records, where it is loaded
        _stats["decoded"] = [codec.DECODED.hits, codec.DECODED.misses]
    diag = sys.modules.get("diag_callbacks")
    if diag is not None and getattr(diag, "TIMED", None):
        _stats["timed"] = diag.TIMED  # the `timed` arm's figures
    litellm = sys.modules.get("litellm")
    for callback in getattr(litellm, "callbacks", None) or ():
        stats = getattr(callback, "stats", None)
        if type(callback).__module__.startswith(("litellm_reasoning", "diag_")) and stats:
            _stats["restored"] = stats.get("restored", 0)  # the callback's own count
    if _CENSUS:
        _stats["promoted"] = dict(_promoted)  # whole: `diag_workers` subtracts startup's
    with open(os.path.join(str(_DIR), f"{_ARM}-{os.getpid()}.json"), "w") as out:
        json.dump(_stats, out)


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    generation = info["generation"]
    if phase == "start":
        if _CENSUS and generation == 1:
            # Everything still alive in the two younger generations survives this collection
            # (it frees only cyclic garbage) and is moved to the oldest one.
            _promoted.update(_kind(obj) for young in (0, 1) for obj in gc.get_objects(young))
        _started[0] = time.thread_time()
        return
    _stats["collections"][generation] += 1
    _stats["seconds"][generation] += time.thread_time() - _started[0]
    if generation == 2:
        _dump()


if _DIR:
    gc.callbacks.append(_on_collection)
    atexit.register(_dump)
