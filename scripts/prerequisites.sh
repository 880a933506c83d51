#!/usr/bin/env bash
# Makes sure what building and testing Larder needs is on this machine.
# As root it installs missing Debian packages with apt-get; otherwise it names them and stops.
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
    echo "Missing: a Swift 6 toolchain (swift). Install it from https://www.swift.org/install/linux/ and put it on PATH." >&2
    exit 1
fi

# Debian packages the build needs (the libcurl client links against the OpenSSL flavour).
packages=(pkg-config libcurl4-openssl-dev curl)
# The API checks run Python tools in a virtual environment.
python3 -m venv --help >/dev/null 2>&1 || packages+=(python3 python3-venv)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing ${missing[*]} …"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "Missing Debian packages: ${missing[*]}. Install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi
