# Shared by the check scripts. Source it; do not run it.

# start_larder WORK COMMAND…: runs COMMAND in the background with its output in WORK/log,
# waits for its `listening on http://HOST:PORT` line, and sets LARDER_PID and LARDER_PORT.
start_larder() {
    local work=$1
    shift
    "$@" > "$work/log" 2>&1 &
    LARDER_PID=$!
    LARDER_PORT=""
    for _ in $(seq 1 100); do
        LARDER_PORT=$(grep -v 'admin listening' "$work/log" | grep -o 'listening on http://[^ "]*' | head -n 1 | sed 's/.*://' || true)
        [ -n "$LARDER_PORT" ] && return 0
        sleep 0.1
    done
    echo "larder did not start:"
    cat "$work/log"
    return 1
}
