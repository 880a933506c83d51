#!/usr/bin/env bash
# The one build `make test` makes, in .build-gate: the Swift tests, the fuzz smoke and the API
# checks run on it, the performance gate counts it and the shipping checks run its larder.
# Plain `-c release` with the shipped build's cross-module optimisation (no static runtime, no
# LTO: both cost minutes of linking), and `-enable-testing`, which the tests' @testable imports
# need: the gate counts the same instructions with it as without, within 0.3 % on every path.
# One build instead of a debug build for the tests and a release build for the gate saves
# about 400 CPU-seconds of compiling. Its own scratch path, so a debug build under .build
# (`make run`, `swift test`) stays as it is.
set -euo pipefail
cd "$(dirname "$0")/../.."
"${SWIFT:-swift}" build -c release --build-tests -Xswiftc -enable-testing -Xswiftc -cross-module-optimization \
    --scratch-path .build-gate
