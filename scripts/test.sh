#!/usr/bin/env bash
# `make test` after its prerequisites, then a table of what each step took:
#   one release build (scripts/gate/build.sh), while the Python tools of the API and shipping
#   checks install;
#   the Swift tests, docs/architecture.md's module table against Package.swift, the fuzz
#   smoke, the API checks, the tracing check (spans exported to a receiver on loopback) and
#   the shipping checks on that build, while
#   the performance gate counts it beside them.
# The gate's counts do not depend on what else runs, and it runs at a lower priority, so the
# tests' timings see the second core's leftovers only. What runs beside writes its own log,
# shown whole when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
started=${STARTED:-$(date +%s)}  # make passes when it started, installs included
build=(-c release --scratch-path .build-gate)  # where scripts/gate/build.sh builds
bin=.build-gate/release
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
        timeout 20m "$swift" test "${build[@]}" --skip-build 2>&1 | tee .build/swift-test.log
}

# The fuzz targets' smoke: each over its corpus, then seeded mutations (`make fuzz` runs libFuzzer).
fuzz_smoke() {
    timeout 5m "$bin/larder-fuzz" --seconds 1.5
}

checks() {
    step "module table" python3 scripts/check-module-table.py || return
    step "fuzz smoke" fuzz_smoke || return
    step "API checks" scripts/check-api.sh "$bin/larder" || return
    step "tracing" .tools/venv/bin/python scripts/check-tracing.py "$bin/larder" || return
    step "shipping" scripts/check-shipping.sh "$bin/larder"
}

# The gate's table, then its proof that one more allocation on the memory hit is refused.
gate() {
    nice -n 10 scripts/gate/gate.py "$bin" || return
    nice -n 10 scripts/gate/gate.py --prove-refusal "$bin"
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
# The Python tools install beside the build: mostly downloads, and a fresh clone's longest
# wait before it.
beside "python tools" make --no-print-directory python-tools
tools=$pid
step "release build" scripts/gate/build.sh || exit
beside "gate" gate
counting=$pid
step "swift tests" swift_tests || status=$?
joined "$tools" "python tools" || status=$?
[ "$status" = 0 ] && { checks || status=$?; }
joined "$counting" "gate" || status=$?

echo
echo "step             seconds"
while read -r line; do printf '%-16s %7s\n' "${line% *}" "${line##* }"; done < "$times"
echo "make test: $(( $(date +%s) - started )) s"
[ "$status" = 0 ] || exit "$status"
# Reached only when everything above passed: one plain closing line for any reader.
echo "tests: $(grep -aoE 'Test run with [0-9]+ tests' .build/swift-test.log | grep -oE '[0-9]+' | head -n 1) passed, 0 failed"
