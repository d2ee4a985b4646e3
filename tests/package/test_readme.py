"""The README a user reads in five minutes, and the docs' providers table is the code's own."""

from __future__ import annotations

import pytest
from paths import REPO

from litellm_reasoning.core.targets import providers_markdown

pytestmark = pytest.mark.once  # see the marker in pyproject.toml

README = REPO / "README.md"
PROVIDERS = REPO / "docs" / "providers.md"


def test_providers_table_matches_the_code() -> None:
    """Regenerate the table with `litellm_reasoning.core.targets.providers_markdown()`."""
    text = PROVIDERS.read_text(encoding="utf-8")
    start = text.index("<!-- providers:start -->\n") + len("<!-- providers:start -->\n")
    end = text.index("<!-- providers:end -->")
    assert text[start:end].strip() == providers_markdown().strip()


def test_the_readme_fits_on_a_few_screens_with_the_two_commands_first() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)
    head = "\n".join(lines[:60])
    demo = "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/litellm-reasoning demo"
    assert demo in head and "bash scripts/test.sh" in head


def test_the_readme_has_no_link_that_breaks_on_a_package_index_page() -> None:
    """A relative link works on the repository's page and nowhere else: only absolute links."""
    import re

    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)]+)\)", text)
    assert targets and all(t.startswith(("https://", "http://")) for t in targets), targets


def test_every_documented_path_exists() -> None:
    """The files the README and the docs name as `path` are in the repository."""
    import re

    for doc in [README, *sorted((REPO / "docs").glob("*.md")), REPO / "CONTRIBUTING.md"]:
        text = doc.read_text(encoding="utf-8")
        for path in re.findall(
            r"`((?:docs|examples|bench|tests|scripts|cassettes|litellm_reasoning)/[\w./-]+)`", text
        ):
            assert (REPO / path.rstrip("/")).exists(), (doc.name, path)


def test_the_docker_example_installs_this_package_into_litellms_image() -> None:
    """No Docker daemon here: what the files say is checked (what they copy exists, the store
    points at the compose file's Redis, the package goes in without touching LiteLLM)."""
    import yaml

    root = REPO
    dockerfile = (root / "examples/proxy/Dockerfile").read_text()
    assert "FROM ${LITELLM_IMAGE}" in dockerfile and "berriai/litellm" in dockerfile
    assert "pip install --no-cache-dir --no-deps" in dockerfile
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (root / source).exists(), source
    compose = yaml.safe_load((root / "examples/proxy/compose.yaml").read_text())
    services = compose["services"]
    assert services["litellm"]["build"]["dockerfile"] == "examples/proxy/Dockerfile"
    assert (root / "examples/proxy" / services["litellm"]["build"]["context"]).resolve() == root
    assert services["litellm"]["environment"]["LITELLM_REASONING_STORE"] == "redis://redis:6379/0"
    assert "redis" in services and services["litellm"]["depends_on"] == ["redis"]


def test_the_example_config_lists_every_dialect() -> None:
    from litellm_reasoning.wire import dialect_names

    root = REPO
    text = " ".join((root / "examples/proxy/config.yaml").read_text().replace("#", " ").split())
    assert ", ".join(dialect_names()) + "." in text
