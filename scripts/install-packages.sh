#!/usr/bin/env bash
# Installs the named Debian packages when root; otherwise says exactly what to install.
set -euo pipefail
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
else
    echo "Missing: $*. Install them with: sudo apt-get install $*" >&2
    exit 1
fi
