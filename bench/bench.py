#!/usr/bin/env python3
"""make bench: Larder against nginx proxy_cache (and static nginx), side by side in one run.

Loopback only, bounded in time (about eighteen minutes with 10 s runs and three rounds),
every process started is stopped by pid. Only ratios measured in the same run count: these
machines are shared and noisy.
Server CPU time per request comes from /proc, because wrk needs a core of its own here.

Every server runs in a session of its own (as a service runs in a cgroup of its own), so
with the kernel's autogroup scheduling a two-worker server and wrk contend for the same two
cores by group. Where the scheduler puts a server's two workers decides about a third of
its throughput, for nginx as for Larder: both workers on the core wrk does not use, or one
on wrk's core. A placement lasts a run or longer, so each cell keeps the best of
`BENCH_ROUNDS` interleaved rounds (3), which gives each server its chances at the better
one. A second, smaller table gives each server one worker (Larder `--event-loops 1`, nginx
`worker_processes 1`): the server has a core and wrk the other.
"""
import atexit
import concurrent.futures
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARDER = sys.argv[1]
DURATION = int(os.environ.get("BENCH_DURATION", "10"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
# BENCH_BASELINE=/path/to/an/older/larder: its memory hits (quiet and logged), disk hits and
# misses are measured in the same run, as extra rows, so a change is judged before and after
# on the same machine state. It runs with the same flags as this Larder, and BENCH_BASELINE_FLAGS
# (space-separated) too when an older build needs a flag to match today's defaults.
BASELINE = os.environ.get("BENCH_BASELINE")
BASELINE_FLAGS = os.environ.get("BENCH_BASELINE_FLAGS", "").split()
# BENCH_BASELINE_ENV="NAME=VALUE ...": the baseline's environment differs from the image's
# (GLIBC_TUNABLES= measures it without the image's allocator setting).
BASELINE_ENV = dict(item.split("=", 1) for item in os.environ.get("BENCH_BASELINE_ENV", "").split())
# Cold keys per cache in the miss-path measurement.
MISS_KEYS = int(os.environ.get("BENCH_MISS_KEYS", "200"))
if ROUNDS < 1:
    raise SystemExit("BENCH_ROUNDS must be at least 1")
CLK_TCK = os.sysconf("SC_CLK_TCK")
HOT = "/weather?lat=52.52&lon=13.41"
# Debian installs nginx in /usr/sbin, which is not on every user's PATH.
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
KEYS = ["/weather?lat=%d.%02d&lon=13.41" % (10 + i // 100, i % 100) for i in range(1000)]
# The same places through a pass-through route (--route /v1=simulator): the simulator's own
# URLs, the ones nginx proxy_cache asks for, so both caches hold the same bytes.
PASS_QUERY = "/v1/forecast?latitude=%s&longitude=13.41&current=temperature_2m,weather_code"
PASS_HOT = PASS_QUERY % "52.52"
PASS_KEYS = [PASS_QUERY % ("%d.%02d" % (10 + i // 100, i % 100)) for i in range(1000)]
processes = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment_for(args):
    """Larder (this build and the baseline, the simulator too) runs with what the image sets
    beyond its LARDER_* defaults: the Dockerfile's GLIBC_TUNABLES, glibc's allocator setting.
    nginx, wrk and the rest run as they are (None: this environment)."""
    if args[0] not in (LARDER, BASELINE, SIMULATOR):
        return None
    env = dict(os.environ)
    found = re.search(r"^ENV GLIBC_TUNABLES=(\S+)$", open(os.path.join(ROOT, "Dockerfile")).read(), re.M)
    if found:
        env["GLIBC_TUNABLES"] = found.group(1)
    if args[0] == BASELINE:
        env.update(BASELINE_ENV)
    return env


def simulator():
    """The upstream simulator's binary: a copy of Larder's, made once per run. Run from the same
    file, the simulator shares its code pages with the Larder measured, and what it has just run
    (the same HTTP server code) is still in the CPU's caches when that Larder takes the answer:
    a miss read 40-80 us shorter so, an advantage nginx, in front of the same simulator, never has
    (three rounds of 150 keys by hand, byte-identical copies against the file itself)."""
    if not os.path.exists(SIMULATOR):
        shutil.copy(LARDER, SIMULATOR)
    return SIMULATOR


def start(args, log, env=None):
    proc = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=env or environment_for(args))
    processes.append(proc)
    return proc


def wait_for(port, path="/", timeout=30):
    """Until anything answers over HTTP (an error status counts: the server is up)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2).read()
            return
        except urllib.error.HTTPError:
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"nothing answered on port {port}")


def stop_all():
    for proc in processes:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def tree(pid):
    """The pid and its children (nginx: master and workers)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid] + [int(c) for c in children]


def stat_ticks(path):
    """utime + stime of a /proc stat file (a process's or one thread's), in clock ticks; 0 once gone."""
    try:
        fields = open(path).read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid):
    return sum(stat_ticks(f"/proc/{p}/stat") for p in tree(pid)) / CLK_TCK


def rss_mib(pid):
    total = 0
    for p in tree(pid):
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total / 1024


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.read()


def sim_requests(sim_port):
    return json.loads(get(sim_port, "/_sim/requests"))["requests"]


def disk_entries(port):
    """Larder's `larder_cache_entries{tier="disk"}`, 0 when it is not there (yet)."""
    match = re.search(r'^larder_cache_entries\{tier="disk"\} (\S+)$', get(port, "/metrics").decode(), re.M)
    return float(match.group(1)) if match else 0


def warm(name, port, sim_port, paths, on_disk=False):
    """Every key once (concurrently), then again: same bodies, and the upstream asked once per key.
    With `on_disk` (a memory tier too small for the keys) the second pass waits, up to 60 s, for
    every key's background disk write to land: one still queued when its key left memory is a
    second upstream fetch, which is the disk's speed, not what is measured."""
    before = sim_requests(sim_port)
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        first = list(pool.map(lambda p: get(port, p), paths))
        if on_disk:
            deadline = time.time() + 60
            while time.time() < deadline and disk_entries(port) < len(paths):
                time.sleep(0.2)
        else:
            time.sleep(1)  # let background work settle before the second pass
        second = list(pool.map(lambda p: get(port, p), paths))
    asked = sim_requests(sim_port) - before
    same = first == second
    print(f"  warmed {name}: {len(paths)} keys, upstream asked {asked} times, bodies stable: {same}")
    if not same or (sim_port and asked != len(paths)):
        raise SystemExit(f"{name}: warm-up check failed")


def clear_of_quarter_hour(margin=180):
    """The simulator's answers change at every quarter hour (Open-Meteo's 15-minute interval),
    and the caches whose bodies are compared after the warm-up must all fetch within one: a
    warm-up that would begin less than `margin` seconds (longer than it takes) before the
    next one waits for it instead."""
    left = 900 - time.time() % 900
    if left < margin:
        print(f"waiting {left:.0f} s for the simulator's next quarter hour, so that every cache warms within one")
        time.sleep(left + 1)


def parse_duration_ms(text):
    """wrk's latency figures: 812.00us, 1.34ms, 1.02s, 1.50m; NaN when wrk printed something else."""
    match = re.match(r"([\d.]+)(us|ms|s|m|h)$", text)
    if not match:
        return float("nan")
    value, unit = match.groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}[unit]


def wrk(port, connections, script=None, path=HOT, duration=DURATION, pass_through=False):
    args = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "5s"]
    if script:
        args += ["-s", os.path.join(ROOT, "bench", script)]
    args.append(f"http://127.0.0.1:{port}{path}")
    env = dict(os.environ, BENCH_KEYS="pass-through" if pass_through else "weather")
    out = subprocess.run(args, capture_output=True, text=True, timeout=duration + 30, env=env).stdout
    with open(os.path.join(WORK, "wrk.log"), "a") as log:
        log.write(" ".join(args) + "\n" + out + "\n")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    # The distribution's own lines: a stdev share such as `87.99%` in the thread stats ends in
    # `99%` too, and matched first it read `Req/Sec` as the p99.
    p50 = parse_duration_ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1))
    p99 = parse_duration_ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1))
    if p50 != p50 or p99 != p99:
        print("    note: unreadable latency figures from wrk:", re.findall(r"(?:50|99)%\s+\S+", out))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    if errors or socket_errors:
        print(f"    note: {errors.group(0) if errors else ''} {socket_errors.group(0) if socket_errors else ''}")
    return rps, p50, p99, requests


