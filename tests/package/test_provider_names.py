"""Each provider's knowledge lives in its adapter (`litellm_reasoning/wire/`): a provider's
name used in code (a string, a name, an attribute, an import; docstrings and comments do not
count) outside the adapters fails this test, except in the few modules listed with the reason
they need one.

OpenAI counts as a provider like any other (its name, its dialects' names, LiteLLM's
`responses/` model route to its Responses API). The Responses *format* does not: LiteLLM serves
`responses` / `aresponses` for every provider, an entry point like chat and `/v1/messages`, so the
integration layer names it where it dispatches and captures calls."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import litellm_reasoning

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

PACKAGE = Path(litellm_reasoning.__file__).resolve().parent
PROVIDER = re.compile(
    r"anthropic|claude|bedrock|vertex|gemini|openrouter|deepseek|mistral|ollama|kimi|moonshot"
    r"|qwen|dashscope|minimax|fireworks|volcengine|zai\b|glm|openai|(^|/)responses/",
    re.IGNORECASE,
)
ALLOWED = {
    "wire": "the adapters, one per provider family",
    "testing": "servers standing in for each provider, for tests",
    "cli": "the demo and the conformance runner drive named providers",
    "core/extract.py": "LiteLLM's message fields (where it puts Gemini's thought signatures and "
    "Mistral's placeholder signature); the `gemini` details key is stored record data",
    "integration/kwargs.py": "LiteLLM's own parameter and call-type names (vertex_project, "
    "aws_bedrock_runtime_endpoint, anthropic_messages)",
    "integration/blocks_format.py": "the Anthropic-format entry point (/v1/messages) itself",
    "integration/patches.py": "patches of LiteLLM's own Bedrock, OpenRouter and OpenAI classes",
    "integration/sync_body.py": "calls LiteLLM's own Gemini converter (only this layer may)",
}


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _names_in_code(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    docs = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.append(node.value)
        elif isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(node.name)
        elif isinstance(node, ast.alias):
            found.append(node.asname or node.name)
    return [name for name in found if PROVIDER.search(name)]


def _allowed(relative: str) -> bool:
    return relative in ALLOWED or relative.split("/")[0] in ALLOWED


def test_provider_names_appear_only_in_their_adapters() -> None:
    wrong = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not _allowed(relative) and (names := _names_in_code(path)):
            wrong[relative] = sorted(set(names))
    assert not wrong, wrong


def test_the_check_sees_names_in_code_and_not_in_docstrings(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Talks about Claude and Gemini."""\n'
        "def f():\n"
        '    """Also Bedrock."""\n'
        '    return "deepseek"\n'
        "x = Kimi\n"
        'y = {"openai_responses": "responses/", "responses_input": RESPONSES_CALL_TYPES}\n',
        "utf-8",
    )
    assert sorted(_names_in_code(sample)) == ["Kimi", "deepseek", "openai_responses", "responses/"]


def test_every_allowed_module_exists_and_still_needs_its_exception() -> None:
    for relative in ALLOWED:
        where = PACKAGE / relative
        assert where.exists(), relative
        files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
        assert any(_names_in_code(f) for f in files), f"{relative} needs no exception any more"


# No module outside `wire/` imports an adapter module by its family (`..wire.<family>`): the
# registry (`..wire`) is the one door to a family, also for the two entry points whose request
# format is a provider API's own (`wire.messages_blocks`, `wire.responses_items`).


def _adapter_imports(path: Path) -> list[str]:
    """`..wire.<family>` (or `litellm_reasoning.wire.<family>`) modules `path` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if node.level == 0 and parts[:2] == ["litellm_reasoning", "wire"]:
                parts = parts[1:]
            if parts[0] == "wire" and len(parts) > 1:
                found.append(node.module)
            elif parts == ["wire"] and node.level == 2:
                wire = PACKAGE / "wire"
                found += [
                    a.name
                    for a in node.names
                    if (wire / a.name).is_dir() or (wire / f"{a.name}.py").exists()
                ]
    return found


def test_adapters_are_reached_only_through_the_registry() -> None:
    wrong = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith("wire/") and (found := _adapter_imports(path)):
            wrong[relative] = found
    assert not wrong, wrong


def test_the_import_check_sees_a_family_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from ..wire.anthropic import messages\n"
        "from ..wire.openai_responses.dialect import CHAT_BRIDGE_PREFIX\n"
        "from litellm_reasoning.wire.gemini import GeminiDialect\n"
        "from ..wire import gemini, get_dialect, messages_blocks\n",
        "utf-8",
    )
    assert _adapter_imports(sample) == [
        "wire.anthropic",
        "wire.openai_responses.dialect",
        "litellm_reasoning.wire.gemini",
        "gemini",
    ]
