#!/usr/bin/env bash
# tests/llm/start.sh — installs the test LLM if needed (setup.sh), starts serve.py in the
# background on a free loopback port, waits until GET /health answers, and prints on stdout
# exactly two lines (everything else goes to stderr):
#
#   SRE_TEST_LLM_URL=http://127.0.0.1:PORT/v1
#   SRE_TEST_LLM_MODEL=qwen2.5-coder-1.5b-instruct-q4_k_m
#
# so a harness can do:  vars=$(tests/llm/start.sh) && export $vars  (a failed start fails the
# assignment), and later tests/llm/stop.sh. Run it after the cargo build, never beside it (2 cores).
#
# Files in the run dir ($SRE_LLM_RUN_DIR, default target/llm-server in this checkout, so that
# two checkouts on one machine do not stop each other's server): serve.pid, serve.url,
# serve.log (serve.py's JSON line per request), llama.log (llama.cpp's own log), setup.log.
# A server this script started earlier from the same run dir is stopped first.
# Env: SRE_LLM_CACHE (default ~/.cache/sre-agent/llm), SRE_LLM_THREADS (2), SRE_LLM_CTX (8192),
#      SRE_LLM_START_TIMEOUT (seconds to wait for /health, default 300).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SRE_LLM_CACHE=${SRE_LLM_CACHE:-$HOME/.cache/sre-agent/llm}
dir=${SRE_LLM_RUN_DIR:-$here/../../target/llm-server}
threads=${SRE_LLM_THREADS:-2}
ctx=${SRE_LLM_CTX:-8192}
timeout=${SRE_LLM_START_TIMEOUT:-300}

die() { echo "llm start: ERROR: $*" >&2; exit 1; }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bash "$here/setup.sh" | tee "$dir/setup.log" >&2
py=$(sed -n 's/^python: //p' "$dir/setup.log" | tail -n 1)
model=$(sed -n 's/^model: //p' "$dir/setup.log" | tail -n 1)
[ -x "$py" ] && [ -f "$model" ] || die "setup.sh did not report a python and a model (see $dir/setup.log)"

SRE_LLM_RUN_DIR=$dir bash "$here/stop.sh" >&2

rm -f "$dir/serve.url"
: >"$dir/serve.log"
: >"$dir/llama.log"
t0=$SECONDS
nohup "$py" "$here/serve.py" "$model" --port 0 --threads "$threads" --ctx "$ctx" \
  --url-file "$dir/serve.url" --llama-log "$dir/llama.log" </dev/null >>"$dir/serve.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/serve.pid"
echo "llm start: serve.py pid $pid (threads $threads, ctx $ctx), waiting up to ${timeout}s for /health" >&2

healthy() {
  "$py" - "$1" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.exit(0 if r.status == 200 and json.load(r).get("status") == "ok" else 1)
EOF
}

deadline=$((SECONDS + timeout))
url=""
while :; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 20 "$dir/llama.log" "$dir/serve.log" >&2 || true
    rm -f "$dir/serve.pid"
    die "serve.py exited during start-up (logs: $dir/llama.log, $dir/serve.log)"
  fi
  if [ -z "$url" ] && [ -s "$dir/serve.url" ]; then url=$(head -n 1 "$dir/serve.url"); fi
  if [ -n "$url" ] && healthy "${url%/v1}/health"; then break; fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    tail -n 20 "$dir/llama.log" "$dir/serve.log" >&2 || true
    die "serve.py (pid $pid, still running) not ready after ${timeout}s; stop it with tests/llm/stop.sh"
  fi
  sleep 0.5
done

name=$(basename "$model" .gguf)
echo "llm start: ready at $url in $((SECONDS - t0)) s (pid $pid; logs $dir/serve.log, $dir/llama.log)" >&2
echo "SRE_TEST_LLM_URL=$url"
echo "SRE_TEST_LLM_MODEL=$name"