def measure(name, proc, port, connections, keys, pass_through=False):
    script = "keys.lua" if keys == "1000 keys" else None
    before = cpu_seconds(proc.pid)
    rps, p50, p99, requests = wrk(port, connections, script, path=PASS_HOT if pass_through else HOT, pass_through=pass_through)
    cpu = cpu_seconds(proc.pid) - before
    row = {"peer": name, "scenario": keys, "connections": connections, "rps": rps, "p50": p50, "p99": p99,
           "cpu_us": cpu / max(requests, 1) * 1e6, "rss": rss_mib(proc.pid)}
    print(f"    {name:18} {keys:9} c={connections:<4} {rps:10.0f} req/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
          f"{row['cpu_us']:5.1f} µs CPU/req  RSS {row['rss']:.1f} MiB")
    return row


def miss_paths(ports, sim_port):
    """MISS_KEYS sequential cold keys through each cache (Larder and nginx proxy_cache, in turn, key
    by key) and straight to the simulator, each over one keep-alive connection: each miss is paired
    with a direct request made right after it, so the difference is the cache's own overhead on
    a miss. Both caches pay the same extra hop on this machine, so they are measured together.
    Which cache goes first turns with each key, so that no cache keeps the place a fixed order
    gave it: one build measured first and again second read p50s 0.03-0.06 ms apart."""
    import http.client

    def timed(connection, path):
        start = time.perf_counter()
        connection.request("GET", path)
        connection.getresponse().read()
        return (time.perf_counter() - start) * 1000

    direct = http.client.HTTPConnection("127.0.0.1", sim_port, timeout=10)
    through = {name: http.client.HTTPConnection("127.0.0.1", port, timeout=10) for name, port in ports.items()}
    overheads = {name: [] for name in ports}
    names = list(ports)
    for i in range(MISS_KEYS):
        for turn in range(len(names)):
            offset = (i + turn) % len(names)
            name = names[offset]
            # Keys no run has asked for: each cache misses.
            lat, lon = 60 + 10 * offset + i / 100, 20.5
            via_cache = timed(through[name], f"/weather?lat={lat:.2f}&lon={lon}")
            straight = timed(direct, f"/v1/forecast?latitude={lat:.2f}&longitude={lon + 1}&current=temperature_2m,weather_code")
            overheads[name].append(via_cache - straight)
    result = {}
    for name, values in overheads.items():
        values.sort()
        result[name] = (statistics.median(values), values[int(len(values) * 0.99) - 1])
    return result


