"""LiteLLM's own tests of every function litellm-reasoning patches, run without and then with
the callback registered; the outcomes must be the same (a test LiteLLM's tree fails on this
LiteLLM anyway is no finding of ours).

    git clone --depth 1 --branch v1.108.7 https://github.com/BerriAI/litellm /tmp/litellm-src
    .venvs/proxy-1.108.7/bin/python scripts/litellm_own_tests.py /tmp/litellm-src

Exit code 1 when a test passes without the callback and not with it; the tests are LiteLLM's,
from its tree (never copied here). Paths missing from the tree given are reported and skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
"""Where the pytest plugin registering the callback lives (`litellm_reasoning_registered.py`)."""

TESTS = (
    # BaseLLMHTTPHandler.completion (every provider's HTTP path), its signature and source
    "tests/test_litellm/test_acompletion_session_reuse_e2e.py",
    "tests/test_litellm/llms/custom_httpx/test_llm_http_handler.py",
    # Logging.should_run_callback (the no-log gate)
    "tests/test_litellm/litellm_core_utils/test_litellm_logging.py",
    # CustomStreamWrapper.__init__
    "tests/test_litellm/litellm_core_utils/test_streaming_handler.py",
    # the OpenRouter stream's chunk_parser
    "tests/test_litellm/llms/openrouter/chat/test_openrouter_chat_transformation.py",
    # Bedrock: the Converse handler and body builders, the invoke route's Claude config, the
    # redacted-thinking converter
    "tests/test_litellm/llms/bedrock/chat/test_converse_transformation.py",
    "tests/test_litellm/llms/bedrock/chat/test_converse_handler.py",
    "tests/test_litellm/llms/bedrock/chat/invoke_transformations/"
    "test_anthropic_claude3_transformation.py",
    "tests/test_litellm/litellm_core_utils/prompt_templates/"
    "test_bedrock_converse_redacted_thinking.py",
    # the pass-through stream logging of Anthropic-format streams
    "tests/test_litellm/proxy/pass_through_endpoints/test_streaming_handler.py",
    # the same functions where older trees (1.81) keep their tests; the pass-through stream
    # logging's in their pass-through unit tests
    "tests/pass_through_unit_tests/test_unit_test_streaming.py",
    "tests/pass_through_unit_tests/test_pass_through_unit_tests.py",
    "tests/pass_through_unit_tests/test_vertex_ai_anthropic_streaming_cost_injection.py",
    "tests/test_litellm/llms/chat/test_converse_handler.py",
    "tests/test_litellm/llms/bedrock/test_base_aws_llm.py",
    "tests/test_litellm/llms/bedrock/test_anthropic_beta_support.py",
    "tests/test_litellm/llms/bedrock/chat/test_converse_transformation_nova_2.py",
    "tests/test_litellm/llms/bedrock/chat/test_invoke_handler.py",
    "tests/test_litellm/llms/bedrock/chat/invoke_transformations/"
    "test_bedrock_chat_invoke_transformations_anthropic_claude3_transformation.py",
    "tests/test_litellm/litellm_core_utils/prompt_templates/"
    "test_litellm_core_utils_prompt_templates_factory.py",
    "tests/test_litellm/litellm_core_utils/test_get_litellm_params.py",
    "tests/test_litellm/test_streaming_connection_cleanup.py",
    "tests/test_litellm/test_shared_session_integration.py",
    "tests/test_litellm/test_aembedding_session_reuse_e2e.py",
    "tests/test_litellm/llms/custom_httpx/test_http_handler.py",
    # where LiteLLM calls the callback's hooks: completion, Router, Responses, the Anthropic
    # format (`/v1/messages`), logging and stream assembly, the providers it rewrites most
    "tests/test_litellm/test_main.py",
    "tests/test_litellm/test_router.py",
    "tests/test_litellm/test_logging.py",
    "tests/test_litellm/test_responses_api_bridge_non_stream.py",
    "tests/test_litellm/responses",
    "tests/test_litellm/anthropic_interface",
    "tests/test_litellm/llms/anthropic",
    "tests/test_litellm/llms/deepseek",
    "tests/test_litellm/llms/openrouter",
    "tests/test_litellm/litellm_core_utils/test_streaming_chunk_builder_utils.py",
    # completion calls through mocked HTTP: the hooks run on a whole call
    "tests/test_litellm/integrations/test_anthropic_cache_control_hook.py",
    "tests/test_litellm/llms/databricks/test_databricks_e2e.py",
    "tests/test_litellm/llms/mistral/test_mistral_completion.py",
    "tests/test_litellm/llms/ollama",
    "tests/test_litellm/llms/openai_like/test_json_providers.py",
    "tests/test_litellm/router_strategy/test_router_tag_routing.py",
    "tests/test_litellm/test_anthropic_beta_headers_filtering.py",
    "tests/test_litellm/test_router_silent_experiment.py",
)


def outcomes(report: Path) -> dict[str, str]:
    """test id -> passed / failed / skipped, from a junit report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        found[name] = (
            "failed"
            if kinds & {"failure", "error"}
            else "skipped"
            if "skipped" in kinds
            else "passed"
        )
    return found


def run(tree: Path, tests: list[str], report: Path, with_callback: bool) -> None:
    plugin = ["-p", "litellm_reasoning_registered"] if with_callback else []
    command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider", *plugin]
    # One test file this LiteLLM cannot import must not stop the others; one test that hangs
    # on this LiteLLM (a retry loop against a network it cannot reach grows by GBs a minute)
    # must not stop the run: it fails both runs alike.
    command += ["--continue-on-collection-errors"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        command += ["--timeout", "60"]
    command += [f"--junitxml={report}", "--rootdir", str(tree), *tests]
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": path}
    done = subprocess.run(command, cwd=tree, env=env, check=False, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines() or ["(no output)"]
    summary = [line for line in lines if re.search(r"\d+ (passed|failed)", line)] or lines
    print(f"{'with' if with_callback else 'without'} the callback: {summary[-1]}")
    for line in lines:
        if line.startswith("litellm-reasoning:"):  # the plugin's count of registered tests
            print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="a checkout of BerriAI/litellm")
    parser.add_argument("tests", nargs="*", help="test files (default: the patched functions')")
    args = parser.parse_args()
    wanted = args.tests or list(TESTS)
    present = [t for t in wanted if (args.tree / t).exists()]
    for missing in sorted(set(wanted) - set(present)):
        print(f"not in this tree: {missing}")
    if not present:
        print("no test to run")
        return 2
    with tempfile.TemporaryDirectory() as work:
        without, with_ = Path(work) / "without.xml", Path(work) / "with.xml"
        run(args.tree, present, without, with_callback=False)
        run(args.tree, present, with_, with_callback=True)
        before, after = outcomes(without), outcomes(with_)
    worse = sorted(t for t, o in before.items() if o == "passed" and after.get(t) != "passed")
    better = sorted(t for t, o in after.items() if o == "passed" and before.get(t) != "passed")
    counts = {o: list(after.values()).count(o) for o in ("passed", "failed", "skipped")}
    print(
        f"{len(after)} tests with the callback registered: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped; "
        f"{len(worse)} pass only without it, {len(better)} only with it"
    )
    for test in worse:
        print(f"  FAILS WITH THE CALLBACK: {test}")
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
