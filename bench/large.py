#!/usr/bin/env python3
"""make bench, large-object section: Larder and nginx proxy_cache side by side in one run, in
front of one static nginx origin serving a 100 MiB and a 1 GiB file (fresh for an hour).

- The 100 MiB object from cache, to 1 client and to 8 at once (curl, to /dev/null, each
  asking FETCHES (5) times over one connection): MB/s,
  the median of BENCH_LARGE_ROUNDS (5) interleaved rounds (single rounds swing by a third
  on 2 shared cores, so the best of a few said more about luck than about the server),
  and each server's peak RSS.
- A 1 GiB miss (a query no round asked before, so both caches miss): time to first byte
  against the origin's own, measured the same way straight after (the median of the
  rounds' differences), the whole transfer's time, and the peak RSS while it streams.
- Each cell begins once the disk has written what the cells before it left (`sync`).

Larder runs as shipped in compose (--memory-limit 64MiB, --disk-limit 1GiB, two event loops,
logs at warning to keep the terminal quiet); its pass-through route is `/`. nginx uses
proxy_cache with its defaults (proxy_buffering on, temporary files up to 1 GiB), two
workers. RSS is sampled every 50 ms over the process and its children. Loopback only; every
process is stopped by its own pid; the files and caches are deleted at the end.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import NGINX, ROOT, free_port, publish, rss_mib, start, stop_all, wait_for  # noqa: E402
import targets  # noqa: E402

LARDER = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_LARGE_ROUNDS", "5"))
FETCHES = 5
WORK = os.path.join(ROOT, ".build", "bench-large")
MIB = 1 << 20

NGINX_CONF = """user root root;
worker_processes 2;
daemon off;
pid {work}/{mode}.pid;
error_log {work}/{mode}-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {work}/{mode}-body;
    proxy_temp_path {work}/{mode}-proxy;
    fastcgi_temp_path {work}/{mode}-fastcgi;
    uwsgi_temp_path {work}/{mode}-uwsgi;
    scgi_temp_path {work}/{mode}-scgi;
    proxy_cache_path {work}/{mode}-cache levels=1:2 keys_zone=large:16m max_size=4g inactive=2h use_temp_path=off;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            {location}
        }}
    }}
}}
"""
ORIGIN_LOCATION = 'root {work}/origin;\n            add_header Cache-Control "max-age=3600";'
PROXY_LOCATION = ("proxy_pass http://127.0.0.1:{origin_port};\n            proxy_http_version 1.1;\n"
                  "            proxy_cache large;\n            proxy_cache_lock on;")


def nginx(mode, port, location):
    conf = os.path.join(WORK, f"nginx-{mode}.conf")
    open(conf, "w").write(NGINX_CONF.format(work=WORK, mode=mode, port=port, location=location))
    proc = start([NGINX, "-c", conf, "-p", WORK], os.path.join(WORK, f"nginx-{mode}.log"))
    wait_for(port, "/ready-probe")
    return proc


class PeakRSS:
    """Samples the RSS of a process tree every 50 ms until stopped; `peak` is the highest."""

    def __init__(self, pid):
        self.pid, self.peak, self.running = pid, rss_mib(pid), True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.05)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.peak


def curl(port, path, *extra):
    """One GET to /dev/null: (bytes, seconds to the first byte, seconds in all, status)."""
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{size_download} %{time_starttransfer} %{time_total} %{http_code}",
                          *extra, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, timeout=300).stdout.split()
    return int(out[0]), float(out[1]), float(out[2]), int(out[3])


def cache_status(port, path):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("Cache-Status") or response.headers.get("X-Cache-Status") or ""


def settled():
    """Waits until the disk has written what earlier cells left dirty (a 1 GiB miss leaves
    gigabytes: the origin's file read, each cache's copy), so that a cell measures its server
    rather than the writeback of the cell before, which swung both servers' first bytes
    from under 1 ms to 2-4 ms."""
    os.sync()


def from_cache(name, proc, port, clients):
    """The 100 MiB object to `clients` curls at once, each asking for it FETCHES times over one
    connection: aggregate MB/s and the peak RSS. One fetch takes about 40 ms here, less than a
    curl's own start-up takes to vary, so a cell of one fetch per client timed curl as much as
    the server."""
    settled()
    sampler = PeakRSS(proc.pid)
    began = time.perf_counter()
    fetches = sum((["-o", "/dev/null", f"http://127.0.0.1:{port}/big-100m"] for _ in range(FETCHES)), [])
    procs = [subprocess.Popen(["curl", "-s", "-w", "%{size_download} %{http_code}\\n"] + fetches, stdout=subprocess.PIPE, text=True)
             for _ in range(clients)]
    results = [line.split() for p in procs for line in p.communicate(timeout=300)[0].splitlines()]
    seconds = time.perf_counter() - began
    peak = sampler.stop()
    if len(results) != clients * FETCHES or any(r != [str(100 * MIB), "200"] for r in results):
        raise SystemExit(f"{name}: the 100 MiB object did not arrive whole: {results}")
    return clients * FETCHES * 100 * MIB / seconds / 1e6, peak


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "origin"))
    rows, misses = {}, {}
    try:
        for name, size in (("big-100m", 100 * MIB), ("big-1g", 1024 * MIB)):
            subprocess.run(["head", "-c", str(size), "/dev/urandom"], stdout=open(os.path.join(WORK, "origin", name), "wb"), check=True)
        origin_port, proxy_port, larder_port = free_port(), free_port(), free_port()
        nginx("origin", origin_port, ORIGIN_LOCATION.format(work=WORK))
        proxy = nginx("proxy", proxy_port, PROXY_LOCATION.format(origin_port=origin_port))
        larder = start([LARDER, "serve", "--port", str(larder_port), "--cache-dir", os.path.join(WORK, "larder"), "--memory-limit", "64MiB",
                        "--disk-limit", "1GiB", "--event-loops", "2", "--log-level", "warning", "--route", f"/=http://127.0.0.1:{origin_port}"],
                       os.path.join(WORK, "larder.log"))
        wait_for(larder_port, "/livez")
        peers = [("larder", larder, larder_port), ("nginx proxy_cache", proxy, proxy_port)]

        print("warm-up: the 100 MiB object into each cache")
        for name, _, port in peers:
            curl(port, "/big-100m")
            deadline = time.time() + 60
            while name == "larder" and "hit" not in cache_status(port, "/big-100m") and time.time() < deadline:
                time.sleep(0.2)
        if "hit" not in cache_status(larder_port, "/big-100m"):
            raise SystemExit("larder: the 100 MiB object was not stored")

        for rep in range(1, ROUNDS + 1):
            print(f"round {rep}")
            for clients in (1, 8):
                for name, proc, port in peers:
                    rate, peak = from_cache(name, proc, port, clients)
                    rows.setdefault((name, clients), []).append((rate, peak))
                    print(f"    {name:18} 100 MiB from cache, {clients} client(s): {rate:8.0f} MB/s, peak RSS {peak:.1f} MiB")
            for name, proc, port in peers:
                path = f"/big-1g?round={rep}"
                settled()
                sampler = PeakRSS(proc.pid)
                size, first, total, status = curl(port, path)
                peak = sampler.stop()
                _, origin_first, origin_total, _ = curl(origin_port, path)
                if (size, status) != (1024 * MIB, 200):
                    raise SystemExit(f"{name}: the 1 GiB miss did not arrive whole ({size} bytes, status {status})")
                misses.setdefault(name, []).append((first * 1000, origin_first * 1000, total, origin_total, peak))
                print(f"    {name:18} 1 GiB miss: first byte {first * 1000:.2f} ms (origin {origin_first * 1000:.2f} ms), "
                      f"whole {total:.2f} s (origin {origin_total:.2f} s), peak RSS {peak:.1f} MiB")
    finally:
        stop_all()
        shutil.rmtree(WORK, ignore_errors=True)
    report(rows, misses)


def median_rate(rounds):
    return statistics.median(rate for rate, _ in rounds)


def report(rows, misses):
    lines = ["# make bench: large objects", "",
             f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores; curl to /dev/null over loopback; "
             f"median of {ROUNDS} interleaved rounds. Larder as shipped in compose (--memory-limit 64MiB, --disk-limit 1GiB).", "",
             "| cell | peer | MB/s | peak RSS MiB | Larder / nginx proxy_cache |", "| --- | --- | ---: | ---: | ---: |"]
    for clients in (1, 8):
        for name in ("larder", "nginx proxy_cache"):
            rate, peak = median_rate(rows[(name, clients)]), max(r[1] for r in rows[(name, clients)])
            ratio = f"{rate / median_rate(rows[('nginx proxy_cache', clients)]):.2f}×" if name == "larder" else ""
            lines.append(f"| 100 MiB from cache, {clients} client{'s' if clients > 1 else ''} | {name} | {rate:.0f} | {peak:.1f} | {ratio} |")
    lines += ["", "| 1 GiB miss | peer | first byte ms (median) | origin's first byte ms (median) | over the origin ms (median of differences) | whole s | origin whole s | peak RSS MiB |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, runs in misses.items():
        first, origin_first, total, origin_total = (statistics.median(r[i] for r in runs) for i in range(4))
        over = statistics.median(r[0] - r[1] for r in runs)
        peak = max(r[4] for r in runs)
        lines.append(f"| streamed | {name} | {first:.2f} | {origin_first:.2f} | {over:.2f} | {total:.2f} | {origin_total:.2f} | {peak:.1f} |")
    worst = min((median_rate(rows[("larder", clients)]) / median_rate(rows[("nginx proxy_cache", clients)]),
                 f"{clients} client{'s' if clients > 1 else ''}") for clients in (1, 8))
    lines += ["", targets.judge("large-from-cache", *worst)]
    if "larder" in misses and "nginx proxy_cache" in misses:
        # The whole transfer's speed against nginx's: nginx's time over Larder's.
        larder_total, nginx_total = (statistics.median(r[2] for r in misses[name]) for name in ("larder", "nginx proxy_cache"))
        lines.append(targets.judge("large-streamed-miss", nginx_total / larder_total,
                                   f"whole transfer {larder_total:.2f} s against {nginx_total:.2f} s"))
    publish(lines, "large.md")


if __name__ == "__main__":
    main()
