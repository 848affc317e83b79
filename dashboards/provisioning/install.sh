#!/usr/bin/env bash
# install.sh — install the sre-agent dashboard into a Grafana that reads file provisioning.
#
# Usage:  install.sh [--provisioning-dir /etc/grafana/provisioning]
#                    [--dashboards-dir /var/lib/grafana/dashboards/sre-agent]
#                    [--prometheus-url URL] [--no-datasource] [--owner grafana:grafana]
#
#   * copies ../sre-agent-sli.json into --dashboards-dir (the provider's path: if you change
#     it, change options.path in dashboards/sre-agent.yml too) and dashboards/sre-agent.yml
#     into PROVISIONING/dashboards/;
#   * writes PROVISIONING/datasources/prometheus.yml with the URL resolved here, because
#     Grafana's own ${VAR} expansion has no default: --prometheus-url, else $PROMETHEUS_URL,
#     else http://localhost:9090. --no-datasource skips it (use your existing Prometheus
#     datasource: the dashboard's `datasource` variable lets you pick any);
#   * chowns what it wrote to --owner when that user exists (default grafana:grafana).
# Idempotent. Grafana picks up the dashboard within 30 s; a new datasource needs a Grafana
# restart (or POST /api/admin/provisioning/datasources/reload as an admin).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prov=/etc/grafana/provisioning
dash_dir=/var/lib/grafana/dashboards/sre-agent
url="${PROMETHEUS_URL:-http://localhost:9090}"
with_ds=1 owner=grafana:grafana
while [ $# -gt 0 ]; do
  case "$1" in
    --provisioning-dir) prov="${2:?}"; shift 2 ;;
    --dashboards-dir) dash_dir="${2:?}"; shift 2 ;;
    --prometheus-url) url="${2:?}"; shift 2 ;;
    --no-datasource) with_ds=0; shift ;;
    --owner) owner="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$url" in
  http://*|https://*) ;;
  *) echo "install.sh: Prometheus URL must start with http:// or https://: $url" >&2; exit 2 ;;
esac

install -d "$dash_dir" "$prov/dashboards"
install -m 0644 "$here/../sre-agent-sli.json" "$dash_dir/sre-agent-sli.json"
written=("$dash_dir/sre-agent-sli.json" "$prov/dashboards/sre-agent.yml")
if [ "$dash_dir" = /var/lib/grafana/dashboards/sre-agent ]; then
  install -m 0644 "$here/dashboards/sre-agent.yml" "$prov/dashboards/sre-agent.yml"
else
  sed "s|path: /var/lib/grafana/dashboards/sre-agent|path: $dash_dir|" \
    "$here/dashboards/sre-agent.yml" >"$prov/dashboards/sre-agent.yml"
  chmod 0644 "$prov/dashboards/sre-agent.yml"
fi
if [ "$with_ds" = 1 ]; then
  install -d "$prov/datasources"
  # '|' cannot occur in a URL we accept unencoded; escape '&' for sed.
  esc=$(printf '%s' "$url" | sed 's/[&|\\]/\\&/g')
  sed "s|\${PROMETHEUS_URL}|$esc|" "$here/datasources/prometheus.yml" \
    >"$prov/datasources/prometheus.yml"
  chmod 0644 "$prov/datasources/prometheus.yml"
  written+=("$prov/datasources/prometheus.yml")
fi
if id -u "${owner%%:*}" >/dev/null 2>&1; then
  chown "$owner" "${written[@]}" 2>/dev/null || true
fi
printf 'install.sh: wrote %s\n' "${written[@]}"
[ "$with_ds" = 0 ] || echo "install.sh: Prometheus datasource url: $url"
