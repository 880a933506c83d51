#!/usr/bin/env bash
# Shipping checks that need no Docker engine: hadolint on the Dockerfile, the compose file
# against the Compose specification, every kustomization rendered by `kubectl kustomize` and
# its output against the Kubernetes schemas and checkov's policies, the alert rules with
# promtool (each with a `promtool test rules` case), the Dockerfile's release build command
# (make release's), and a release binary, which must start with the one event loop asked
# for, serve /livez, pass `larder healthcheck` (and fail it against a closed port), and exit 0
# on SIGTERM. Last, the deploy files are run: every pod and compose service from its
# effective command line, with that binary (scripts/run-deploy-files.py).
#
# usage: scripts/check-shipping.sh [LARDER]  (a release build of larder; default .build-gate/release/larder, scripts/gate/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/venv
larder=$(realpath "${1:-.build-gate/release/larder}")

echo "== hadolint (failure threshold: warning)"
"$venv/bin/hadolint" --failure-threshold warning Dockerfile
echo "== compose file against the Compose specification"
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml docker-compose.replicas.yml
rendered=$(mktemp -d)
echo "== every kustomization under deploy/kubernetes rendered, against the Kubernetes schemas (strict), then checkov's policies"
for kustomization in $(find deploy/kubernetes -name kustomization.yaml | sort); do
    folder=$(dirname "$kustomization")
    out="$rendered/$(echo "$folder" | tr / _).yaml"
    "$venv/bin/kubectl" kustomize "$folder" > "$out"
    echo "$folder: $(grep -c '^kind:' "$out") resources"
    "$venv/bin/kubernetes-validate" --strict --quiet "$out"
done
.tools/checkov-venv/bin/checkov -d "$rendered" --framework kubernetes --compact --quiet --skip-download
rm -rf "$rendered"
echo "== deploy/prometheus alert rules, and a promtool test case for each alert"
promtool check rules deploy/prometheus/larder-alerts.yaml
promtool test rules deploy/prometheus/larder-alerts.test.yaml

echo "== the Dockerfile's build command: make release's (static runtime, make bench's flags)"
# The static, LTO build itself is make release's and the image's (minutes of linking): here the
# command is read, and the binary run below is `make test`'s plain release build.
flags=$(sed -n 's/^RELEASE_FLAGS := //p' Makefile)
grep -qF -- "swift build -c release --static-swift-stdlib $flags --product larder" Dockerfile \
    || { echo "the Dockerfile does not build with make release's flags (--static-swift-stdlib $flags)"; exit 1; }
[ -x "$larder" ] || { echo "no release binary at $larder (make test builds it)"; exit 1; }

# glibc ignores a tunable it does not know, or a value out of its range, without a word: the
# image's GLIBC_TUNABLES is read back from the loader the release binary uses.
tunables=$(sed -n 's/^ENV GLIBC_TUNABLES=//p' Dockerfile)
loader=$(ldd "$larder" | awk '/ld-linux/ { print $1 }')
listed=$(GLIBC_TUNABLES="$tunables" "$loader" --list-tunables)
IFS=: read -ra settings <<< "$tunables"
for setting in "${settings[@]}"; do
    name=${setting%%=*}
    expected=$(printf '0x%x' "${setting#*=}")
    grep -q "^$name: $expected " <<< "$listed" || { echo "glibc does not take $setting: $(grep "^$name:" <<< "$listed")"; exit 1; }
done
echo "the image's GLIBC_TUNABLES ($tunables): each taken by glibc"

work=$(mktemp -d)
trap 'kill "${LARDER_PID:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
start_larder "$work" "$larder" serve --port 0 --cache-dir "$work/cache" --event-loops 1
port=$LARDER_PORT
curl -fsS "http://127.0.0.1:$port/livez" > /dev/null
# --event-loops 1: one loop thread serves the port (each is named larder-loop-N).
loops=$(cat /proc/"$LARDER_PID"/task/*/comm | grep -c '^larder-loop-' || true)
[ "$loops" = 1 ] || { echo "--event-loops 1 started $loops loop threads"; exit 1; }
"$larder" healthcheck --url "http://127.0.0.1:$port/readyz"
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
if "$larder" healthcheck --url "http://127.0.0.1:$closed/readyz"; then
    echo "healthcheck passed against a closed port"; exit 1
fi
kill -TERM "$LARDER_PID"
status=0
wait "$LARDER_PID" || status=$?
[ "$status" = 0 ] || { echo "SIGTERM exit status $status"; cat "$work/log"; exit 1; }
echo "release binary: serves /livez on the one loop asked for, healthcheck 0 (live) and 1 (closed port), SIGTERM exit 0"

echo "== the deploy files run: each pod and compose service from its effective command line"
"$venv/bin/python" scripts/run-deploy-files.py "$larder" "$venv/bin/kubectl"
