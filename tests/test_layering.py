"""The layering the design promises: the pure core and the stores never import LiteLLM, so the
callback module stays the only place that touches it (and the only fail-open boundary)."""

from __future__ import annotations

import subprocess
import sys

PURE = [
    "turns",
    "calls",
    "types",
    "extract",
    "identity",
    "render",
    "policy",
    "targets",
    "model_table",
    "limits",
    "decisions",
    "healing",
    "refused",
    "prefix_cache",
    "stream_assembly",
    "responses_input",
    "dialects",
    "dialects.anthropic",
    "dialects.gemini",
    "dialects.mistral",
    "dialects.ollama",
    "dialects.openai_chat",
    "dialects.openai_responses",
    "dialects.openrouter",
    "dialects.no_reasoning",
    "stores",
]


def test_pure_modules_import_without_litellm() -> None:
    """Importing them with `litellm` made unimportable works, and pulls in no LiteLLM module."""
    code = "\n".join(
        [
            "import importlib, sys",
            "sys.modules['litellm'] = None  # any `import litellm` now raises ImportError",
            *(f"importlib.import_module('litellm_reasoning.{name}')" for name in PURE),
            "loaded = [m for m in sys.modules if m.startswith('litellm.')]",
            "assert not loaded, loaded",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
