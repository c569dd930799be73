#!/usr/bin/env bash
# Installs what kbx needs on a Debian/Ubuntu machine, idempotently:
#   - build dependencies from the distribution (as root, or through sudo);
#   - a Python with torch, triton and numpy: an existing one that imports torch (KBX_PYTHON, or
#     python3 on PATH), else a virtual environment at $KBX_VENV (default /opt/kbx/venv as root,
#     ~/.cache/kbx/venv otherwise) filled from PyPI.
# Prints the chosen interpreter's path as its last line. With --packages-only it stops after the
# distribution's packages (python3-venv among them), so that the Python can be set up beside
# other work without a second apt-get (CI: .ci/run).
set -euo pipefail

packages=(cmake g++ make pkg-config libsqlite3-dev libssl-dev nlohmann-json3-dev libcli11-dev
          libcurl4-openssl-dev libtomlplusplus-dev libfmt-dev libgtest-dev libeigen3-dev clang-format
          ninja-build python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--packages-only" ]; then
  exit 0
fi

has_torch() { "$1" -c 'import torch, triton, numpy' >/dev/null 2>&1; }

if [ -n "${KBX_PYTHON:-}" ] && has_torch "$KBX_PYTHON"; then
  echo "$KBX_PYTHON"
  exit 0
fi
if [ "${KBX_SYSTEM_PYTHON:-1}" = 1 ] && command -v python3 >/dev/null && has_torch python3; then
  command -v python3
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then default_venv=/opt/kbx/venv; else default_venv="$HOME/.cache/kbx/venv"; fi
venv="${KBX_VENV:-$default_venv}"
if ! has_torch "$venv/bin/python"; then
  echo "setup: creating $venv with torch, triton, numpy, pytest and pytest-xdist from PyPI (a few minutes)" >&2
  python3 -m venv "$venv" 2>/dev/null || {
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  }
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q -r "$(dirname "$0")/../python/requirements.txt" >&2
fi
"$venv/bin/python" -c 'import pytest, xdist' 2>/dev/null || "$venv/bin/pip" install -q pytest pytest-xdist >&2
echo "$venv/bin/python"
