#!/usr/bin/env bash
# check_rules.sh — check and unit-test the Prometheus alert rules shipped in deploy/prometheus.
#
# Usage:  check_rules.sh [DIR]        (default: deploy/prometheus of this repository)
#
# Runs, for DIR:
#   promtool check rules  DIR/*-rules.yml        (syntax, expressions, duplicate rules)
#   promtool check config DIR/scrape.yml         (the example scrape config + its rule_files)
#   promtool test rules   DIR/*.test.yml         (one result per test group: a group that
#                                                 promtool reports as FAILED counts as failed)
# Prints one line per check and finally `rules: N passed, M failed`; exit 1 when anything
# failed, 2 when promtool is missing (run tests/support/install_deps.sh). The unit tests take
# ~20 s (8 simulated days of rule evaluations for the weekly-report alert).
set -uo pipefail

case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
dir="${1:-$here/../../deploy/prometheus}"
[ -d "$dir" ] || { echo "check_rules.sh: no such directory: $dir" >&2; exit 2; }
dir=$(cd "$dir" && pwd)
command -v promtool >/dev/null 2>&1 || {
  echo "check_rules.sh: promtool not installed (run tests/support/install_deps.sh)" >&2; exit 2; }

passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
report() { # ok|fail name
  if [ "$1" = ok ]; then passed=$((passed + 1)); echo "ok   $2"
  else failed=$((failed + 1)); echo "FAIL $2"; sed 's/^/     /' "$log" | tail -n 40; fi
}

shopt -s nullglob
rule_files=("$dir"/*-rules.yml)
test_files=("$dir"/*.test.yml)
[ "${#rule_files[@]}" -gt 0 ] || { echo "check_rules.sh: no *-rules.yml in $dir" >&2; exit 2; }

for f in "${rule_files[@]}"; do
  if promtool check rules "$f" >"$log" 2>&1; then
    report ok "promtool check rules $(basename "$f"): $(grep -o 'SUCCESS: .*' "$log" | head -n1)"
  else
    report fail "promtool check rules $(basename "$f")"
  fi
done

if [ -f "$dir/scrape.yml" ]; then
  if (cd "$dir" && promtool check config scrape.yml) >"$log" 2>&1; then
    report ok "promtool check config scrape.yml"
  else
    report fail "promtool check config scrape.yml"
  fi
fi

for f in "${test_files[@]}"; do
  (cd "$dir" && promtool test rules "$(basename "$f")") >"$log" 2>&1
  rc=$?
  # Test group names as written in the file (`  - name: "..."`), in order.
  mapfile -t groups < <(sed -n 's/^  - name: *"\{0,1\}\(.*[^"]\)"\{0,1\} *$/\1/p' "$f")
  if [ "${#groups[@]}" -eq 0 ]; then
    if [ "$rc" = 0 ]; then report ok "promtool test rules $(basename "$f")"
    else report fail "promtool test rules $(basename "$f")"; fi
    continue
  fi
  for g in "${groups[@]}"; do
    if [ "$rc" = 0 ]; then
      passed=$((passed + 1)); echo "ok   $(basename "$f"): $g"
    elif grep -qF "name: $g," "$log"; then
      failed=$((failed + 1)); echo "FAIL $(basename "$f"): $g"
      awk -v g="    name: $g," 'index($0, g) == 1 {p = 1; print; next}
                                 p && /^    name: / {p = 0}
                                 p {print}' "$log" | sed 's/^/     /' | head -n 40
    else
      passed=$((passed + 1)); echo "ok   $(basename "$f"): $g"
    fi
  done
  # promtool failed but no group was named: a load or parse error of the whole file.
  if [ "$rc" != 0 ] && ! grep -q '^    name: ' "$log"; then
    report fail "promtool test rules $(basename "$f") (file did not load)"
  fi
done

echo "rules: $passed passed, $failed failed"
[ "$failed" = 0 ]
