"""Loaded by every process started with this directory on `PYTHONPATH` (`diag_workers.py` puts it
there for the proxies it starts): per process, the garbage collector's collections per
generation and their thread CPU time, written to `$GC_PROBE_DIR/<arm>-<pid>.json` after each
full collection and at exit. Nothing happens without `GC_PROBE_DIR`."""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import time
from typing import Any

_DIR = os.environ.get("GC_PROBE_DIR")
_ARM = os.environ.get("GC_PROBE_ARM", "proxy")
_stats: dict[str, Any] = {"collections": [0, 0, 0], "seconds": [0.0, 0.0, 0.0]}
_started = [0.0]


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
    with open(os.path.join(str(_DIR), f"{_ARM}-{os.getpid()}.json"), "w") as out:
        json.dump(_stats, out)


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _started[0] = time.thread_time()
        return
    generation = info["generation"]
    _stats["collections"][generation] += 1
    _stats["seconds"][generation] += time.thread_time() - _started[0]
    if generation == 2:
        _dump()


if _DIR:
    gc.callbacks.append(_on_collection)
    atexit.register(_dump)
