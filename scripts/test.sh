#!/usr/bin/env bash
# Install what the tests need (Python packages, Debian's Chromium, HAProxy and PostgreSQL when missing), lint with ruff, run the suite.
# Usage: bash scripts/test.sh [pytest args]   — the README's test command and what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -r requirements-test.txt

# Debian packages the tests need: chromium, haproxy for the classroom launch, postgresql for the class store.
APT_PACKAGES=()
command -v chromium >/dev/null 2>&1 || APT_PACKAGES+=(chromium)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || APT_PACKAGES+=(haproxy)
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || APT_PACKAGES+=(postgresql)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if [ "${#APT_PACKAGES[@]}" -gt 0 ]; then
  echo "Installing Debian's ${APT_PACKAGES[*]} for the tests…"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${APT_PACKAGES[@]}" >/dev/null
fi

# axe-core for the accessibility browser tests (tests/e2e/test_class_access_e2e.py), pinned in tests/e2e/axe
if [ ! -f tests/e2e/axe/node_modules/axe-core/axe.min.js ]; then
  command -v npm >/dev/null 2>&1 || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null; }
  npm ci --prefix tests/e2e/axe --no-audit --no-fund --loglevel=error
fi

export HF_HUB_OFFLINE=1          # tests never reach the network
export PYTHONUNBUFFERED=1
# Lint and format check first (rules in pyproject.toml), then the suite; a failure of either fails the run but
# the tests still run.
lint=0
python3 -m ruff check . || lint=$?
python3 -m ruff format --check . || lint=$?
tests=0
# two workers (AP_TEST_WORKERS to change; 0 runs in this process): a browser test's server and Chromium leave a core
# idle that the other worker uses; a module whose tests share a module-scoped fixture stays on one (pytest.ini)
python3 -m pytest -n "${AP_TEST_WORKERS:-2}" "$@" || tests=$?
if [ "$lint" != 0 ]; then echo "ruff check or ruff format --check failed (see above): fix it, or run python3 -m ruff check --fix . && python3 -m ruff format ." >&2; fi
if [ "$tests" != 0 ]; then exit "$tests"; fi
exit "$lint"
