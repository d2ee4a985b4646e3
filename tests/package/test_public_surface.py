"""The public surface, pinned: what users and the proxy rely on may only change on purpose.

`litellm_reasoning.callback` is resolved by LiteLLM with `getattr` on the package; a submodule of
that name, once imported, would shadow the instance, so the test imports every submodule first."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import litellm
import pytest
from conftest import register
from paths import REPO

import litellm_reasoning
from litellm_reasoning import ReasoningCallback

KEYWORDS = [
    "store",
    "namespace",
    "dialects",
    "policies",
    "capture_wait_seconds",
    "max_tracked_calls",
    "max_reasoning_tokens",
    "count_reasoning_tokens",
    "scope_from_client",
    "legacy_keys",
]
STATS = {
    "captured",
    "restored",
    "reordered",
    "stripped",
    "missing",
    "dropped",
    "over_budget",
    "unread_over_budget",
    "reasoning_tokens_sent",
    "reasoning_tokens_saved",
    "waited",
    "errors",
    "thinking_disabled",
    "thinking_stays_on",
    "dummy_signatures",
    "input_transformations",
    "refusals_healed",
    "refused_records",
    "foreign_origin",
    "required_lookups",
    "shared_key_own",
    "shared_key_ambiguous",
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_prompt_tokens",
}
ROOT = REPO
HOOKS = [
    "async_pre_call_deployment_hook",
    "log_pre_api_call",
    "async_pre_call_hook",
    "async_post_call_streaming_iterator_hook",
    "async_post_call_success_deployment_hook",
    "async_post_call_streaming_deployment_hook",
    "async_log_success_event",
    "log_success_event",
    "async_log_failure_event",
    "log_failure_event",
]


def test_package_exports() -> None:
    assert litellm_reasoning.__all__ == [
        "Reasoning",
        "ReasoningCallback",
        "ReasoningPart",
        "TurnPolicy",
        "__version__",
    ]


def test_constructor_keywords() -> None:
    parameters = inspect.signature(ReasoningCallback.__init__).parameters
    assert [p for p in parameters if p not in ("self", "kwargs")] == KEYWORDS


def test_every_hook_is_defined_on_the_class_itself() -> None:
    """The proxy skips an inherited `async_post_call_streaming_iterator_hook`."""
    assert [h for h in HOOKS if h not in vars(ReasoningCallback)] == []


def test_every_hook_override_accepts_keywords_a_newer_litellm_adds() -> None:
    """LiteLLM grows its hook signatures (`fallback_depth` on the failure deployment hook, PR
    #36657): every hook this class overrides takes keywords it does not know, and a call with
    one returns as without it."""
    from litellm.integrations.custom_logger import CustomLogger
    from litellm.types.utils import CallTypes

    overridden = [
        name
        for name, value in vars(ReasoningCallback).items()
        if callable(value) and hasattr(CustomLogger, name) and not name.startswith("__")
    ]
    assert set(HOOKS) <= set(overridden)
    closed = [
        name
        for name in overridden
        if not any(
            p.kind is inspect.Parameter.VAR_KEYWORD
            for p in inspect.signature(getattr(ReasoningCallback, name)).parameters.values()
        )
    ]
    assert closed == []
    callback = register(ReasoningCallback())
    kwargs = {"model": "openai/m", "messages": [{"role": "user", "content": "q", "turn": True}]}
    try:
        out = asyncio.run(
            callback.async_pre_call_deployment_hook(
                kwargs, CallTypes.acompletion, fallback_depth=1, newer=2
            )
        )
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    assert out is not None and out["messages"] == [{"role": "user", "content": "q"}]
    assert callback.stats["errors"] == 0


def test_stats_keys_the_code_counts_are_the_documented_ones() -> None:
    modules = [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(litellm_reasoning.__path__, "litellm_reasoning.")
        if not m.name.startswith("litellm_reasoning.testing")
    ]
    # the native accelerator (C) counts nothing
    source = "\n".join(inspect.getsource(m) for m in modules if str(m.__file__).endswith(".py"))
    import re

    counted = set(re.findall(r'\bstats\["([a-z_]+)"\]', source)) - {
        # ResilientStore's own counters (`store.stats`), not the callback's
        "failures",
        "outages",
        "recoveries",
        "held",
        "written_through",
        "lost",
        "slow",
        "required_reads",
        "records_read",
        "unreplicated",
        "rewritten_after_failover",
    }
    assert counted == STATS


def test_callback_is_the_instance_after_every_submodule_is_imported() -> None:
    code = "\n".join(
        [
            "import importlib, pkgutil, litellm_reasoning",
            "for m in pkgutil.walk_packages(litellm_reasoning.__path__, 'litellm_reasoning.'):",
            "    importlib.import_module(m.name)",
            "from litellm_reasoning import ReasoningCallback",
            "assert isinstance(litellm_reasoning.callback, ReasoningCallback)",
            "assert not hasattr(importlib.import_module('litellm_reasoning'), '__path__') or ("
            "  'litellm_reasoning.callback' not in __import__('sys').modules)",
        ]
    )
    env_free = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_REASONING_STORE": "memory://",
            "PATH": "/usr/bin:/bin",
        },
    )
    assert env_free.returncode == 0, env_free.stderr[-2000:]


def test_cli_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "litellm_reasoning.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "{conformance,demo,store,explain}" in done.stdout


def test_version_and_module_entry_point() -> None:
    for command in (
        [sys.executable, "-m", "litellm_reasoning", "--version"],
        [sys.executable, "-m", "litellm_reasoning.cli", "--version"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"litellm-reasoning {litellm_reasoning.__version__}"


@pytest.mark.once  # packaging: the same wheel whatever LiteLLM
def test_the_wheel_holds_the_license_the_data_and_the_version(tmp_path: Path) -> None:
    # Built as a user's pip builds it: in isolation, with the build backend pyproject names.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("litellm_reasoning-*.whl")
    assert wheel.name.startswith(f"litellm_reasoning-{litellm_reasoning.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    assert "litellm_reasoning/py.typed" in names
    # the native accelerator, compiled (this machine has a C compiler)
    native = ("litellm_reasoning/_accel.", (".so", ".pyd"))
    assert any(n.startswith(native[0]) and n.endswith(native[1]) for n in names)
    assert "litellm_reasoning/data/model_table.json" in names
    cases = sorted(p.name for p in (ROOT / "conformance").glob("*.json"))
    assert cases and all(f"litellm_reasoning/data/conformance/{c}" in names for c in cases)
    # Outside a checkout, `litellm-reasoning conformance` finds the cases the wheel ships.
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from litellm_reasoning.cli.conformance import default_paths, load_cases\n"
        "(path,) = default_paths(); assert path.startswith(sys.argv[1]), path\n"
        "print(len(load_cases([path])))"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = subprocess.run(
        [sys.executable, "-c", probe, str(unpacked)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=elsewhere,
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert int(found.stdout) > 0
    assert any(n.endswith("licenses/LICENSE") for n in names), sorted(names)[:20]
    assert "License-Expression: MIT" in text


@pytest.mark.once
def test_the_release_workflow_builds_checks_and_publishes_on_a_version_tag() -> None:
    """Not run here (no CI service): what it does is checked. Publishing is one tag away."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML reads the key `on` as True
    build = " ".join(str(step.get("run", "")) for step in workflow["jobs"]["build"]["steps"])
    assert "python -m build" in build and "twine check --strict dist/*" in build
    assert '"v$version" = "$GITHUB_REF_NAME"' in build
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
