#!/usr/bin/env bash
# make fuzz: every fuzz target under libFuzzer with AddressSanitizer, SECONDS each, two at a
# time (one per core). Seeds come from Tests/Fuzz/corpus/TARGET; what the fuzzer adds goes
# to .build-fuzz/corpus/TARGET, crashes to .build-fuzz/crashes/. A summary of runs per target
# ends the output; any crash fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
# FUZZ_RUNS=N: each target runs N inputs instead (with no time limit), so every target gets
# the same number however fast it is.
runs="${FUZZ_RUNS:-}"
# The targets FuzzTargets.all names, unless FUZZ_TARGETS picks some.
targets=(${FUZZ_TARGETS:-$(grep -oE '^ +\("[a-z-]+", [a-zA-Z]+\),' Sources/LarderFuzz/FuzzTargets.swift | grep -oE '"[a-z-]+"' | tr -d '"')})

# SwiftPM's --sanitize=fuzzer links libFuzzer (and its main); the Swift code itself is only
# instrumented for coverage with -sanitize=fuzzer passed to swiftc as well.
echo "== building larder-fuzz with -sanitize=fuzzer,address (.build-fuzz)"
swift build --product larder-fuzz --scratch-path .build-fuzz --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -O
fuzzer="$(swift build --scratch-path .build-fuzz --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -O --show-bin-path)/larder-fuzz"
mkdir -p .build-fuzz/crashes .build-fuzz/logs
touch .build-fuzz/run-started  # crashes of this run are the files newer than this

run() {
    local target="$1"
    mkdir -p ".build-fuzz/corpus/$target"
    LARDER_FUZZ_TARGET="$target" "$fuzzer" ".build-fuzz/corpus/$target" "Tests/Fuzz/corpus/$target" \
        $(if [ -n "$runs" ]; then echo "-runs=$runs"; else echo "-max_total_time=$seconds"; fi) \
        -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=".build-fuzz/crashes/$target-" > ".build-fuzz/logs/$target.log" 2>&1
}
export -f run
export fuzzer seconds runs
status=0
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c 'run {}' || status=$?

echo "== results ($(if [ -n "$runs" ]; then echo "$runs runs"; else echo "$seconds s"; fi) per target)"
for target in "${targets[@]}"; do
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' ".build-fuzz/logs/$target.log" | grep -oE '[0-9]+$' || echo "?")
    crashes=$(find .build-fuzz/crashes -name "$target-*" -newer .build-fuzz/run-started | wc -l)
    echo "$target: $runs runs, $crashes crashes"
done
exit "$status"
