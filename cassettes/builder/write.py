"""Writing the cassettes and their client scripts; the command line."""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap
from pathlib import Path

import yaml

from .claude import CLAUDE_SPECS
from .common import (
    DEFAULT_SOURCE,
    HERE,
    OPENINFERENCE,
    PYDANTIC_AI,
    VERCEL_AI,
    Interaction,
    Json,
    Spec,
    _reply_of,
    _same_reply,
)
from .gemini import GEMINI_SPECS
from .openai_compatible import OPENAI_COMPATIBLE_SPECS
from .responses import RESPONSES_SPECS


def _header_comment(spec: Spec, interactions: list[Interaction]) -> str:
    origin = spec.origin
    lines = [
        "Built by cassettes/build_cassettes.py; regenerate instead of editing by hand.",
        f"Content: {spec.summary}.",
        f"Source: {origin['repository']} at commit {origin['commit']},",
        f"  {origin['original_prefix']}{spec.original_path}",
        f"  (copied unmodified as realdata/{spec.source}).",
        f"Licence: {origin['licence']}; full text in cassettes/{origin['licence_file']}.",
        f"Changes: {origin['changes']}.",
        "Interactions:",
    ]
    for number, interaction in enumerate(interactions, start=1):
        lines.append(f"  {number}. {interaction.note}")
    wrapped = [
        part
        for line in lines
        for part in textwrap.wrap(
            line,
            width=98,
            subsequent_indent=" " * (len(line) - len(line.lstrip()) + 3),
            break_on_hyphens=False,
        )
    ]
    return "".join(f"# {line}\n" for line in wrapped)


def client_script(spec: Spec, interactions: list[Interaction]) -> Json:
    """What the client sent, request by request, and which assistant messages repeat a reply.

    `echoes` maps a message index of request k to the index j < k of the request whose reply
    that assistant message sends back, so a test can put its own (live) reply there.
    """
    replies = [_reply_of(item) for item in interactions]
    requests: list[Json] = []
    for k, item in enumerate(interactions):
        body = json.loads(item.request["body"])
        echoes: dict[str, int] = {}
        for i, message in enumerate(body.get("messages") or ()):
            if message.get("role") != "assistant":
                continue
            for j in range(k):
                if _same_reply(message, replies[j]):
                    echoes[str(i)] = j
        requests.append({"body": body, "echoes": echoes})
    return {
        "cassette": f"{spec.name}.yaml",
        "provider": spec.provider,
        "api_base": spec.api_base,
        "requests": requests,
    }


SPECS: tuple[Spec, ...] = (
    *OPENAI_COMPATIBLE_SPECS,
    *CLAUDE_SPECS,
    *RESPONSES_SPECS,
    *GEMINI_SPECS,
)


def build(source: Path, out: Path) -> list[Path]:
    written: list[Path] = []
    (out / "licenses").mkdir(parents=True, exist_ok=True)
    (out / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "pydantic-ai" / "LICENSE", out / PYDANTIC_AI["licence_file"])
    shutil.copyfile(source / "vercel-ai" / "LICENSE", out / VERCEL_AI["licence_file"])
    shutil.copyfile(source / "openinference" / "LICENSE", out / OPENINFERENCE["licence_file"])
    for spec in SPECS:
        interactions = spec.build(source, spec)
        cassette = {
            "interactions": [
                {"request": item.request, "response": item.response} for item in interactions
            ],
            "version": 1,
        }
        text = _header_comment(spec, interactions) + yaml.safe_dump(
            cassette, allow_unicode=True, sort_keys=False, width=120
        )
        assert yaml.safe_load(text) == cassette
        target = out / f"{spec.name}.yaml"
        target.write_text(text, encoding="utf-8")
        script = out / "scripts" / f"{spec.name}.json"
        make_script = spec.script or client_script
        script.write_text(
            json.dumps(make_script(spec, interactions), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
        written += [target, script]
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    for path in build(args.source, args.out):
        print(path)


if __name__ == "__main__":
    main()
