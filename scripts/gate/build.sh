#!/usr/bin/env bash
# The release build the performance gate counts and the shipping checks run, in .build-gate:
# plain `-c release` with the shipped build's cross-module optimisation (no static runtime,
# no LTO: both cost minutes of linking). Its own scratch path, so it can build while the
# debug build under .build runs the tests (SwiftPM locks a scratch path while it works).
# Product by product: larder-fuzz imports modules @testable, which a release build refuses.
set -euo pipefail
cd "$(dirname "$0")/../.."
for product in larder larder-bench; do
    "${SWIFT:-swift}" build -c release -Xswiftc -cross-module-optimization --scratch-path .build-gate --product "$product"
done
