#!/usr/bin/env bash
# Install the Debian 12 packages kreplay builds with (only those missing). Needs root or sudo.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config python3 sqlite3
      nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev libcli11-dev libfmt-dev libre2-dev
      libelf-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "==KREPLAY== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
