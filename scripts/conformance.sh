#!/usr/bin/env bash
# make conformance CACHE_TESTS=DIR: the HTTP caching conformance suite (http-tests/cache-tests,
# the suite behind cache-tests.fyi) against Larder as a gateway cache on loopback.
# Starts the suite's origin, Larder with a route / to ORIGIN (client-refresh: honour) and a fresh cache directory, runs
# the suite's client through Larder, then prints the required and optional tests passed
# (the suite's own dependency rules) and every required test that fails. Stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

DIR=${CACHE_TESTS:-}
if [ -z "$DIR" ] || [ ! -f "$DIR/test-engine/cli.mjs" ]; then
    echo "conformance: set CACHE_TESTS to a checkout of https://github.com/http-tests/cache-tests outside this repository"
    echo "  e.g. git clone https://github.com/http-tests/cache-tests /tmp/cache-tests && make conformance CACHE_TESTS=/tmp/cache-tests"
    exit 2
fi
DIR=$(cd "$DIR" && pwd)
command -v node >/dev/null && command -v npm >/dev/null || scripts/install-packages.sh nodejs npm
# Only the four interim-* tests need undici; offer it when the registry is reachable.
if [ ! -d "$DIR/node_modules/undici" ]; then
    (cd "$DIR" && timeout 10 npm ping >/dev/null 2>&1 && timeout 120 npm install --no-save --no-audit --no-fund undici >/dev/null 2>&1) \
        || echo "conformance: undici not installed; the interim-* tests will not run"
fi

swift build --product larder
LARDER=$(swift build --show-bin-path)/larder
WORK=$(mktemp -d)
ORIGIN_PID=""
LARDER_PID=""
cleanup() {
    local status=$?
    for pid in $LARDER_PID $ORIGIN_PID; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT

ORIGIN_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The suite's `npm run server`, without npm in between, so the pid is the server's own.
(cd "$DIR" && npm_config_port="$ORIGIN_PORT" npm_config_protocol=http npm_config_pidfile="$WORK/origin.pid" \
    exec node test-engine/server/server.mjs) > "$WORK/origin.log" 2>&1 &
ORIGIN_PID=$!
for _ in $(seq 1 100); do
    grep -q Listening "$WORK/origin.log" && break
    sleep 0.1
done
grep -q Listening "$WORK/origin.log" || { echo "the suite's origin did not start:"; cat "$WORK/origin.log"; exit 1; }

# One test's origin sends a body of unknown transfer coding, which ends only when it closes
# the connection (RFC 9112 §6.3), 5 s later: the upstream timeout must outlast that.
# The suite checks RFC 9111 as written: the route honours a client's no-cache and max-age=0,
# where a route's default (client-refresh: ignore) keeps them from the origin.
printf 'routes:\n  /:\n    origin: http://127.0.0.1:%s\n    client-refresh: honour\n' "$ORIGIN_PORT" > "$WORK/larder.yaml"
start_larder "$WORK" "$LARDER" serve --port 0 --cache-dir "$WORK/cache" --upstream-timeout 8s --config "$WORK/larder.yaml"
echo "conformance: origin on $ORIGIN_PORT, larder on $LARDER_PORT (pid $LARDER_PID)"

(cd "$DIR" && timeout 900 npm run --silent cli --base="http://127.0.0.1:$LARDER_PORT") > "$WORK/results.json"
mkdir -p .build
cp "$WORK/results.json" .build/conformance-results.json
node scripts/conformance-summary.mjs "$DIR" .build/conformance-results.json
