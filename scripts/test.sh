#!/usr/bin/env bash
# Install the project and run its tests, exactly as CI does.
#   1. LiteLLM 1.106.12 with the proxy extra (pinned by constraints/proxy-1.106.12.txt): every test,
#      including the real `litellm` proxy process and the Redis-backed store tests, but `once`.
#   2. LiteLLM 1.108.7 with the proxy extra (what `pip install 'litellm-reasoning[proxy]'` resolves
#      today, the 1.108 long-term-support line; constraints/proxy-1.108.7.txt): every test but
#      the `once` tests that do not start the proxy.
#   3. The newest supported SDK, LiteLLM 1.110.2: every test that does not start the proxy.
# Each set lives in its own venv under .venvs/ (re-used when present, so a re-run is quick); the
# three run side by side, and their output is printed one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True
PYTHON="${PYTHON:-python3}"

# The installs use uv (pinned, installed into .venvs/tools from PyPI): ~25 s a venv where pip
# takes ~90 s on 2 cores. Without it (no index reachable for it), pip does the same installs.
UV_VERSION=0.13.9
UV=.venvs/tools/bin/uv
if [ ! -x "$UV" ]; then
  "$PYTHON" -m venv .venvs/tools &&
    .venvs/tools/bin/python -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" ||
    echo "uv could not be installed: installing with pip" >&2
fi

install() {  # venv-dir constraints-file extras
  local venv=".venvs/$1"
  if [ -x "$UV" ]; then
    # --seed: pip inside the venv, for the test that builds the wheel as a user's pip does
    [ -x "$venv/bin/python" ] || "$UV" venv -q --seed --python "$(command -v "$PYTHON")" "$venv"
    "$UV" pip install -q --python "$venv/bin/python" --compile-bytecode -c "constraints/$2" \
      -e ".[$3]"
  else
    [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -c "constraints/$2" -e ".[$3]"
  fi
}

install proxy-1.106.12 proxy-1.106.12.txt dev,proxy
install proxy-1.108.7 proxy-1.108.7.txt dev,proxy
install sdk-1.110.2 sdk-1.110.2.txt dev

# Quality gates first (ruff and mypy pinned by constraints/proxy-1.108.7.txt): any finding of
# the linter, the formatter or strict typing fails the run before a test starts.
gates=.venvs/proxy-1.108.7/bin
echo "== quality gates: ruff check, ruff format --check, mypy --strict"
if ! { "$gates/ruff" check . && "$gates/ruff" format --check . && "$gates/mypy" --strict; }; then
  echo "quality gates failed: fix the findings above (tests not run)" >&2
  exit 1
fi
# The documentation site (docs/, mkdocs.yml) builds without a warning (`strict: true`).
MKDOCS_MATERIAL_VERSION=9.8.2
if [ ! -x .venvs/tools/bin/mkdocs ]; then
  if [ -x "$UV" ]; then
    "$UV" pip install -q --python .venvs/tools/bin/python "mkdocs-material==$MKDOCS_MATERIAL_VERSION"
  else
    "$PYTHON" -m venv .venvs/tools
    .venvs/tools/bin/python -m pip install -q "mkdocs-material==$MKDOCS_MATERIAL_VERSION"
  fi
fi
echo "== documentation: mkdocs build --strict"
NO_MKDOCS_2_WARNING=1 .venvs/tools/bin/mkdocs build --strict --quiet -d .venvs/site || {
  echo "the documentation site does not build cleanly (see above)" >&2
  exit 1
}

# The Redis tests need a server on 127.0.0.1:6379 (and `redis-server` for the cluster and
# Sentinel ones they start themselves): one is started here when none answers and the binary is
# there (`.ci/run` installs it); without it those tests skip (fail when CI is set).
if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && command -v redis-server >/dev/null 2>&1; then
  mkdir -p .venvs/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$PWD/.venvs/redis" --logfile "$PWD/.venvs/redis/redis.log"
  for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && break; sleep 0.1; done
fi

mkdir -p .venvs/reports
rm -f .venvs/reports/*.xml .venvs/reports/*.log  # a line that writes no report counts as failed
# The three lines run at once: each spends most of its time waiting on local servers, proxy
# processes and timeouts (a line alone keeps one core a quarter busy), and they share nothing
# but the Redis on 6379, where every test uses a prefix of its own; ports are all free ports.
run_line() {  # venv pytest-args...
  local venv=$1
  shift
  .venvs/$venv/bin/python -m pytest -q -p no:cacheprovider \
    --junitxml=.venvs/reports/$venv.xml "$@" >.venvs/reports/$venv.log 2>&1
}
# Tests marked `once` do not depend on the LiteLLM version (the pure core, the store contract,
# packaging, the bench's smoke run): each runs on one line, those needing the proxy on 1.108.7,
# the others on 1.110.2; everything else runs on every line it can.
# 1.106.12 runs without the native accelerator (`core/accelerator.py`): the pure-Python path,
# which is the contract, end to end; the other lines run the accelerated one.
LITELLM_REASONING_PURE_PYTHON=1 run_line proxy-1.106.12 -m "not once" "$@" &
pid_106=$!
run_line proxy-1.108.7 -m "not once or proxy" "$@" &
pid_108=$!
run_line sdk-1.110.2 -m "not proxy" "$@" &
pid_110=$!
status=0
wait $pid_106 || status=$?
echo "== LiteLLM 1.106.12 (with proxy, pure Python): all tests but those marked once"
cat .venvs/reports/proxy-1.106.12.log
wait $pid_108 || status=$?
echo "== LiteLLM 1.108.7 (with proxy): all tests but the once tests without the proxy"
cat .venvs/reports/proxy-1.108.7.log
wait $pid_110 || status=$?
echo "== LiteLLM 1.110.2 (SDK): all tests but the proxy process"
cat .venvs/reports/sdk-1.110.2.log

# Both runs in one closing line, counted from pytest's own reports.
"$PYTHON" - .venvs/reports/proxy-1.106.12.xml .venvs/reports/proxy-1.108.7.xml \
  .venvs/reports/sdk-1.110.2.xml <<'PY'
import sys, xml.etree.ElementTree as ET
total = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        suite = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        failed += 1  # a run that wrote no report did not pass
        continue
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    tests, skips = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    total += tests; failed += bad; skipped += skips
print(f"total: {total - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY
exit $status