def idle_connections(port, pid, count=10_000):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    before = rss_mib(pid)
    sockets = []
    request = f"GET {HOT} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(request)
        sockets.append(s)
    for s in sockets:
        s.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(4096)
    time.sleep(1)
    held = rss_mib(pid)
    for s in sockets:
        s.close()
    return before, held


# The servers' caches and logs (the logged cells' access logs reach gigabytes): removed when
# the script that imported this module exits, once its servers have stopped.
WORK = tempfile.mkdtemp(prefix="larder-bench-")
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
SIMULATOR = os.path.join(WORK, "upstream-simulator")


def main():
    work = WORK
    rows = []
    try:
        sim_port = free_port()
        start([simulator(), "upstream-sim", "--port", str(sim_port), "--latency", "50ms", "--max-age", "3600"], f"{work}/sim.log")
        wait_for(sim_port, "/balance")
        upstream = ["--weather-url", f"http://127.0.0.1:{sim_port}/v1/forecast", "--balance-url", f"http://127.0.0.1:{sim_port}/balance",
                    "--log-level", "warning"]
        larder_port, disk_port, pass_port, logged_port = free_port(), free_port(), free_port(), free_port()
        larder = start([LARDER, "serve", "--port", str(larder_port), "--cache-dir", f"{work}/larder"] + upstream, f"{work}/larder.log")
        # The same with an access line per request (to a file, as nginx's below).
        logged = start([LARDER, "serve", "--port", str(logged_port), "--cache-dir", f"{work}/larder-logged"] + upstream[:-2]
                       + ["--log-level", "info"], f"{work}/larder-logged.log")
        passthrough = start([LARDER, "serve", "--port", str(pass_port), "--cache-dir", f"{work}/larder-pass", "--log-level", "warning",
                             "--route", f"/v1=http://127.0.0.1:{sim_port}"], f"{work}/larder-pass.log")
        # One event loop each, beside nginx with one worker: a core for the server, one for wrk.
        one_port, one_logged_port = free_port(), free_port()
        one = start([LARDER, "serve", "--port", str(one_port), "--cache-dir", f"{work}/larder-one", "--event-loops", "1"] + upstream,
                    f"{work}/larder-one.log")
        one_logged = start([LARDER, "serve", "--port", str(one_logged_port), "--cache-dir", f"{work}/larder-one-logged", "--event-loops", "1"]
                           + upstream[:-2] + ["--log-level", "info"], f"{work}/larder-one-logged.log")
        disk = start([LARDER, "serve", "--port", str(disk_port), "--cache-dir", f"{work}/larder-disk", "--memory-limit", "64KiB"] + upstream,
                     f"{work}/larder-disk.log")
        baseline = {}
        if BASELINE:
            for name, extra in [("baseline larder", []), ("baseline larder (logged)", ["--log-level", "info"]),
                                ("baseline larder (disk hits)", ["--memory-limit", "64KiB"])]:
                port = free_port()
                flags = upstream[:-2] + extra if "logged" in name else upstream + extra
                proc = start([BASELINE, "serve", "--port", str(port), "--cache-dir", f"{work}/{name.replace(' ', '-')}"]
                             + BASELINE_FLAGS + flags, f"{work}/{name.replace(' ', '-')}.log")
                baseline[name] = (proc, port)
        proxy_port, static_port, proxy_logged_port = free_port(), free_port(), free_port()
        one_proxy_port, one_static_port, one_proxy_logged_port = free_port(), free_port(), free_port()
        body = None
        template = open(os.path.join(ROOT, "bench", "nginx.conf.template")).read()
        proxy_location = ("proxy_pass http://simulator/v1/forecast?latitude=$arg_lat&longitude=$arg_lon&current=temperature_2m,weather_code;\n"
                          "            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n"
                          "            proxy_cache weather;\n            proxy_cache_key $arg_lat,$arg_lon;\n"
                          "            proxy_cache_lock on;\n            proxy_cache_revalidate on;")
        wait_for(larder_port, "/livez")
        wait_for(disk_port, "/livez")
        wait_for(pass_port, "/livez")
        wait_for(logged_port, "/livez")
        wait_for(one_port, "/livez")
        wait_for(one_logged_port, "/livez")
        for _, port in baseline.values():
            wait_for(port, "/livez")
        clear_of_quarter_hour()
        body = get(larder_port, HOT).decode()
        static_location = "default_type application/json;\n            return 200 '" + body.replace("'", "\\'") + "';"
        nginx = {}
        for mode, port, location in [("proxy", proxy_port, proxy_location), ("static", static_port, static_location),
                                     ("proxy-logged", proxy_logged_port, proxy_location),
                                     ("one-proxy", one_proxy_port, proxy_location), ("one-static", one_static_port, static_location),
                                     ("one-proxy-logged", one_proxy_logged_port, proxy_location)]:
            conf = f"{work}/nginx-{mode}.conf"
            text = template
            access_log = f"access_log {work}/{mode}-access.log;" if mode.endswith("proxy-logged") else "access_log off;"
            for key, value in {"work": work, "mode": mode, "port": str(port), "sim_port": str(sim_port), "location": location,
                               "access_log": access_log, "workers": "1" if mode.startswith("one-") else "2"}.items():
                text = text.replace("{" + key + "}", value)
            open(conf, "w").write(text)
            nginx[mode] = start([NGINX, "-c", conf, "-p", work], f"{work}/nginx-{mode}.log")
            wait_for(port, "/ready-probe")

        print("warm-up and checks")
        warm("larder", larder_port, sim_port, KEYS)
        warm("nginx proxy_cache", proxy_port, sim_port, KEYS + [HOT])
        warm("larder (logged)", logged_port, sim_port, [HOT])
        for name, (_, port) in baseline.items():
            warm(name, port, sim_port, KEYS + [HOT] if "logged" not in name else [HOT], on_disk="disk" in name)
        warm("nginx proxy_cache (logged)", proxy_logged_port, sim_port, [HOT])
        warm("larder (disk hits)", disk_port, sim_port, KEYS + [HOT], on_disk=True)
        for name, port in [("larder, one loop", one_port), ("larder (logged), one loop", one_logged_port),
                           ("nginx proxy_cache, one worker", one_proxy_port), ("nginx proxy_cache (logged), one worker", one_proxy_logged_port)]:
            warm(name, port, sim_port, [HOT])
        warm("larder pass-through", pass_port, sim_port, PASS_KEYS + [PASS_HOT])
        if get(pass_port, PASS_HOT) != get(proxy_port, HOT):
            raise SystemExit("Larder's pass-through route and nginx proxy_cache do not serve the same body")
        if get(static_port, HOT).decode() != body or get(larder_port, HOT).decode() != body:
            raise SystemExit("static nginx and Larder do not serve the same body")

        peers = [("larder", larder, larder_port), ("larder pass-through", passthrough, pass_port),
                 ("nginx proxy_cache", nginx["proxy"], proxy_port), ("nginx static", nginx["static"], static_port)]
        for rep in range(1, ROUNDS + 1):
            print(f"round {rep}")
            for connections in (64, 256):
                for keys in ("hot key", "1000 keys"):
                    for name, proc, port in peers:
                        rows.append(measure(name, proc, port, connections, keys, pass_through=proc is passthrough) | {"round": rep})
                    if "baseline larder" in baseline:
                        proc, port = baseline["baseline larder"]
                        rows.append(measure("baseline larder", proc, port, connections, keys) | {"round": rep})
                # Disk hits in every round too, so their best is taken as every other cell's is.
                rows.append(measure("larder (disk hits)", disk, disk_port, connections, "1000 keys") | {"round": rep})
                if baseline:
                    proc, port = baseline["baseline larder (disk hits)"]
                    rows.append(measure("baseline larder (disk hits)", proc, port, connections, "1000 keys") | {"round": rep})
                    proc, port = baseline["baseline larder (logged)"]
                    rows.append(measure("baseline larder (logged)", proc, port, connections, "hot key") | {"round": rep})
                # Both writing an access line per request, hot key only.
                for name, proc, port in [("larder (logged)", logged, logged_port),
                                         ("nginx proxy_cache (logged)", nginx["proxy-logged"], proxy_logged_port)]:
                    rows.append(measure(name, proc, port, connections, "hot key") | {"round": rep})
        one_peers = [("larder", one, one_port), ("nginx proxy_cache", nginx["one-proxy"], one_proxy_port),
                     ("nginx static", nginx["one-static"], one_static_port), ("larder (logged)", one_logged, one_logged_port),
                     ("nginx proxy_cache (logged)", nginx["one-proxy-logged"], one_proxy_logged_port)]
        for rep in range(1, ROUNDS + 1):
            print(f"one worker each, round {rep}")
            for connections in (64, 256):
                for name, proc, port in one_peers:
                    rows.append(measure(name, proc, port, connections, "hot key") | {"round": rep, "layout": "one"})
        print(f"miss path: {MISS_KEYS} sequential cold keys")
        miss_ports = {"larder": larder_port, "nginx proxy_cache": proxy_port}
        if baseline:
            miss_ports["baseline larder"] = baseline["baseline larder"][1]
        miss = miss_paths(miss_ports, sim_port)
        for name, (p50, p99) in miss.items():
            print(f"  {name}: overhead over the raw simulator: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        print("10,000 idle keep-alive connections on Larder")
        idle = idle_connections(larder_port, larder.pid)
        print(f"  RSS {idle[0]:.1f} MiB before, {idle[1]:.1f} MiB with 10,000 held")
        after = {name: rss_mib(proc.pid) for name, proc, _ in peers}
        after["larder (disk hits)"] = rss_mib(disk.pid)
    finally:
        stop_all()
        if os.path.exists(os.path.join(WORK, "wrk.log")):
            os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
            shutil.copy(os.path.join(WORK, "wrk.log"), os.path.join(ROOT, "bench", "results", "wrk.log"))
            print("raw wrk output: bench/results/wrk.log")
    report(rows, miss, idle, after)


def report(rows, miss, idle, after):
    def best(peer, scenario, connections, layout):
        candidates = [r for r in rows if r["peer"] == peer and r["scenario"] == scenario and r["connections"] == connections
                      and r.get("layout", "two") == layout]
        return max(candidates, key=lambda r: r["rps"]) if candidates else None

    def table(layout, scenarios):
        out = ["| scenario | connections | peer | req/s | p50 ms | p99 ms | server CPU µs/req | RSS MiB | Larder / nginx proxy_cache | Larder / static nginx |",
               "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for scenario in scenarios:
            for connections in (64, 256):
                larder, proxy, static = (best(p, scenario, connections, layout) for p in ("larder", "nginx proxy_cache", "nginx static"))
                passthrough = best("larder pass-through", scenario, connections, layout)
                logged = best("larder (logged)", scenario, connections, layout)
                base, base_logged, base_disk = (best(p, scenario, connections, layout) for p in
                                                ("baseline larder", "baseline larder (logged)", "baseline larder (disk hits)"))
                proxy_logged = best("nginx proxy_cache (logged)", scenario, connections, layout)
                for row in (larder, base, passthrough, proxy, static, logged, base_logged, proxy_logged,
                            best("larder (disk hits)", scenario, connections, layout), base_disk):
                    if row is None:
                        continue
                    ratios = ["", ""]
                    if row is larder or row is passthrough or row is base:
                        ratios = [f"{row['rps'] / proxy['rps']:.2f}×", f"{row['rps'] / static['rps']:.2f}×"]
                    if (row is logged or row is base_logged) and proxy_logged:
                        ratios = [f"logged/logged {row['rps'] / proxy_logged['rps']:.2f}×", ""]
                    if row["peer"] == "larder (disk hits)":
                        ratios = [f"disk/memory {row['rps'] / larder['rps']:.2f}×", ""]
                    if row is base_disk and base:
                        ratios = [f"disk/memory {row['rps'] / base['rps']:.2f}×", ""]
                    out.append(f"| {scenario} | {connections} | {row['peer']} | {row['rps']:.0f} | {row['p50']:.2f} | {row['p99']:.2f} | "
                               f"{row['cpu_us']:.1f} | {row['rss']:.1f} | {ratios[0]} | {ratios[1]} |")
        return out

    try:
        autogroup = "on" if open("/proc/sys/kernel/sched_autogroup_enabled").read().strip() == "1" else "off"
    except OSError:
        autogroup = "not in this kernel"
    lines = ["# make bench", "", f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores, wrk -t1, {DURATION} s runs,"
             f" best of {ROUNDS} interleaved rounds; each server in a session of its own, autogroup scheduling {autogroup}.", "",
             "Two workers each (Larder: one event loop per CPU; nginx: worker_processes 2):", ""]
    lines += table("two", ("hot key", "1000 keys"))
    lines += ["", "One worker each (Larder --event-loops 1; nginx worker_processes 1), hot key:", ""]
    lines += table("one", ("hot key",))
    lines += ["", f"Miss path, {MISS_KEYS} sequential cold keys, which cache goes first turning with each key, overhead over the raw simulator (50 ms away), each miss paired with a "
              "direct request: " + "; ".join(f"{name} p50 {p50:.2f} ms, p99 {p99:.2f} ms" for name, (p50, p99) in miss.items()) + ".",
              f"10,000 idle keep-alive connections: Larder RSS {idle[0]:.1f} MiB before, {idle[1]:.1f} MiB while held.",
              "RSS after load: " + ", ".join(f"{name} {value:.1f} MiB" for name, value in after.items()) + "."]
    lines += [""] + judged(best, miss)
    publish(lines, "latest.md")


def judged(best, miss):
    """The targets this section's cells are judged by (bench/targets.py): each the worst of
    its cells, as a ratio measured in this run."""
    def worst(numerator, denominator, scenarios):
        cells = [(a["rps"] / b["rps"], f"{scenario}, {connections} connections")
                 for scenario in scenarios for connections in (64, 256)
                 for a, b in [(best(numerator, scenario, connections, "two"), best(denominator, scenario, connections, "two"))] if a and b]
        return min(cells) if cells else None
    out = []
    for key, numerator, denominator, scenarios in [
            ("memory-hits", "larder", "nginx proxy_cache", ("hot key", "1000 keys")),
            ("memory-hits-logged", "larder (logged)", "nginx proxy_cache (logged)", ("hot key",)),
            ("disk-hits", "larder (disk hits)", "larder", ("1000 keys",))]:
        found = worst(numerator, denominator, scenarios)
        if found:
            out.append(targets.judge(key, *found))
    if "larder" in miss and "nginx proxy_cache" in miss:
        out.append(targets.judge("miss-overhead", miss["larder"][0] / miss["nginx proxy_cache"][0],
                                 f"p50 of {MISS_KEYS} cold keys: {miss['larder'][0]:.2f} against {miss['nginx proxy_cache'][0]:.2f} ms"))
    return out


def publish(lines, name):
    """Prints a table and writes it to bench/results/NAME (not committed)."""
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    open(os.path.join(ROOT, "bench", "results", name), "w").write(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
