#!/usr/bin/env bash
# The one test command (README): installs what the tests need (Prometheus, Alertmanager,
# an SMTP server; tests/deploy/run.sh adds ansible-core, ansible-lint and hadolint in a
# virtualenv; idempotent), then runs every test:
# unit and integration tests (real Prometheus/Alertmanager/SMTP, the real binary), the
# Prometheus rule unit tests, and the deployment tests (Ansible role, Dockerfile).
# The layering check (ARCHITECTURE.md) runs first: it needs no build.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/support/install_deps.sh
hash -r
# A missing external tool fails the tests instead of skipping them.
export SRE_TEST_REQUIRE_EXTERNAL=1
python3 tests/support/check_layers.py src
cargo build --locked --bins
cargo test --locked --lib --bins --tests
bash tests/support/check_rules.sh
SRE_DEPLOY_BIN="$PWD/target/debug/sre-agent" bash tests/deploy/run.sh
