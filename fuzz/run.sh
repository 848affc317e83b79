#!/usr/bin/env bash
# Builds the fuzz targets (cargo fuzz, libFuzzer) and runs each one for a bounded time,
# starting from its seeds in fuzz/seeds/<target>/ (read only; what a run finds goes to a
# temporary corpus). Prints per target the executions, their rate, the coverage reached
# and the corpus grown; fails on the first crash, timeout or memory blow-up, naming the
# reproducer libFuzzer wrote under fuzz/artifacts/<target>/. docs/fuzzing.md has more.
#
# Usage: fuzz/run.sh [TARGET...]   (default: every target)
#   FUZZ_SECONDS     seconds per target (default 15)
#   FUZZ_RELEASE=1   an optimized build (slow to build, ~10x the executions a second): for
#                    long runs; the default is a debug build, quick to build, for CI's
#                    bounded smoke run
#   FUZZ_TARGET_DIR  the build's target directory (default ~/.cache/sre-agent/fuzz-target,
#                    outside the clone like the other caches of the tests, so a second run
#                    on the same machine only relinks)
#
# cargo fuzz passes nightly-only flags (-Z…) to rustc; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them, so CI needs no nightly. The AddressSanitizer is off
# (`--sanitizer none`): the targets are safe Rust, what they hunt is panics (a slice at a
# wrong offset, an overflow: debug assertions and overflow checks are on), hangs and
# unbounded memory, and without ASan the build is quicker and each execution faster.
set -euo pipefail
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
seconds=${FUZZ_SECONDS:-15}
target_dir=${FUZZ_TARGET_DIR:-$HOME/.cache/sre-agent/fuzz-target}
if [ "${FUZZ_RELEASE:-0}" = 1 ]; then
  # 16 codegen units: cargo fuzz's default of 1 would make the daemon's crate the slow part.
  flags=(--sanitizer none --codegen-units 16 --target-dir "$target_dir")
else
  flags=(--sanitizer none --dev --target-dir "$target_dir")
fi

if [ "$#" -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo fuzz list); fi

start=$(date +%s)
if [ "${#targets[@]}" -eq 1 ]; then
  cargo fuzz build "${flags[@]}" "${targets[0]}"
else
  cargo fuzz build "${flags[@]}"
fi
echo "fuzz: built ${#targets[@]} targets in $(( $(date +%s) - start )) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total=0
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  log="$work/$t.log"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: a blow-up is a finding.
  if ! cargo fuzz run "${flags[@]}" "$t" "$work/$t" "seeds/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t FAILED (reproducer under fuzz/artifacts/$t/; see docs/fuzzing.md)" >&2
    exit 1
  fi
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
  execs=$(stat number_of_executed_units)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
  printf 'fuzz: %-22s %9s execs in %s s (%s/s), cov %s, %s new inputs, peak %s MB\n' \
    "$t" "$execs" "$seconds" "$(stat average_exec_per_sec)" "${cov:-?}" \
    "$(stat new_units_added)" "$(stat peak_rss_mb)"
  total=$(( total + ${execs:-0} ))
done
echo "fuzz: ${#targets[@]} targets clean, $total executions, $(( $(date +%s) - start )) s in all"
