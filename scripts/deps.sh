#!/usr/bin/env bash
# Install the Debian 12 packages kreplay builds with (only those missing). Needs root or sudo.
# Then, without failing the build when they cannot be had, the packages some tests use:
# chromium (the HTML report opened in a headless browser) and python3-venv (the Python package
# tested with pandas from PyPI). Those tests skip when their package is missing.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config python3 sqlite3
      nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev libcli11-dev libfmt-dev libre2-dev
      libelf-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev)
TEST_PKGS=(chromium python3-venv)
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
missing_of() {
  local p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${PKGS[@]}")
updated=0
if ((${#missing[@]})); then
  echo "==KREPLAY== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
mapfile -t missing < <(missing_of "${TEST_PKGS[@]}")
if ((${#missing[@]})); then
  echo "==KREPLAY== installing for tests: ${missing[*]}"
  if ! { { ((updated)) || $SUDO apt-get update -qq; } &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
           "${missing[@]}" >/dev/null; }; then
    echo "==KREPLAY== warning: could not install ${missing[*]}; the tests that need them skip"
  fi
fi
