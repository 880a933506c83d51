#!/usr/bin/env python3
"""make bench, replay section: how many requests reach the origin, by trace and budget.

Each trace (bench/traces.py) is sent through a pass-through route of a real `larder serve`
(memory tier only: `disk-limit: 0`) and through nginx proxy_cache, each in front of its own
server of one nginx origin that logs every request it answers. What reached the origin is
counted from those logs; exact LRU is computed here at the number of entries Larder held
at the end of its replay.

Budgets are a share (1 %, 5 %, 20 %) of the trace's distinct keys, rounded up to what an
nginx keys zone holds (`Sizing`): Larder that many entries at what one costs its memory tier,
nginx that many keys and as many 4 KiB blocks (`max_size` counts a file's blocks, a small
answer's one). adapt_size carries sizes: Larder gets that share of the distinct objects'
bytes, nginx that share of their files' blocks and as many keys as Larder held. Larder and
nginx replay a small-body trace side by side; adapt_size one after the other. The traces in
BENCH_REPLAY_DISK (web07) go through Larder's disk tier next, at nginx's budget.

Requests go in trace order over one keep-alive connection, pipelined `BENCH_REPLAY_WINDOW`
(8) deep: nginx answers them one by one, Larder works on up to 8 at once. Against one at a
time, 8 moved Larder's misses on web07's first 20,000 requests by under 1 % and took half
the time.
Loopback only; every process started is stopped by its own pid.
"""
import concurrent.futures
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import NGINX, ROOT, WORK, free_port, get, publish, start, stop_all, wait_for  # noqa: E402
import targets  # noqa: E402
import traces  # noqa: E402

LARDER = sys.argv[1]
WINDOW = int(os.environ.get("BENCH_REPLAY_WINDOW", "8"))
SHARES = (0.01, 0.05, 0.20)
ONLY = [name for name in os.environ.get("BENCH_REPLAY_TRACES", "").split(",") if name]
# The traces the 0.93× bound judges: popularity-driven requests for items (a shop's pages and
# its database objects, synthetic Zipf with a crawler's scan), where frequency should pay.
SKEWED = ("web07", "orm-busy", "zipf-0.7", "zipf-0.9", "zipf-1.1")
BLOCK = 4096
# Traces replayed through the disk tier too, after the memory tier (BENCH_REPLAY_DISK, a comma
# list; web07 alone keeps the section near its ten minutes): the memory tier DISK_MEMORY in
# front, the disk at nginx's budget (its blocks).
DISK_TRACES = [name for name in os.environ.get("BENCH_REPLAY_DISK", "web07").split(",") if name]
DISK_MEMORY = "8KiB"
# How long the disk side waits for a miss's write to be indexed before it counts it lagged and goes on.
DISK_PATIENCE = 2.0


def stop(proc):
    os.killpg(proc.pid, 15)
    proc.wait(timeout=15)


def path(key, size):
    return f"/o/{key}/{size}"


def replay(port, requests, window=None, answered_one=None):
    """Sends every request in order over one connection, `window` (`WINDOW`) in flight; returns
    the statuses that were not 200 and the seconds it took. `answered_one` is called with each
    answer's head, in order, before the next request is sent when `window` is 1."""
    window = window or WINDOW
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lines = [f"GET {path(key, size)} HTTP/1.1\r\nHost: replay\r\n\r\n".encode() for key, size in requests]
    buffer = bytearray()
    sent = answered = 0
    odd = []
    began = time.perf_counter()
    while answered < len(lines):
        if sent - answered < window // 2 + 1 and sent < len(lines):
            upto = min(len(lines), answered + window)
            sock.sendall(b"".join(lines[sent:upto]))
            sent = upto
        data = sock.recv(1 << 20)
        if not data:
            raise SystemExit(f"port {port} closed the connection after {answered} answers")
        buffer += data
        position = 0
        while True:
            end = buffer.find(b"\r\n\r\n", position)
            if end < 0:
                break
            head = bytes(buffer[position:end])
            length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
            whole = end + 4 + (int(length.group(1)) if length else 0)
            if whole > len(buffer):
                break
            if not head.startswith(b"HTTP/1.1 200"):
                odd.append(head.split(b"\r\n", 1)[0].decode())
            answered += 1
            if answered_one:
                answered_one(head)
            position = whole
        del buffer[:position]
    sock.close()
    return odd, time.perf_counter() - began


