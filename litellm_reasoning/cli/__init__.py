"""`litellm-reasoning`: the demo, the conformance runner, the store and `explain`."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from .. import __version__

    parser = argparse.ArgumentParser(prog="litellm-reasoning")
    parser.add_argument("--version", action="version", version=f"litellm-reasoning {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    conformance = commands.add_parser(
        "conformance", help="run conformance cases through real LiteLLM against a local server"
    )
    conformance.add_argument(
        "paths",
        nargs="*",
        help="case files or directories (default: ./conformance, else the cases the package ships)",
    )
    conformance.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="processes to run cases in (default: CPUs, at most 4)",
    )
    demo = commands.add_parser(
        "demo",
        help="replay a real recorded tool loop through LiteLLM with the callback (no API key)",
    )
    demo.add_argument("--stream", action="store_true", help="stream every request")
    demo.add_argument(
        "--proxy",
        action="store_true",
        help="go through the real LiteLLM proxy with the official openai client "
        "(needs: pip install 'litellm-reasoning[proxy]')",
    )
    from .explain import add_parser as add_explain_parser
    from .store import add_parser as add_store_parser

    add_store_parser(commands)
    add_explain_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "store":
        from .store import run as run_store

        return run_store(args)
    if args.command == "explain":
        from .explain import run as run_explain

        return run_explain(args)
    if args.command == "conformance":
        from .conformance import main as run_conformance

        return run_conformance(args.paths, args.jobs)
    from .demo import main as run_demo

    return run_demo(stream=args.stream, proxy=args.proxy)


if __name__ == "__main__":
    sys.exit(main())
