"""The README's supported-providers table is the code's own table."""

from __future__ import annotations

from pathlib import Path

from litellm_reasoning.targets import providers_markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def test_providers_table_matches_the_code() -> None:
    """Regenerate the table with `litellm_reasoning.targets.providers_markdown()`."""
    text = README.read_text(encoding="utf-8")
    start = text.index("<!-- providers:start -->\n") + len("<!-- providers:start -->\n")
    end = text.index("<!-- providers:end -->")
    assert text[start:end].strip() == providers_markdown().strip()
