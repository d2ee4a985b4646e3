"""`litellm-reasoning`: the demo, the conformance runner, the store and `explain`."""

from __future__ import annotations

import argparse
import os
import sys

EXIT_CODES = """exit codes (every command):
  0  done (conformance: every case passed)
  1  done, with a bad outcome: a store that cannot be reached or read, nothing found
     (store show), a failed conformance case or demo step
  2  a usage or settings mistake (unknown option, bad store URL, missing file): nothing ran"""


def global_options() -> argparse.ArgumentParser:
    """`--json` and `--store`, accepted before or after any command and subcommand (defaults
    are left to the top level, so a later position never resets an earlier one)."""
    from .store import ENV

    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    options.add_argument(
        "--store",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=f"store URL (default: ${ENV}, else the proxy's SQLite file)",
    )
    return options


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from .. import __version__

    shared = global_options()
    parser = argparse.ArgumentParser(
        prog="litellm-reasoning",
        parents=[shared],
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"litellm-reasoning {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    conformance = commands.add_parser(
        "conformance",
        parents=[shared],
        help="run conformance cases through real LiteLLM against a local server",
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
        parents=[shared],
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

    add_store_parser(commands, shared)
    add_explain_parser(commands, shared)
    args = parser.parse_args(argv)
    # Defaults here, not on the parser: a parser default would overwrite a value given before
    # the subcommand when the subcommand's parser runs.
    args.json = getattr(args, "json", False)
    args.store = getattr(args, "store", None)
    if args.command == "store":
        from .store import run as run_store

        return run_store(args)
    if args.command == "explain":
        from .explain import run as run_explain

        return run_explain(args)
    if args.command == "conformance":
        from .conformance import main as run_conformance

        return run_conformance(args.paths, args.jobs, as_json=args.json)
    from .demo import main as run_demo

    return run_demo(stream=args.stream, proxy=args.proxy, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
