"""The layering the design promises, as a table: which part of the package may import which.

The pure core imports nothing else of the package and no LiteLLM; the wire adapters build on
the core only; the integration layer is the only part that imports LiteLLM at module level
(settings and the CLI load it lazily, inside functions). The table is read from the source
(every import statement, also those inside functions), and the pure parts are also imported
with LiteLLM made unimportable."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import litellm_reasoning

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

PACKAGE = Path(litellm_reasoning.__file__).resolve().parent

# part -> the parts it may import ("litellm" at module level: only the integration layer).
ALLOWED: dict[str, set[str]] = {
    "_version": set(),
    "core": set(),
    "wire": {"core"},
    "accelerator": {"core"},  # the optional C module `_accel`, loaded by name
    "stores": {"core", "accelerator"},
    "memo": {"core", "stores", "accelerator"},
    # the accelerator: pure helpers of the core's rules in C (which items carry `turn`)
    "integration": {"core", "wire", "memo", "stores", "accelerator", "litellm", "litellm (lazy)"},
    "settings": {
        "_version",
        "accelerator",
        "core",
        "wire",
        "stores",
        "integration",
        "litellm (lazy)",
    },
    "cli": {"__init__", "core", "wire", "stores", "integration", "testing", "litellm (lazy)"},
    "testing": {"core", "stores"},  # store doubles are stores
    "__init__": {"_version", "core", "integration", "settings"},
    "__main__": {"cli"},
}
PURE = ["core", "wire", "stores", "memo", "accelerator"]


def _part_of(path: Path) -> tuple[str, list[str]]:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]  # the package the module sits in (for `__init__`: itself)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return (parts[0] if parts else "__init__"), package


def _imports(path: Path) -> set[str]:
    """The parts of the package (and `litellm`) that the module at `path` imports."""
    part, package = _part_of(path)
    tree = ast.parse(path.read_text("utf-8"))
    top_level = set(map(id, tree.body))
    found: set[str] = set()
    for node in ast.walk(tree):
        lazy = id(node) not in top_level
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            if target:
                found.add(target[0])
            else:  # `from .. import x` at the package root: a part, or the root's own name
                for alias in node.names:
                    own = (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").exists()
                    found.add(alias.name if own else "__init__")
        else:
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.split(".")[0] == "litellm":
                    found.add("litellm (lazy)" if lazy else "litellm")
                elif name.startswith("litellm_reasoning."):
                    found.add(name.split(".")[1])
    return found - {part}


def test_every_module_imports_only_what_its_part_may() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part, _ = _part_of(path)
        assert part in ALLOWED, f"{path}: a part the layering table does not know"
        extra = _imports(path) - ALLOWED[part]
        if part in ("settings", "cli"):
            extra.discard("litellm (lazy)")
        if extra:
            wrong.append(f"{path.relative_to(PACKAGE)} imports {sorted(extra)}")
    assert not wrong, "\n".join(wrong)


def test_pure_parts_import_without_litellm() -> None:
    """Importing every module of the pure parts with `litellm` made unimportable works, and
    pulls in no LiteLLM module."""
    modules = [
        m.name
        for m in pkgutil.walk_packages([str(PACKAGE)], "litellm_reasoning.")
        if m.name.split(".")[1] in PURE
    ]
    assert len(modules) > 20  # the walk found the parts
    code = "\n".join(
        [
            "import importlib, sys",
            "sys.modules['litellm'] = None  # any `import litellm` now raises ImportError",
            *(f"importlib.import_module({name!r})" for name in modules),
            "loaded = [m for m in sys.modules if m.startswith('litellm.')]",
            "assert not loaded, loaded",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_the_core_holds_no_lock_and_does_no_io() -> None:
    """The core is decisions only: no threads, locks, files, sockets or clocks."""
    banned = {"threading", "asyncio", "socket", "sqlite3", "os", "time", "open"}
    wrong = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [(node.module or "").split(".")[0]]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names = [node.func.id]
            wrong += [f"{path.name}: {n}" for n in names if n in banned]
    assert not wrong, wrong


def test_the_table_names_every_part() -> None:
    parts = {_part_of(p)[0] for p in PACKAGE.rglob("*.py")}
    assert parts == set(ALLOWED)
    # and each of them imports (no part is dead weight in the table)
    for name in parts - {"__init__", "__main__", "cli", "settings"}:
        importlib.import_module(f"litellm_reasoning.{name}")
