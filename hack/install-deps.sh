#!/usr/bin/env bash
# Installs the Debian packages the C++ build and the scripts need. Idempotent and quiet when all are present.
# Usage: hack/install-deps.sh [fuzz]   (fuzz: also clang and libFuzzer's runtime, for hack/fuzz.sh)
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config
      libcli11-dev libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
      libsimdjson-dev libasio-dev libssl-dev libgtest-dev libgmock-dev openssl curl python3 procps iproute2)
[ "${1:-}" = fuzz ] && PKGS+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v go >/dev/null || { echo "!!! go is not on PATH; the test control plane is built with Go" >&2; exit 1; }
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "+++ installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
