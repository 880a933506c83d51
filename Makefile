# Larder: `make run` starts the service, `make test` runs every test.
# Both install missing prerequisites first (scripts/prerequisites.sh).

SWIFT ?= swift
PORT ?= 8080

.PHONY: run test bench build prerequisites clean

prerequisites:
	@scripts/prerequisites.sh

build: prerequisites
	$(SWIFT) build

## Builds and starts Larder on http://127.0.0.1:$(PORT); Ctrl-C stops it gracefully.
run: build
	$(SWIFT) run larder serve --port $(PORT)

## Every test: unit, parser, and end-to-end over real sockets.
test: prerequisites
	$(SWIFT) build --build-tests
	timeout 20m $(SWIFT) test --skip-build

## Measurements (not part of `make test`): release build, loopback only, bounded in time.
bench: prerequisites
	$(SWIFT) build -c release --product larder-bench
	.build/release/larder-bench upstream-overhead 1000
	.build/release/larder-bench memory-hit 1000000

clean:
	rm -rf .build