class Origin:
    """One nginx, a server (port and log) per cache, answering /o/KEY/SIZE with SIZE bytes from
    a sparse file per size."""

    def __init__(self, sizes):
        folder = os.path.join(WORK, "replay-origin", "sizes")
        os.makedirs(folder)
        for size in sizes:
            with open(os.path.join(folder, str(size)), "wb") as f:
                f.truncate(size)
        self.ports = {"larder": free_port(), "nginx": free_port()}
        self.logs = {name: os.path.join(WORK, f"replay-origin-{name}.log") for name in self.ports}
        servers = "".join(f"""
    server {{
        listen 127.0.0.1:{port};
        access_log {self.logs[name]} counted;
        location /o/ {{
            root {WORK}/replay-origin;
            rewrite ^/o/[^/]+/(\\d+)$ /sizes/$1 break;
            default_type application/octet-stream;
            add_header Cache-Control "public, max-age=86400";
        }}
    }}""" for name, port in self.ports.items())
        nginx_conf("origin", servers)
        for port in self.ports.values():
            wait_for(port, "/ready-probe")

    def mark(self, name):
        return os.path.getsize(self.logs[name]) if os.path.exists(self.logs[name]) else 0

    def since(self, name, mark):
        """Requests and body bytes this server answered since `mark`."""
        with open(self.logs[name], "rb") as f:
            f.seek(mark)
            lines = f.read().split(b"\n")
        sizes = [int(line.rsplit(b" ", 1)[1]) for line in lines if line]
        return len(sizes), sum(sizes)


def nginx_conf(mode, http):
    text = open(os.path.join(ROOT, "bench", "nginx-replay.conf.template")).read()
    for key, value in {"work": WORK, "mode": mode, "http": http}.items():
        text = text.replace("{" + key + "}", value)
    conf = os.path.join(WORK, f"nginx-replay-{mode}.conf")
    open(conf, "w").write(text)
    return start([NGINX, "-c", conf, "-p", WORK], os.path.join(WORK, f"nginx-replay-{mode}.log"))


def proxy(run, origin_port, max_size, zone="64m"):
    port = free_port()
    proc = nginx_conf(f"proxy-{run}", f"""
    proxy_cache_path {WORK}/replay-cache-{run} levels=1:2 keys_zone=replay:{zone} max_size={max_size} inactive=30d
                     use_temp_path=off manager_files=10000 manager_sleep=10ms;
    upstream origin {{
        server 127.0.0.1:{origin_port};
        keepalive 8;
    }}
    server {{
        listen 127.0.0.1:{port};
        location /o/ {{
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache replay;
            proxy_cache_key $request_uri;
        }}
    }}""")
    wait_for(port, "/ready-probe")
    return proc, port, f"{WORK}/replay-cache-{run}"


def larder(run, origin_port, memory_limit, disk_limit=0):
    port = free_port()
    config = os.path.join(WORK, f"replay-{run}.yaml")
    open(config, "w").write(f"""port: {port}
cache-dir: {WORK}/replay-larder-{run}
memory-limit: {memory_limit}
disk-limit: {disk_limit}
log-level: warning
built-in-routes: none
routes:
  /o: {{origin: "http://127.0.0.1:{origin_port}"}}
""")
    proc = start([LARDER, "serve", "--config", config], os.path.join(WORK, f"replay-larder-{run}.log"))
    wait_for(port, "/livez")
    return proc, port


def gauges(port):
    text = get(port, "/metrics").decode()

    def value(name, tier=None):
        labels = rf'\{{tier="{tier}"\}}' if tier else ""
        found = re.search(rf'^{name}{labels} (\S+)$', text, re.M)
        return float(found.group(1)) if found else 0.0
    return {"entries": int(value("larder_cache_entries", "memory")), "bytes": int(value("larder_cache_bytes", "memory")),
            "disk": int(value("larder_cache_entries", "disk")), "rejected": int(value("larder_cache_admission_rejections_total", "memory")),
            "disk_rejected": int(value("larder_cache_admission_rejections_total", "disk")),
            "skipped": int(value("larder_disk_writes_skipped_total")),
            # Every write the disk's writer has indexed is held, was evicted since, or lost its contest.
            "disk_indexed": int(value("larder_cache_entries", "disk") + value("larder_cache_evictions_total", "disk")
                                + value("larder_cache_admission_rejections_total", "disk"))}


def files_in(folder):
    return sum(len(names) for _, _, names in os.walk(folder))


