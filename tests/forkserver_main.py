"""The fork server's own process (see `forkserver.py`): import LiteLLM once, then fork a child
per request, each running LiteLLM's `litellm` CLI or a Python script as a fresh process would.

Requests come one JSON line each on stdin; the reply is the child's pid, one JSON line on stdout.
When a child ends, its exit code is written to the request's `status` file. This process stays
single-threaded, so forking it is safe.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any

del sys.path[0]  # this file's directory: a child's path starts as its request says

import litellm  # noqa: E402  # imported once here: what every child would spend seconds on

try:  # the proxy lines: the proxy server module is most of a proxy's startup
    import litellm.proxy.proxy_cli
    import litellm.proxy.proxy_server
except ImportError:  # the SDK line has no proxy extra: children run scripts only
    pass

if threading.active_count() != 1:  # a thread holding a lock at fork time could hang a child
    sys.exit(f"fork server: importing LiteLLM started threads: {threading.enumerate()}")

_status_files: dict[int, str] = {}


def _reap(_signum: int, _frame: object) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = _status_files.pop(pid, None)
        if path is not None:
            with open(path + ".part", "w") as file:
                file.write(str(os.waitstatus_to_exitcode(status)))
            os.replace(path + ".part", path)  # readers see the whole code or nothing


def _redirect(fd: int, path: str | None, flags: int) -> None:
    target = os.open(path or os.devnull, flags, 0o644)
    os.dup2(target, fd)
    os.close(target)


def _run_child(request: dict[str, Any]) -> None:
    code: int = 1
    try:
        os.setsid()  # leads its own process group, like `start_new_session=True`
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _redirect(0, request["stdin"], os.O_RDONLY)
        _redirect(1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        if request["stderr"] == request["stdout"]:
            os.dup2(1, 2)
        else:
            _redirect(2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        sys.path[0:0] = request["path"]  # what a new process puts first: its script, PYTHONPATH
        sys.argv = list(request["argv"])
        if request["kind"] == "litellm":
            litellm.proxy.proxy_cli.run_server()  # the `litellm` console script's entry point
        else:
            source = request["code"]
            exec(compile(source, "<string>", "exec"), {"__name__": "__main__"})
        code = 0
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        # What a new interpreter does on its way out: join non-daemon threads (a capture may
        # still run on LiteLLM's logging thread), then the atexit handlers.
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # closed by the child: nothing to flush
                stream.flush()
        os._exit(code)


def main() -> None:
    signal.signal(signal.SIGCHLD, _reap)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        # SIGCHLD waits until the new pid's status file is known, or a fast exit is lost.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            _run_child(request)
        _status_files[pid] = request["status"]
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
