"""The tests' fork server (`tests/forkserver.py`): a forked process behaves as the new process
it replaces would, and a process is forked only when its environment allows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from forkserver import FORK_SERVER, run_python

SCRIPT = r"""
import atexit, os, sys, threading, time
atexit.register(lambda: print("atexit", flush=True))
def late():
    time.sleep(0.3)
    print("thread", flush=True)
threading.Thread(target=late).start()  # not a daemon: a new interpreter waits for it
print(sys.argv[1:], os.getcwd(), os.environ.get("LITELLM_REASONING_STORE"), sys.path[0] == "")
print(sys.stdin.read().upper())
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.skipif(os.environ.get("TESTS_FORK_LITELLM") == "0", reason="forking is off")
def test_a_forked_script_runs_as_a_new_process_would(tmp_path: Path) -> None:
    before = FORK_SERVER.forked
    env = {**os.environ, "LITELLM_REASONING_STORE": "memory://"}
    done = run_python(SCRIPT, "3", "x", env=env, cwd=tmp_path, input="piped in")
    assert FORK_SERVER.forked == before + 1  # it was forked, not started anew
    assert done.returncode == 3
    assert done.stdout.splitlines() == [
        f"['3', 'x'] {tmp_path} memory:// True",
        "PIPED IN",
        "thread",
        "atexit",
    ]
    assert done.stderr == "to stderr\n"
    failed = run_python("raise ValueError('boom')", env=env)
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr


def test_only_what_litellm_cannot_read_while_importing_may_differ() -> None:
    """Processes whose environments differ only in these keys share a fork server."""
    env = dict(os.environ)
    same = FORK_SERVER._key(env)
    assert FORK_SERVER._key({**env, "LITELLM_REASONING_STORE": "sqlite:///x.db"}) == same
    assert FORK_SERVER._key({**env, "LITELLM_MASTER_KEY": "sk-1", "OPENAI_API_KEY": "k"}) == same
    key = FORK_SERVER._key({**env, "LITELLM_LOG": "DEBUG"})
    assert key != same  # LiteLLM reads LITELLM_LOG while importing
    assert key == FORK_SERVER._key({**env, "LITELLM_LOG": "DEBUG", "XDG_DATA_HOME": "/d"})
