#!/usr/bin/env bash
# Makes sure what building and testing Larder needs is on this machine.
# As root it installs missing Debian packages with apt-get; otherwise it names them and stops.
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
    echo "Missing: a Swift 6 toolchain (swift). Install it from https://www.swift.org/install/linux/ and put it on PATH." >&2
    exit 1
fi

# Debian packages the build needs (the libcurl client links against the OpenSSL flavour);
# openssl makes the CA and certificate of the https upstream tests.
# hiredis is the Redis tier's client; redis-server runs for real in the shared-tier tests.
# iproute2 and util-linux give the network and mount namespaces the deploy files run in.
# valgrind (callgrind) counts the performance gate's instructions and allocations.
packages=(pkg-config libcurl4-openssl-dev libhiredis-dev redis-server curl openssl iproute2 util-linux valgrind)
# promtool (Debian's prometheus package) checks the alert rules.
command -v promtool >/dev/null 2>&1 || packages+=(prometheus)
# The API checks run Python tools in a virtual environment.
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || packages+=(python3 python3-venv)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "Installing ${missing[*]} …"
    "$(dirname "$0")/install-packages.sh" "${missing[@]}"
fi
