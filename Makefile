# Larder: `make run` starts the service, `make test` runs every test.
# Both install missing prerequisites first (scripts/prerequisites.sh).

SWIFT ?= swift
PORT ?= 8080
# bash with pipefail, so a test run piped through tee still fails the recipe.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

.PHONY: run test gate release bench conformance fuzz sanitize soak build prerequisites clean python-tools

prerequisites:
	@scripts/prerequisites.sh

build: prerequisites
	$(SWIFT) build

## Builds and starts Larder on http://127.0.0.1:$(PORT) in front of the built-in upstream
## simulator (no network needed); Ctrl-C stops it gracefully.
run: build
	$(SWIFT) run larder serve --demo --port $(PORT)

# What make bench, make soak and make release build is what the Dockerfile ships: a release
# build with the Swift runtime and Foundation linked statically, cross-module optimisation and
# full LTO, in a scratch path of its own, so the debug build under .build stays as it is. The
# Dockerfile builds with the same flags (scripts/check-shipping.sh checks it).
RELEASE_FLAGS := -Xswiftc -cross-module-optimization --experimental-lto-mode=full
RELEASE := $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_FLAGS) --scratch-path .build-static
RELEASE_BIN := .build-static/release
# What `make test` builds once (scripts/gate/build.sh): its tests run on it, its gate counts it.
GATE_BIN := .build-gate/release

VENV := .tools/venv

$(VENV)/.installed: scripts/requirements-checks.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-checks.txt
	touch $@

CHECKOV_VENV := .tools/checkov-venv

$(CHECKOV_VENV)/.installed: scripts/requirements-checkov.txt
	python3 -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-checkov.txt
	touch $@

## Every test, on one release build: unit, parser, end-to-end over real sockets, the fuzz smoke, the API checks
## (openapi-spec-validator, schemathesis and REDbot against a running larder serve --demo),
## the performance gate (instructions and allocations per request path, scripts/gate) and
## the shipping checks (hadolint, compose schema, Kubernetes schemas and policy, alert rules,
## the Dockerfile's build command, the release binary run). Prints its time at the end.
# Read once, when make starts: the time `make test` prints covers its installs too.
TEST_START := $(shell date +%s)
test: prerequisites
	SWIFT=$(SWIFT) STARTED=$(TEST_START) scripts/test.sh

# The API and shipping checks' Python tools; scripts/test.sh installs them beside the build.
python-tools: $(VENV)/.installed $(CHECKOV_VENV)/.installed

## The performance gate alone (a part of `make test`): the release build, then instructions
## and heap allocations per request path under callgrind against scripts/gate's thresholds.
## `make gate GATE_ARGS=--record` writes this toolchain's thresholds file anew.
gate: prerequisites
	SWIFT=$(SWIFT) scripts/gate/build.sh
	scripts/gate/gate.py $(GATE_ARGS) $(GATE_BIN)

## The binary the Dockerfile ships, built the same way, in $(RELEASE_BIN).
release: prerequisites
	$(RELEASE) --product larder
	@echo "built $(RELEASE_BIN)/larder"

## Measurements (not part of `make test`): the shipped build, loopback only, about 50 minutes.
## Larder against nginx proxy_cache and static nginx (installs nginx and wrk when missing),
## the aggregate section (bench/results/aggregate.md), tracing's cost to a hit
## (bench/results/tracing.md), large objects (a 100 MiB hit, a streamed
## 1 GiB miss; bench/results/large.md), the trace replays (what reached the origin, against
## nginx proxy_cache and exact LRU; bench/results/replay.md), the libcurl fetch overhead and
## the memory hit cost, and last the scale section (a million stored entries, a miss storm;
## bench/results/scale.md): it deletes millions of files at its end, and on ext4 without a
## journal every file made in the minute after scans past the freed inodes. Table:
## bench/results/latest.md; the targets, each a ratio to nginx (or exact LRU) measured in the
## same run, last (bench/results/targets.md; exit 1 if one is missed).
bench: prerequisites
	@{ command -v nginx || test -x /usr/sbin/nginx; } >/dev/null && command -v wrk >/dev/null || scripts/install-packages.sh nginx wrk
	$(RELEASE) --product larder
	$(RELEASE) --product larder-bench
	python3 bench/targets.py --reset
	python3 bench/bench.py $(RELEASE_BIN)/larder
	python3 bench/redis_bench.py $(RELEASE_BIN)/larder
	python3 bench/aggregate.py $(RELEASE_BIN)/larder
	python3 bench/tracing.py $(RELEASE_BIN)/larder
	python3 bench/large.py $(RELEASE_BIN)/larder
	python3 bench/replay.py $(RELEASE_BIN)/larder
	$(RELEASE_BIN)/larder-bench upstream-overhead 1000
	$(RELEASE_BIN)/larder-bench memory-hit 1000000
	$(RELEASE_BIN)/larder-bench pieces 1000000
	python3 bench/scale.py $(RELEASE_BIN)/larder $(RELEASE_BIN)/larder-bench
	@# The judged cells, every one a ratio measured in this run (bench/results/targets.md).
	python3 bench/targets.py

## Measurement (not part of `make test`): the HTTP caching conformance suite through a
## pass-through route. CACHE_TESTS is a checkout of http-tests/cache-tests outside this repo.
conformance: prerequisites
	CACHE_TESTS="$(CACHE_TESTS)" scripts/conformance.sh

## Measurement (not part of `make test`): every fuzz target under libFuzzer with
## AddressSanitizer, FUZZ_SECONDS each (default 600), or FUZZ_RUNS inputs each when set, two at
## a time; summary at the end.
FUZZ_SECONDS ?= 600
fuzz: prerequisites
	FUZZ_RUNS=$(FUZZ_RUNS) scripts/fuzz.sh $(FUZZ_SECONDS)

## The Swift test suite under AddressSanitizer, then under ThreadSanitizer (separate build
## folders, so the normal build stays as it is). Any report of either fails the run.
sanitize: prerequisites
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	LARDER_SANITIZER=address LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan-suppressions.txt \
		timeout 30m $(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --no-parallel
	@# -DLARDER_TSAN: every lock tells ThreadSanitizer what it orders (Sources/Locking). One test
	@# at a time: run in parallel, the sanitizer's slowdown starves the timing tests' tasks.
	@# Without the OTLP exporter (Package.swift's traits): swift-otel does not compile under it.
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan -Xswiftc -DLARDER_TSAN --disable-default-traits
	LARDER_SANITIZER=thread timeout 30m $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan -Xswiftc -DLARDER_TSAN --disable-default-traits --no-parallel

## Measurement (not part of `make test`): SOAK_SECONDS (default 600) at saturation with
## mixed hits, misses and pass-through; RSS sampled every 10 s, errors and drift reported.
soak: prerequisites
	@command -v wrk >/dev/null || scripts/install-packages.sh wrk
	$(RELEASE) --product larder
	python3 scripts/soak.py $(RELEASE_BIN)/larder

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan .build-static
