"""Where the tests find the repository's files, wherever a test module sits under tests/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository's root (cassettes/, conformance/, examples/, README.md)."""
