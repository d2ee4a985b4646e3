"""The local OpenAI-compatible `Upstream`, in a process of its own, so the benchmark's client (and
LiteLLM, in the SDK sections) never shares a GIL with the server it measures against.

    python bench/upstream_proc.py SPEC.json

SPEC: `{"always": {"<model>": <assistant message>}}`. Prints `READY <base_url>` once serving,
then serves until stdin closes or the process is terminated.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def main(spec_path: str) -> None:
    from litellm_reasoning.testing.upstream import Reply, Upstream

    spec = json.loads(Path(spec_path).read_text())
    with Upstream() as upstream:
        for model, message in spec.get("always", {}).items():
            upstream.always(model, Reply(message=message))
        print(f"READY {upstream.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()  # until the parent closes our stdin (or dies)


@contextlib.contextmanager
def upstream_process(always: dict[str, dict[str, Any]]) -> Iterator[str]:
    """Start the server process; yield its base_url; stop it afterwards."""
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"always": always}))
        process = subprocess.Popen(
            [sys.executable, __file__, str(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if not line.startswith("READY "):
                raise RuntimeError(f"upstream process did not start: {line!r}")
            yield line.split(" ", 1)[1]
        finally:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


if __name__ == "__main__":
    main(sys.argv[1])
