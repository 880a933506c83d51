#!/usr/bin/env bash
# `make test` after its prerequisites, then a table of what each step took:
#   the debug build, while the Python tools of the API and shipping checks install;
#   the Swift tests, the fuzz smoke and the API checks, while the release build runs beside them;
#   the performance gate on that build, while the shipping checks run its larder.
# Side by side they share the 2 cores: the tests mostly wait on sockets, and a release build's
# whole-module compiles leave a core idle much of the time, so together they end sooner than
# one after the other. What runs beside writes its own log, shown whole when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
started=${STARTED:-$(date +%s)}  # make passes when it started, installs included
times=$(mktemp)
logs=.build/test-logs
trap 'rm -f "$times"' EXIT

# Runs a named step, appending its seconds to the table. Every failure is returned by hand:
# bash ignores `set -e` in a function run as `checks || …`.
step() {
    local name=$1 began status=0
    shift
    began=$(date +%s)
    "$@" || status=$?
    echo "$name $(( $(date +%s) - began ))" >> "$times"
    [ "$status" = 0 ] || echo "make test: $name failed (exit $status)"
    return "$status"
}

# The tests' temporary folders (caches, logs, redis and TLS files: about 125 MB a run) go to
# one ignored folder, emptied here, rather than piling up in /tmp run after run.
swift_tests() {
    rm -rf .build/test-tmp 2>/dev/null || true
    mkdir -p .build/test-tmp || return
    # At most 8 tests at a time: started all at once, 674 tests share 2 cores and each one's
    # timeouts run while it waits its turn (a CI run failed 4 timing tests so; 8 passed).
    TMPDIR=$PWD/.build/test-tmp SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=8 \
        timeout 20m "$swift" test --skip-build 2>&1 | tee .build/swift-test.log
}

# The fuzz targets' smoke: each over its corpus, then seeded mutations (`make fuzz` runs libFuzzer).
fuzz_smoke() {
    local bin
    bin=$("$swift" build --show-bin-path) || return
    timeout 5m "$bin/larder-fuzz" --seconds 1.5
}

checks() {
    step "fuzz smoke" fuzz_smoke || return
    step "API checks" scripts/check-api.sh
}

# The gate's table, then its proof that one more allocation on the memory hit is refused.
gate() {
    scripts/gate/gate.py .build-gate/release || return
    scripts/gate/gate.py --prove-refusal .build-gate/release
}

# Runs a named step in the background, its output to its own log; sets `pid`.
beside() {
    local name=$1
    shift
    step "$name" "$@" > "$logs/$name.log" 2>&1 &
    pid=$!
}

# Waits for what `beside` started and shows its log; its status is returned.
joined() {
    local status=0
    wait "$1" || status=$?
    cat "$logs/$2.log"
    return "$status"
}

mkdir -p "$logs"
status=0
# The Python tools install beside the debug build: mostly downloads, and a fresh clone's
# longest wait before it.
beside "python tools" make --no-print-directory python-tools
tools=$pid
step "debug build" "$swift" build --build-tests || exit
beside "release build" scripts/gate/build.sh
release=$pid
step "swift tests" swift_tests || status=$?
joined "$tools" "python tools" || status=$?
[ "$status" = 0 ] && { checks || status=$?; }
joined "$release" "release build" || status=$?
if [ "$status" = 0 ]; then
    beside "gate" gate
    counting=$pid
    step "shipping" scripts/check-shipping.sh .build-gate/release/larder || status=$?
    joined "$counting" "gate" || status=$?
fi

echo
echo "step             seconds"
while read -r line; do printf '%-16s %7s\n' "${line% *}" "${line##* }"; done < "$times"
echo "make test: $(( $(date +%s) - started )) s"
[ "$status" = 0 ] || exit "$status"
# Reached only when everything above passed: one plain closing line for any reader.
echo "tests: $(grep -aoE 'Test run with [0-9]+ tests' .build/swift-test.log | grep -oE '[0-9]+' | head -n 1) passed, 0 failed"
