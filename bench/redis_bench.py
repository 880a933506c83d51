#!/usr/bin/env python3
"""make bench, the shared tier: what Redis adds, on loopback, one request at a time.

- Redis hit: replica A fetches 300 keys (so Redis holds them); replica B, with empty tiers,
  then asks for each once (a memory and disk miss served from Redis), then again (memory
  hits); B restarted without Redis asks once more (disk hits). p50 of each, over one
  keep-alive connection.
- The lock on a miss: 300 cold keys through a replica with Redis and through one without,
  each paired with the same request straight to the simulator, so the difference of the two
  overheads is what the lookup, the lock and the write to Redis add to a miss.
Every process started is stopped. Table: bench/results/redis.md.
"""
import http.client
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import environment_for, simulator  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARDER = sys.argv[1]
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
WORK = tempfile.mkdtemp(prefix="larder-redis-bench-")
KEYS = ["/weather?lat=%d.%02d&lon=21.5" % (30 + i // 100, i % 100) for i in range(300)]
COLD = ["/weather?lat=%d.%02d&lon=22.5" % (40 + i // 100, i % 100) for i in range(300)]
processes = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, name):
    proc = subprocess.Popen(args, stdout=open(f"{WORK}/{name}.log", "w"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=environment_for(args))
    processes.append(proc)
    return proc


def wait_for(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def larder(name, sim_port, redis_port=None, cache=None):
    port = free_port()
    args = [LARDER, "serve", "--port", str(port), "--cache-dir", cache or f"{WORK}/{name}", "--log-level", "warning",
            "--weather-url", f"http://127.0.0.1:{sim_port}/v1/forecast"]
    if redis_port:
        args += ["--redis-url", f"redis://127.0.0.1:{redis_port}"]
    proc = start(args, name)
    wait_for(port)
    time.sleep(0.3)  # the subscription settles
    return proc, port


def timings(port, paths, expect=None):
    """Milliseconds per request over one keep-alive connection; checks each Cache-Status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    times = []
    for path in paths:
        started = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        times.append((time.perf_counter() - started) * 1000)
        status = response.getheader("Cache-Status", "")
        if expect and expect not in status:
            raise SystemExit(f"{path}: expected {expect}, got {status}")
    connection.close()
    return times


def direct(sim_port, path):
    query = path.split("?", 1)[1].replace("lat=", "latitude=").replace("lon=", "longitude=")
    return f"/v1/forecast?{query}&current=temperature_2m,weather_code"


def miss_overheads(port, sim_port, paths):
    through = timings(port, paths, expect="fwd=miss")
    straight = timings(sim_port, [direct(sim_port, p) for p in paths])
    return [a - b for a, b in zip(through, straight)]


def p50(values):
    return statistics.median(values)


def main():
    try:
        redis_port, sim_port = free_port(), free_port()
        start([REDIS, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", WORK], "redis")
        start([simulator(), "upstream-sim", "--port", str(sim_port), "--latency", "5ms", "--max-age", "3600"], "sim")
        wait_for(redis_port)
        wait_for(sim_port)
        a, a_port = larder("a", sim_port, redis_port)
        b, b_port = larder("b", sim_port, redis_port)
        alone, alone_port = larder("alone", sim_port)

        with_redis = miss_overheads(a_port, sim_port, KEYS)
        without = miss_overheads(alone_port, sim_port, COLD)
        from_redis = timings(b_port, KEYS, expect="detail=redis")
        from_memory = timings(b_port, KEYS, expect="detail=memory")
        time.sleep(1)  # B's disk writes land
        stop(b)
        b2, b2_port = larder("b-again", sim_port, cache=f"{WORK}/b")
        from_disk = timings(b2_port, KEYS, expect="detail=disk")

        lines = [
            "# The shared tier (Redis on loopback), one request at a time",
            "",
            f"300 keys each, p50 over one keep-alive connection; simulator latency 5 ms. {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
            "",
            "| path | p50 ms | p99 ms |",
            "| --- | ---: | ---: |",
        ]
        for name, values in [("memory hit", from_memory), ("disk hit", from_disk), ("Redis hit (memory and disk missed)", from_redis)]:
            ordered = sorted(values)
            lines.append(f"| {name} | {p50(values):.3f} | {ordered[int(len(ordered) * 0.99) - 1]:.3f} |")
        lines += [
            "",
            f"Redis hit over memory hit: {p50(from_redis) - p50(from_memory):+.3f} ms p50.",
            f"Miss overhead over the raw simulator: {p50(with_redis):.3f} ms p50 with Redis (lookup, then lock and re-read in one round trip; the write and the release follow the answer), "
            f"{p50(without):.3f} ms without: the lock and its round trips add {p50(with_redis) - p50(without):+.3f} ms.",
        ]
        text = "\n".join(lines) + "\n"
        print(text)
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        open(os.path.join(ROOT, "bench", "results", "redis.md"), "w").write(text)
        for proc in (a, b2, alone):
            stop(proc)
    finally:
        for proc in processes:
            stop(proc)
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
