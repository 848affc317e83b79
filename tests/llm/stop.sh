#!/usr/bin/env bash
# tests/llm/stop.sh — stops the serve.py that start.sh started (the pid in the run dir's
# serve.pid, and only that process, after checking that it is serve.py): SIGTERM, up to
# STOP_TIMEOUT seconds (default 10), then SIGKILL. Removes serve.pid and serve.url.
# Idempotent: nothing running is fine. Env: SRE_LLM_RUN_DIR as for start.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${SRE_LLM_RUN_DIR:-$here/../../target/llm-server}
timeout=${STOP_TIMEOUT:-10}
pidfile=$dir/serve.pid

# Alive = exists and is not a zombie (a zombie still answers kill -0).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

[ -f "$pidfile" ] || { rm -f "$dir/serve.url"; exit 0; }
pid=$(tr -dc '0-9' <"$pidfile")
if [ -n "$pid" ] && alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'serve\.py'; then
  kill -TERM "$pid" 2>/dev/null || true
  waited=0
  while alive "$pid" && [ "$waited" -lt $((timeout * 10)) ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if alive "$pid"; then
    echo "llm stop: serve.py (pid $pid) ignored SIGTERM for ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  if alive "$pid"; then
    echo "llm stop: serve.py (pid $pid) is still running" >&2
    exit 1
  fi
  echo "llm stop: stopped serve.py (pid $pid)"
fi
rm -f "$pidfile" "$dir/serve.url"