class Sizing:
    """What the budgets are made of, measured through the same route and origin as the replay:
    what one small answer costs Larder's memory tier (`larder_cache_bytes{tier="memory"}` over
    its entries), the bytes nginx's cache file adds to a body, and how many keys an nginx keys
    zone of a number of pages holds (its node slabs, less what the zone keeps for itself)."""

    def __init__(self, origin):
        proc, port = larder("calibrate", origin.ports["larder"], 64 << 20)
        keys = [(10_000_000 + n, traces.SMALL_BODY) for n in range(200)]
        replay(port, keys)
        held = gauges(port)
        stop(proc)
        self.entry_cost = held["bytes"] / held["entries"]
        held = {}
        for pages in (8, 16):
            nginx_proc, nginx_port, cache = proxy(f"calibrate-{pages}", origin.ports["nginx"], 1 << 30, f"{pages * 4}k")
            replay(nginx_port, [(11_000_000 + n, traces.SMALL_BODY) for n in range(pages * 64)])
            files = [os.path.join(d, n) for d, _, names in os.walk(cache) for n in names]
            held[pages] = len(files)
            self.nginx_header = os.path.getsize(files[0]) - traces.SMALL_BODY
            stop(nginx_proc)
        self.keys_per_page = (held[16] - held[8]) // 8
        self.zone_overhead = 8 * self.keys_per_page - held[8]

    def zone(self, entries):
        """The smallest keys zone (its size for nginx, and the keys it holds) holding `entries`."""
        pages = max(4, -(-(entries + self.zone_overhead) // self.keys_per_page))
        return f"{pages * 4}k", pages * self.keys_per_page - self.zone_overhead


def larder_side(origin, run, requests, cell):
    proc, port = larder(run, origin.ports["larder"], cell["memory_limit"])
    mark = origin.mark("larder")
    odd, seconds = replay(port, requests)
    misses, missed_bytes = origin.since("larder", mark)
    held = gauges(port)
    stop(proc)
    if odd or held["disk"]:
        raise SystemExit(f"{run}: Larder answered {len(odd)} requests without 200 ({odd[:3]}), {held['disk']} entries on disk")
    return {"larder_seconds": seconds, "larder_misses": misses, "larder_bytes": missed_bytes,
            "larder_entries": held["entries"], "larder_held_bytes": held["bytes"], "larder_rejected": held["rejected"]}


def disk_side(origin, run, requests, cell):
    """The disk tier at the budget nginx has (its blocks: a small answer takes one), the memory
    tier a few entries in front of it.

    One request at a time, and after each miss stored the next waits until the disk's writer
    has indexed it: a small entry can be read only once written, so replayed flat out
    (thousands of misses a second, far past any upstream's pace) a key asked again while its
    write waited missed again, and the table measured how fast the machine creates files
    rather than what the policy keeps. `lagged` counts misses whose write was not indexed
    within `DISK_PATIENCE`."""
    proc, port = larder(f"{run}-disk", origin.ports["larder"], DISK_MEMORY, cell["max_size"])
    mark = origin.mark("larder")
    queued, lagged = [0], [0]

    def caught_up(head):
        if b"fwd=miss" not in head.lower() or b"stored" not in head.lower():
            return
        queued[0] += 1
        deadline = time.monotonic() + DISK_PATIENCE
        while gauges(port)["disk_indexed"] < queued[0] - lagged[0]:
            if time.monotonic() > deadline:
                lagged[0] += 1
                return
            time.sleep(0.0002)
    odd, seconds = replay(port, requests, window=1, answered_one=caught_up)
    misses, _ = origin.since("larder", mark)
    held = gauges(port)
    stop(proc)
    if odd:
        raise SystemExit(f"{run}: Larder's disk tier answered {len(odd)} requests without 200 ({odd[:3]})")
    lru, _ = traces.exact_lru(requests, held["disk"])
    print(f"  {cell['trace']:10} {cell['share']:4.0%}: disk tier misses {misses / len(requests):.3f} ({held['disk']} held, "
          f"{held['disk_rejected']} not admitted, {held['skipped']} writes skipped, {lagged[0]} writes lagged, "
          f"{seconds:.1f} s), LRU {lru / len(requests):.3f}", flush=True)
    return {"disk_misses": misses, "disk_entries": held["disk"], "disk_lru_misses": lru, "disk_seconds": seconds,
            "disk_rejected": held["disk_rejected"], "disk_skipped": held["skipped"], "disk_lagged": lagged[0]}


def nginx_side(origin, run, requests, cell):
    """nginx's cache manager holds the cache to max_size only when it wakes, at most 10 s
    apart once under it: the files it holds are sampled through the replay."""
    proc, port, cache = proxy(run, origin.ports["nginx"], cell["max_size"], cell["zone"])
    mark = origin.mark("nginx")
    samples, done = [], threading.Event()

    def sample():
        while not done.wait(0.5):
            samples.append(files_in(cache))
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        odd, seconds = replay(port, requests)
    finally:
        done.set()
        sampler.join()
    misses, missed_bytes = origin.since("nginx", mark)
    samples.append(files_in(cache))
    stop(proc)
    if odd:
        raise SystemExit(f"{run}: nginx answered {len(odd)} requests without 200 ({odd[:3]})")
    return {"nginx_seconds": seconds, "nginx_misses": misses, "nginx_bytes": missed_bytes,
            "nginx_entries": samples[-1], "nginx_mean_entries": round(sum(samples) / len(samples)), "nginx_peak_entries": max(samples)}


def run_cell(origin, name, share, requests, objects, sizing):
    """One trace at one budget through Larder and through nginx, then exact LRU. nginx holds
    its budget only when its cache manager wakes (at most 10 s apart): replayed at thousands
    of misses a second it held up to nine times its max_size. So its keys zone holds as many
    keys as the budget too, and when it is full, the worker removes the least recently used
    key at once (the manager, once awake, then removes an eighth more)."""
    run = f"{name}-{int(share * 100)}"
    cell = {"trace": name, "share": share, "requests": len(requests), "distinct": len(objects)}
    if name == "adapt_size":
        # Sizes: each its share of the distinct objects' bytes (blocks for nginx), and nginx's
        # keys zone as many keys as Larder held, so Larder goes first.
        cell["memory_limit"] = round(share * sum(size + sizing.entry_cost - traces.SMALL_BODY for size in objects.values()))
        cell["max_size"] = round(share * sum(-(-(size + sizing.nginx_header) // BLOCK) * BLOCK for size in objects.values()))
        cell |= larder_side(origin, run, requests, cell)
        cell["zone"], cell["zone_keys"] = sizing.zone(cell["larder_entries"])
        cell |= nginx_side(origin, run, requests, cell)
    else:
        cell["zone"], cell["zone_keys"] = sizing.zone(max(1, round(len(objects) * share)))
        cell["memory_limit"], cell["max_size"] = round(cell["zone_keys"] * sizing.entry_cost), cell["zone_keys"] * BLOCK
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for side in pool.map(lambda replay_on: replay_on(origin, run, requests, cell), (larder_side, nginx_side)):
                cell |= side
    if name in DISK_TRACES:
        cell |= disk_side(origin, run, requests, cell)
    cell["lru_misses"], cell["lru_bytes"] = traces.exact_lru(requests, cell["larder_entries"])
    if name == "adapt_size":
        cell["byte_lru_misses"], _ = traces.exact_lru_bytes(requests, cell["memory_limit"], sizing.entry_cost - traces.SMALL_BODY)
    print(f"  {name:10} {share:4.0%}: misses Larder {cell['larder_misses'] / len(requests):.3f} ({cell['larder_entries']} held, "
          f"{cell['larder_rejected']} not admitted, "
          f"{cell['larder_seconds']:.1f} s), nginx {cell['nginx_misses'] / len(requests):.3f} ({cell['nginx_mean_entries']} held on average, "
          f"{cell['nginx_seconds']:.1f} s), LRU {cell['lru_misses'] / len(requests):.3f}", flush=True)
    return cell


def main():
    names = [name for name in traces.TRACES if not ONLY or name in ONLY]
    loaded = {name: traces.TRACES[name][1]() for name in names}
    cells = []
    began = time.time()
    try:
        origin = Origin({size for requests in loaded.values() for _, size in requests})
        sizing = Sizing(origin)
        print(f"replay: a {traces.SMALL_BODY}-byte answer costs Larder's memory tier {sizing.entry_cost:.0f} bytes; "
              f"nginx's cache file adds {sizing.nginx_header} bytes to a body; its keys zone holds {sizing.keys_per_page} "
              f"keys a page, less {sizing.zone_overhead}")
        for name in names:
            objects = traces.distinct(loaded[name])
            for share in SHARES:
                cells.append(run_cell(origin, name, share, loaded[name], objects, sizing))
    finally:
        stop_all()
    report(cells, sizing, time.time() - began)


def report(cells, sizing, seconds):
    lines = ["# make bench: replay", "",
             f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores, {seconds / 60:.1f} minutes. What reached the origin, "
             f"each trace in order over one connection ({WINDOW} pipelined); Larder's memory tier alone (W-TinyLFU), nginx "
             "proxy_cache, exact LRU at the entries Larder held. Budget: a share of the distinct keys, rounded up to what an "
             f"nginx keys zone holds ({sizing.keys_per_page} keys a 4 KiB page, less {sizing.zone_overhead}); Larder that many "
             f"entries at {sizing.entry_cost:.0f} bytes each, nginx that many keys and 4 KiB blocks. adapt_size: Larder that share "
             "of the distinct objects' bytes (and its per-entry cost), nginx that share of their files' blocks "
             f"({sizing.nginx_header} bytes of header each) and as many keys as Larder held.", "",
             "| trace | budget | requests | distinct | Larder entries | not admitted | nginx entries: mean, peak | miss ratio Larder | nginx | LRU | "
             "Larder / LRU | Larder / nginx | origin MB Larder | nginx | LRU | replay s Larder | nginx |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in cells:
        n = c["requests"]
        lines.append(f"| {c['trace']} | {c['share']:.0%} | {n:,} | {c['distinct']:,} | {c['larder_entries']:,} | {c['larder_rejected']:,} | {c['nginx_mean_entries']:,}, {c['nginx_peak_entries']:,} | "
                     f"{c['larder_misses'] / n:.3f} | {c['nginx_misses'] / n:.3f} | {c['lru_misses'] / n:.3f} | "
                     f"{c['larder_misses'] / c['lru_misses']:.3f}× | {c['larder_misses'] / max(c['nginx_misses'], 1):.3f}× | "
                     f"{c['larder_bytes'] / 1e6:.1f} | {c['nginx_bytes'] / 1e6:.1f} | {c['lru_bytes'] / 1e6:.1f} | "
                     f"{c['larder_seconds']:.1f} | {c['nginx_seconds']:.1f} |")
    on_disk = [c for c in cells if "disk_misses" in c]
    if on_disk:
        lines += ["", f"The disk tier at nginx's budget (its blocks), the memory tier {DISK_MEMORY} in front, exact LRU at the entries "
                  "the disk held, one request at a time, each miss's write indexed before the next:", "",
                  "| trace | budget | disk entries | not admitted | writes skipped | writes lagged | miss ratio Larder's disk | nginx | LRU | "
                  "Larder / LRU | Larder / nginx | replay s |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {c['trace']} | {c['share']:.0%} | {c['disk_entries']:,} | {c['disk_rejected']:,} | {c['disk_skipped']:,} | {c['disk_lagged']:,} | {c['disk_misses'] / c['requests']:.3f} | "
                  f"{c['nginx_misses'] / c['requests']:.3f} | {c['disk_lru_misses'] / c['requests']:.3f} | "
                  f"{c['disk_misses'] / c['disk_lru_misses']:.3f}× | {c['disk_misses'] / max(c['nginx_misses'], 1):.3f}× | "
                  f"{c['disk_seconds']:.1f} |" for c in on_disk]
    by_bytes = [c for c in cells if "byte_lru_misses" in c]
    if by_bytes:
        overhead = sizing.entry_cost - traces.SMALL_BODY
        lines += ["", f"adapt_size by bytes: exact LRU at Larder's budget, each object its size and {overhead:.0f} bytes besides, "
                  "misses " + ", ".join(f"{c['byte_lru_misses'] / c['requests']:.3f} at {c['share']:.0%} (Larder / it "
                                        f"{c['larder_misses'] / c['byte_lru_misses']:.3f}×)" for c in by_bytes) + "."]
    lines += ["", "Traces: " + "; ".join(f"{name}: {traces.TRACES[name][0]}" for name in dict.fromkeys(c["trace"] for c in cells)) + "."]
    lines += [""] + judged(cells)
    publish(lines, "replay.md")


def judged(cells):
    """The targets, over the memory tier's rows and the disk tier's alike."""
    rows = [(f"{c['trace']} at {c['share']:.0%}", c, c["larder_misses"], c["lru_misses"]) for c in cells]
    rows += [(f"{c['trace']} at {c['share']:.0%}, disk", c, c["disk_misses"], c["disk_lru_misses"]) for c in cells if "disk_misses" in c]
    out = []
    for key, chosen, ratio in [
            ("replay-skewed", [r for r in rows if r[1]["trace"] in SKEWED and r[1]["share"] < 0.1], lambda r: r[2] / r[3]),
            ("replay-lru", rows, lambda r: r[2] / r[3]),
            ("replay-nginx", rows, lambda r: r[2] / max(r[1]["nginx_misses"], 1))]:
        if chosen:
            out.append(targets.judge(key, *max((ratio(r), r[0]) for r in chosen)))
    return out


if __name__ == "__main__":
    main()
