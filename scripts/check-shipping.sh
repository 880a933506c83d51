#!/usr/bin/env bash
# Shipping checks that need no Docker engine: hadolint on the Dockerfile, the compose file
# against the Compose specification, and the Dockerfile's exact release build command,
# whose binary must start, serve /livez, pass `larder healthcheck` (and fail it against a
# closed port), and exit 0 on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/venv

echo "== hadolint (failure threshold: warning)"
"$venv/bin/hadolint" --failure-threshold warning Dockerfile
echo "== compose file against the Compose specification"
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml

echo "== swift build -c release --static-swift-stdlib (the Dockerfile's command)"
swift build -c release --static-swift-stdlib --product larder
larder="$(swift build -c release --show-bin-path)/larder"
if ldd "$larder" | grep -q libswiftCore; then
    echo "the release binary links the Swift runtime dynamically"; exit 1
fi

work=$(mktemp -d)
"$larder" serve --port 0 --cache-dir "$work/cache" > "$work/log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=""
for _ in $(seq 1 100); do
    port=$(grep -o 'listening on http://[^ ]*' "$work/log" | head -n 1 | sed 's/.*://' || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "release binary did not start:"; cat "$work/log"; exit 1; }
curl -fsS "http://127.0.0.1:$port/livez" > /dev/null
"$larder" healthcheck --url "http://127.0.0.1:$port/readyz"
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
if "$larder" healthcheck --url "http://127.0.0.1:$closed/readyz"; then
    echo "healthcheck passed against a closed port"; exit 1
fi
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" = 0 ] || { echo "SIGTERM exit status $status"; cat "$work/log"; exit 1; }
echo "release binary: serves /livez, healthcheck 0 (live) and 1 (closed port), SIGTERM exit 0"
