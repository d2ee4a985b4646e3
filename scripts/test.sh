#!/usr/bin/env bash
# Install the project and run its tests, exactly as CI does.
#   1. LiteLLM 1.106.12 with the proxy extra (pinned by constraints/proxy-1.106.12.txt): every test,
#      including the real `litellm` proxy process and the Redis-backed store tests.
#   2. LiteLLM 1.108.7 with the proxy extra (what `pip install 'litellm-reasoning[proxy]'` resolves
#      today, the 1.108 long-term-support line; constraints/proxy-1.108.7.txt): every test.
#   3. The newest supported SDK, LiteLLM 1.110.2: every test that does not start the proxy.
# Each set lives in its own venv under .venvs/ (re-used when present, so a re-run is quick).
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True
PYTHON="${PYTHON:-python3}"

install() {  # venv-dir constraints-file extras
  local venv=".venvs/$1"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c "constraints/$2" -e ".[$3]"
}

install proxy-1.106.12 proxy-1.106.12.txt dev,proxy
install proxy-1.108.7 proxy-1.108.7.txt dev,proxy
install sdk-1.110.2 sdk-1.110.2.txt dev

mkdir -p .venvs/reports
status=0
echo "== LiteLLM 1.106.12 (with proxy): all tests"
.venvs/proxy-1.106.12/bin/python -m pytest -q -p no:cacheprovider \
  --junitxml=.venvs/reports/proxy-1.106.12.xml "$@" || status=$?
echo "== LiteLLM 1.108.7 (with proxy): all tests"
.venvs/proxy-1.108.7/bin/python -m pytest -q -p no:cacheprovider \
  --junitxml=.venvs/reports/proxy-1.108.7.xml "$@" || status=$?
echo "== LiteLLM 1.110.2 (SDK): all tests but the proxy process"
.venvs/sdk-1.110.2/bin/python -m pytest -q -p no:cacheprovider -m "not proxy" \
  --junitxml=.venvs/reports/sdk-1.110.2.xml "$@" || status=$?

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
