#!/usr/bin/env bash
# dashboard_smoke.sh — run check_dashboard.py against a real Prometheus that has scraped a
# static sre-agent exposition for a while (no daemon needed).
#
# Usage:  dashboard_smoke.sh [--exposition FILE | --target HOST:PORT] [--dashboard FILE]
#                            [--scrape-interval 1s] [--settle 30]
#
#   --exposition  text exposition served as the daemon's /metrics (default:
#                 fixtures/fresh_daemon.prom next to this script: what a freshly started
#                 daemon exposes — pre-initialised zeros, no 5xx series,
#                 no report sent yet; the worst case for "every panel returns data")
#   --target      scrape a running sre-agent (e.g. 127.0.0.1:8787, /metrics without a token)
#                 instead of serving a file; its /metrics output is the --metrics-file
#   --dashboard   default: dashboards/sre-agent-sli.json of this repository
#   --settle      seconds of scraping after the first sample before checking (default 30)
#
# Serves FILE as http://127.0.0.1:PORT/metrics with `python3 -m http.server` (or uses --target), starts
# Prometheus (start_prometheus.sh, job "sre-agent") scraping it, waits for the first sample
# plus --settle seconds, runs check_dashboard.py, stops everything it started (stop.sh) and
# exits with check_dashboard.py's status. Needs install_deps.sh (prometheus) and python3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
exposition="$here/fixtures/fresh_daemon.prom"
dashboard="$repo/dashboards/sre-agent-sli.json"
scrape_interval="1s" settle=30 target=""
while [ $# -gt 0 ]; do
  case "$1" in
    --exposition) exposition="${2:?}"; shift 2 ;;
    --target) target="${2:?}"; shift 2 ;;
    --dashboard) dashboard="${2:?}"; shift 2 ;;
    --scrape-interval) scrape_interval="${2:?}"; shift 2 ;;
    --settle) settle="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "dashboard_smoke.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$exposition" ] || { echo "dashboard_smoke.sh: no such file: $exposition" >&2; exit 2; }
[ -f "$dashboard" ] || { echo "dashboard_smoke.sh: no such file: $dashboard" >&2; exit 2; }

work=$(mktemp -d)
cleanup() { "$here/stop.sh" "$work/www" "$work/prom" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$work/www"
live=1
if [ -z "$target" ]; then
  live=0
  cp "$exposition" "$work/www/metrics"
  http_port=$(free_port)
  python3 -m http.server "$http_port" --bind 127.0.0.1 --directory "$work/www" \
    >"$work/http.log" 2>&1 &
  echo $! >"$work/www/http.pid"
  target="127.0.0.1:$http_port"
fi

prom_port=$(free_port)
prom=$("$here/start_prometheus.sh" --port "$prom_port" --data "$work/prom" --job sre-agent \
  --scrape "$target" --scrape-interval "$scrape_interval")

deadline=$(( $(date +%s) + 30 ))
until curl -fsS "$prom/api/v1/query" --data-urlencode 'query=sre_agent_build_info' \
      | grep -q '"result":\[{'; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "dashboard_smoke.sh: no sample scraped from $target within 30 s" >&2
    exit 1
  fi
  sleep 0.5
done
echo "dashboard_smoke.sh: first sample scraped; letting Prometheus scrape for ${settle}s" >&2
sleep "$settle"

if [ "$live" = 1 ]; then
  curl -fsS "http://$target/metrics" -o "$work/www/metrics"   # the live daemon's families
  exposition="$work/www/metrics"
fi
"$here/check_dashboard.py" --dashboard "$dashboard" --prometheus "$prom" \
  --metrics-file "$exposition"
