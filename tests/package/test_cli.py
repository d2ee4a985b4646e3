"""The command line is consistent: global options anywhere, JSON from every command, one exit
code rule (0 done, 1 a bad outcome such as an unreachable store, 2 a usage mistake)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litellm_reasoning import cli
from litellm_reasoning.core.reasoning import Reasoning
from litellm_reasoning.stores import open_backend

pytestmark = pytest.mark.once  # the CLI's own behaviour, whatever LiteLLM

UNREACHABLE = "redis://127.0.0.1:9/0?timeout=0.2"
"""Port 9 (discard): nothing listens on the loopback, the connection is refused at once."""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with open_backend(url) as store:
        store.put_many("ns=a|key=k", {"r1": Reasoning.from_text("kept")})
    return url


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "--store", "{url}", "store", "stats"],
        ["store", "--json", "--store", "{url}", "stats"],
        ["store", "stats", "--json", "--store", "{url}"],
        ["--store", "{url}", "store", "stats", "--json"],
    ],
)
def test_global_options_are_taken_anywhere(
    argv: list[str], store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *(a.replace("{url}", store_url) for a in argv))
    assert code == 0, err
    shown = json.loads(out)
    assert [t["records"] for t in shown["tenants"]] == [1]
    assert shown["caps"]["per_tenant"].startswith("fair")  # how tenants share the caps


def test_store_stats_say_how_tenants_share_the_caps(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "store", "stats", "--store", store_url)
    assert code == 0, err
    assert "caps: max_records 200000, max_bytes 1073741824; fair: when a cap is reached" in out


def test_every_store_action_speaks_json(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "store", "show", "ns=a|key=k", "--json", "--store", store_url)
    assert code == 0 and json.loads(out)["records"][0]["key"] == "r1"
    code, out, _ = _run(
        capsys, "store", "purge", "--tenant", "ns=a|key=k", "--json", "--store", store_url
    )
    assert code == 0
    assert json.loads(out) == {
        "store": store_url,
        "removed": 1,
        "tenant": "ns=a|key=k",
        "older_than": None,
    }


def test_an_unreachable_store_is_an_error_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "model": "deepseek/deepseek-chat",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": "again"},
                ],
            }
        )
    )
    code, out, err = _run(capsys, "store", "stats", "--store", UNREACHABLE)
    assert code == 1 and "ConnectionError" in err, (out, err)
    code, out, err = _run(capsys, "explain", str(request), "--store", UNREACHABLE)
    assert code == 1 and "ConnectionError" in err, (out, err)
    assert "missing" not in out


def test_explain_hints_when_the_model_is_a_proxy_group(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": "my-deepseek", "messages": []}))
    code, out, _ = _run(capsys, "explain", str(request), "--store", store_url, "--json")
    assert code == 0
    assert "proxy model group" in json.loads(out)["hint"]
    code, out, _ = _run(capsys, "explain", str(request), "--store", store_url)
    assert "hint: " in out and "--model deepseek/deepseek-chat" in out


def test_usage_mistakes_exit_2_and_the_help_documents_the_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(capsys, "store", "stats", "--store", "mongodb://x")
    assert code == 2 and "unsupported reasoning store URL" in err
    with pytest.raises(SystemExit) as exited:
        cli.main(["store", "stats", "--jsn"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "exit codes" in text and "0  done" in text and "2  a usage" in text


def test_conformance_speaks_json_and_reports_rate_and_time_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from paths import REPO

    case = sorted((REPO / "conformance").glob("*.json"))[0]
    code, out, err = _run(capsys, "conformance", str(case), "--json", "--jobs", "1")
    result = json.loads(out)
    assert code == (0 if result["failed"] == 0 else 1)
    assert result["passed"] > 0 and result["runs"]
    assert "cases/min" in err and ("left" in err or "in all" in err)
