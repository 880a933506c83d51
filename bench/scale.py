#!/usr/bin/env python3
"""make bench, scale section: Larder and nginx proxy_cache side by side in one run, each
with a million stored entries and under a miss storm.

- Start-up with BENCH_SCALE_ENTRIES entries (1,000,000): time until the port accepts and until a
  stored answer is served as a hit (each the median of BENCH_STARTS (3) starts), and until the
  index is whole (Larder: `/readyz` no longer says `loading`; nginx: its cache loader's closing
  line, after its fixed 60 s wait), then the memory the index takes per entry (PSS over every
  process plus the machine's growth in shared memory, where nginx's keys zone lives, less the
  same on an empty cache). Larder's entries are written in its own format by `larder-bench
  fill-disk`; nginx's are filled through nginx.
- A miss storm of BENCH_STORM_SECONDS (30) with 32 connections, every key new: req/s, the
  share of answers persisted on disk, and the peak memory (sampled twice a second); the
  best of BENCH_STORM_ROUNDS (2) interleaved rounds, who goes first turning with each round,
  each begun after a `sync` (the first a minute after one, `settle_deletions`).

Both caches use a small-JSON nginx origin, sizes that hold every entry (Larder --disk-limit
16GiB, nginx max_size=16g and a 160 MiB keys zone) and Larder --memory-limit 64MiB. Loopback
only; every process is stopped by its own pid; the caches are deleted at the end.
"""
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import NGINX, ROOT, cpu_seconds, free_port, publish, start, stat_ticks, stop_all, tree, wait_for  # noqa: E402
import targets  # noqa: E402

LARDER, LARDER_BENCH = sys.argv[1], sys.argv[2]
ENTRIES = int(os.environ.get("BENCH_SCALE_ENTRIES", "1000000"))
STORM_SECONDS = int(os.environ.get("BENCH_STORM_SECONDS", "30"))
# Each storm cell keeps the best of this many interleaved rounds: the disk's writeback from
# one run slows the next by up to half, whichever server runs.
STORM_ROUNDS = int(os.environ.get("BENCH_STORM_ROUNDS", "2"))
STARTS = int(os.environ.get("BENCH_STARTS", "3"))
MEMORY_LIMIT_MIB = 64
# How long ext4 holds back an inode freed before a `sync` (its RECENTCY_MIN), and a second.
RECENTLY_FREED_SECONDS = int(os.environ.get("BENCH_RECENTLY_FREED_SECONDS", "61"))
WORK = os.environ.get("BENCH_SCALE_DIR") or os.path.join(ROOT, ".build", "bench-scale")


def stop(proc):
    os.killpg(proc.pid, 15)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def pss_mib(pid):
    """Proportional set size over the process and its children: shared pages counted once."""
    total = 0
    for p in tree(pid):
        try:
            for line in open(f"/proc/{p}/smaps_rollup"):
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1024


def shmem_mib():
    """The machine's shared memory in use: nginx's keys zone lives there, mapped by every
    worker but in none's page tables until touched, so PSS alone does not see it."""
    for line in open("/proc/meminfo"):
        if line.startswith("Shmem:"):
            return int(line.split()[1]) / 1024
    return 0.0


def memory_mib(pid, shmem_before):
    return pss_mib(pid) + max(0.0, shmem_mib() - shmem_before)


def request(port, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def until(condition, timeout, step=0.001):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return time.monotonic()
        except OSError:
            pass
        time.sleep(step)
    return None


def accepts(port):
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def files_in(directory):
    return sum(len([f for f in files if not f.startswith(".")]) for folder, _, files in os.walk(directory)
               if not folder.endswith("/tmp"))


def larder_args(port, cache, origin_port):
    return [LARDER, "serve", "--port", str(port), "--cache-dir", cache, "--disk-limit", "16GiB",
            "--memory-limit", f"{MEMORY_LIMIT_MIB}MiB", "--log-level", "warning", "--route", f"/=http://127.0.0.1:{origin_port}"]


def nginx_conf(mode, port, origin_port, cache, workers):
    location = ("default_type application/json;\n            add_header Cache-Control \"max-age=86400\";\n"
                "            return 200 '{\"path\":\"$uri\",\"note\":\"a small answer, as an API gives\"}';") if mode == "origin" else (
                "proxy_pass http://origin;\n            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n"
                "            proxy_cache scale;\n            add_header X-Cache-Status $upstream_cache_status;")
    text = open(os.path.join(ROOT, "bench", "nginx-scale.conf.template")).read()
    for key, value in {"work": WORK, "mode": mode, "port": str(port), "origin_port": str(origin_port), "cache": cache,
                       "workers": str(workers), "location": location}.items():
        text = text.replace("{" + key + "}", value)
    path = f"{WORK}/scale-{mode}.conf"
    open(path, "w").write(text)
    return [NGINX, "-c", path, "-p", WORK]


def settle_deletions():
    """Waits until the file system no longer holds back inodes freed by what ran before (make
    bench's earlier sections delete their caches as they exit). ext4 without a journal, as on
    these machines, holds back each inode freed within the last minute once its inode table is
    written out (`sync`; five minutes more before), and scans past every one of them for each
    new file (`recently_deleted` under `find_inode_bit`): a storm begun seconds after deleting
    about 180,000 files spent 29 % of Larder's CPU samples in that scan and answered 9,598
    req/s, one begun minutes later 4 % and 11,525 (perf, 10 s storms by hand)."""
    os.sync()
    print(f"scale: waiting {RECENTLY_FREED_SECONDS} s for inodes freed before this section to be reusable")
    time.sleep(RECENTLY_FREED_SECONDS)


def started(args, port, is_hit, log):
    """Starts the server once the disk has written what came before (`sync`); returns it, when it
    began, and the milliseconds until it accepts and until it serves a stored entry as a hit."""
    os.sync()
    began = time.monotonic()
    proc = start(args, log)
    listening = until(lambda: accepts(port), 30)
    hit = until(lambda: is_hit(request(port, f"/item/{ENTRIES // 2}")), 30)
    ms = lambda t: (t - began) * 1000 if t else float("nan")  # noqa: E731
    return proc, began, ms(listening), ms(hit)


def startup(name, args, port, is_hit, is_whole):
    """Times from the process's start until it accepts, serves a stored entry, and has its whole
    index, then takes the memory. Each start begins after `sync`: the fill writes a million
    files in under a minute, and a start-up during their writeback measured that (119 ms to
    listen in one run, against 23-36 ms in others). Listening and the first hit are the median
    of BENCH_STARTS starts: one start's 20 ms is at the mercy of the machine (the same build,
    the first start after a fill, measured 103 ms in one run and 22 in the next; by hand,
    57 ms, then 23-28 ms for four starts after it)."""
    shmem = shmem_mib()
    proc, began, listening, hit = started(args, port, is_hit, f"{WORK}/{name}-startup.log")
    peak = [0.0]

    def whole_yet():
        peak[0] = max(peak[0], memory_mib(proc.pid, shmem))
        return is_whole()
    whole = until(whole_yet, 900, step=0.2)
    time.sleep(1)
    memory = memory_mib(proc.pid, shmem)
    stop(proc)
    listens, hits = [listening], [hit]
    for n in range(1, STARTS):
        proc, _, listening, hit = started(args, port, is_hit, f"{WORK}/{name}-startup-{n}.log")
        stop(proc)
        listens.append(listening)
        hits.append(hit)
    cell = {"listens_ms": listens, "hits_ms": hits, "whole_s": (whole - began) if whole else float("nan"),
            "pss_mib": memory, "peak_mib": max(peak[0], memory)}
    print(f"  {name}: {cell}")
    return cell


def empty_pss(args, port, log):
    shmem = shmem_mib()
    proc = start(args, log)
    wait_for(port, "/item/warm")
    time.sleep(1)
    memory = memory_mib(proc.pid, shmem)
    stop(proc)
    return memory


def loop_cpu_seconds(pid):
    """CPU of Larder's event-loop threads (named `larder-loop-N`), which live as long as it does."""
    def name(task):
        try:
            return open(f"/proc/{pid}/task/{task}/comm").read()
        except FileNotFoundError:  # a worker thread that has just ended
            return ""
    loops = [task for task in os.listdir(f"/proc/{pid}/task") if name(task).startswith("larder-loop")]
    return sum(stat_ticks(f"/proc/{pid}/task/{task}/stat") for task in loops) / os.sysconf("SC_CLK_TCK")


def storm(name, args, port, cache):
    """A miss storm: wrk's answers, the share of them on disk once writes settle, peak memory, and
    the server's CPU per answer (every thread and worker): the storm shares two cores with wrk
    and the origin, so its rate follows what each answer costs."""
    proc = start(args, f"{WORK}/{name}-storm.log")
    wait_for(port, "/item/warm")
    peak, running = [0.0], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], pss_mib(proc.pid))
            time.sleep(0.5)
    sampler = threading.Thread(target=sample)
    sampler.start()
    cpu, loops = cpu_seconds(proc.pid), loop_cpu_seconds(proc.pid)
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{STORM_SECONDS}s", "-s", os.path.join(ROOT, "bench", "storm.lua"),
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
    cpu, loops = cpu_seconds(proc.pid) - cpu, loop_cpu_seconds(proc.pid) - loops
    answered = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    answered -= int(errors.group(1)) if errors else 0
    persisted, last = 0, -1
    settled = time.monotonic() + 30
    while time.monotonic() < settled and persisted != last:
        last = persisted
        time.sleep(2)
        persisted = files_in(cache)
    running[0] = False
    sampler.join()
    stop(proc)
    return {"rps": answered / STORM_SECONDS, "answered": answered, "persisted": persisted, "peak_mib": peak[0],
            "cpu_us": cpu / max(answered, 1) * 1e6, "loops_us": loops / max(answered, 1) * 1e6}


def main():
    # A timeout's SIGTERM still stops every process started here (the `finally` below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("scale: stopped"))
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    results = {}
    try:
        origin_port = free_port()
        origin = start(nginx_conf("origin", origin_port, origin_port, f"{WORK}/unused-cache", 1), f"{WORK}/origin.log")
        wait_for(origin_port, "/item/0")

        # The storms first, on a quiet disk (deleting a million files keeps it busy for a while).
        settle_deletions()
        port, proxy_port = free_port(), free_port()
        # Each cell has a directory of its own, all deleted at the end: this machine's file
        # system discards freed blocks at once, so deleting 100,000 files takes a minute and
        # would slow whatever runs meanwhile.
        rounds = []
        for round in range(STORM_ROUNDS):
            print(f"scale: {STORM_SECONDS} s miss storms, round {round + 1} of {STORM_ROUNDS}")
            # Who storms first turns with each round, so neither server always has the same
            # place: by hand, the place moved a round's rate by several percent either way.
            order = ("larder", "nginx") if round % 2 == 0 else ("nginx", "larder")
            rounds.append({})
            for name in order:
                cache = f"{WORK}/{name}-storm-{round}"
                args = larder_args(port, cache, origin_port) if name == "larder" else nginx_conf("proxy", proxy_port, origin_port, cache, 2)
                os.sync()
                cell = storm(name, args, port if name == "larder" else proxy_port, cache)
                print(f"  {name}: {cell['rps']:,.0f} req/s, {cell['persisted']:,} of {cell['answered']:,} answers persisted, "
                      f"{cell['cpu_us']:.1f} µs of CPU per answer")
                rounds[-1][name] = cell["rps"]
                if cell["rps"] > results.get(f"{name} storm", {"rps": 0})["rps"]:
                    results[f"{name} storm"] = cell
        results["storm rounds"] = rounds

        print(f"scale: writing {ENTRIES:,} entries in Larder's format")
        subprocess.run([LARDER_BENCH, "fill-disk", f"{WORK}/larder-million", str(ENTRIES), f"http://127.0.0.1:{origin_port}"], check=True)
        results["larder empty"] = empty_pss(larder_args(port, f"{WORK}/larder-empty", origin_port), port, f"{WORK}/larder-empty.log")
        results["larder startup"] = startup(
            "larder", larder_args(port, f"{WORK}/larder-million", origin_port), port,
            lambda answer: answer[0] == 200 and "hit" in answer[1].get("cache-status", ""),
            lambda: b"loading" not in request(port, "/readyz")[2])

        print(f"scale: filling nginx proxy_cache with {ENTRIES:,} entries through nginx")
        proxy_args = nginx_conf("proxy", proxy_port, origin_port, f"{WORK}/nginx-million", 2)
        proxy = start(proxy_args, f"{WORK}/nginx-fill.log")
        wait_for(proxy_port, "/item/warm")
        env = dict(os.environ, FILL_COUNT=str(ENTRIES), FILL_THREADS="2", FILL_MARK=f"{WORK}/filled-")
        fill = start(["wrk", "-t2", "-c32", "-d900s", "-s", os.path.join(ROOT, "bench", "fill.lua"), f"http://127.0.0.1:{proxy_port}/"],
                     f"{WORK}/nginx-fill-wrk.log", env=env)
        if not until(lambda: all(os.path.exists(f"{WORK}/filled-{n}") for n in range(2)), 900, step=0.5):
            raise SystemExit("nginx was not filled within 900 s")
        stop(fill)
        stop(proxy)
        results["nginx filled"] = files_in(f"{WORK}/nginx-million")
        results["nginx empty"] = empty_pss(nginx_conf("proxy", proxy_port, origin_port, f"{WORK}/nginx-empty", 2), proxy_port,
                                           f"{WORK}/nginx-empty.log")
        error_log = f"{WORK}/scale-proxy-error.log"
        open(error_log, "w").close()
        results["nginx startup"] = startup(
            "nginx", nginx_conf("proxy", proxy_port, origin_port, f"{WORK}/nginx-million", 2), proxy_port,
            lambda answer: answer[0] == 200 and answer[1].get("x-cache-status") == "HIT",
            lambda: "http file cache:" in open(error_log).read())

    finally:
        stop_all()
        report(results)
        print(f"scale: deleting {WORK} (minutes, with a million files)")
        shutil.rmtree(WORK, ignore_errors=True)


def starts(times):
    """The median, then every start in order: `22.1 (57.3, 22.1, 21.5)`."""
    return f"{statistics.median(times):.1f} ({', '.join(f'{t:.1f}' for t in times)})"


def report(r):
    if not all(cell in r for cell in ("storm rounds", "larder storm", "nginx storm", "larder empty", "larder startup",
                                      "nginx filled", "nginx empty", "nginx startup")):
        return  # stopped early: the cells measured were printed as they came
    ls, ns = r["larder startup"], r["nginx startup"]
    per_entry = lambda s, empty: (s["pss_mib"] - empty) * 1024 * 1024 / ENTRIES  # noqa: E731
    larder_bytes, nginx_bytes = per_entry(ls, r["larder empty"]), per_entry(ns, r["nginx empty"])
    lines = [f"Scale ({ENTRIES:,} stored entries; nginx's filled through it: {r['nginx filled']:,} files):", "",
             f"| start-up | listening ms (median of {STARTS}) | first hit ms | index whole s | memory MiB | index bytes per entry |",
             "|---|---|---|---|---|---|",
             f"| larder | {starts(ls['listens_ms'])} | {starts(ls['hits_ms'])} | {ls['whole_s']:.1f} | {ls['pss_mib']:.1f} | {larder_bytes:.0f} |",
             f"| nginx proxy_cache | {starts(ns['listens_ms'])} | {starts(ns['hits_ms'])} | {ns['whole_s']:.1f} | {ns['pss_mib']:.1f} | {nginx_bytes:.0f} |",
             "", f"Miss storm, {STORM_SECONDS} s, 32 connections, every key new (Larder --memory-limit {MEMORY_LIMIT_MIB}MiB):", "",
             "| peer | req/s | answers | persisted | share | peak PSS MiB | server CPU µs/answer | Larder / nginx req/s |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ("larder", "nginx"):
        s = r[f"{name} storm"]
        ratio = f"{r['larder storm']['rps'] / r['nginx storm']['rps']:.2f}×" if name == "larder" else ""
        lines.append(f"| {'nginx proxy_cache' if name == 'nginx' else name} | {s['rps']:,.0f} | {s['answered']:,} | {s['persisted']:,} | "
                     f"{100 * min(s['persisted'], s['answered']) / max(1, s['answered']):.1f} % | {s['peak_mib']:.1f} | {s['cpu_us']:.1f} | {ratio} |")
    lines += ["", "Every round, in the order run (req/s; the table keeps each server's best): " + "; ".join(
        f"{' then '.join(f'{name} {rps:,.0f}' for name, rps in cells.items())} ({cells['larder'] / cells['nginx']:.2f}×)"
        for cells in r["storm rounds"]) + "."]
    ls_storm = r["larder storm"]
    lines += ["", targets.judge("storm", ls_storm["rps"] / r["nginx storm"]["rps"], f"best of {STORM_ROUNDS} rounds each"),
              targets.judge("storm-kept", 100 * min(ls_storm["persisted"], ls_storm["answered"]) / max(1, ls_storm["answered"]),
                            f"{ls_storm['persisted']:,} of {ls_storm['answered']:,} answers")]
    lines += ["", f"Of Larder's {r['larder storm']['cpu_us']:.1f} µs of CPU per answer, its event loops spent "
              f"{r['larder storm']['loops_us']:.1f} and its other threads (the disk writer) the rest."]
    storm_bound = MEMORY_LIMIT_MIB + 96 + r["larder storm"]["persisted"] * max(larder_bytes, 0) / 2**20
    start_bound = MEMORY_LIMIT_MIB + 96 + ENTRIES * max(larder_bytes, 0) / 2**20
    lines += ["", f"Larder's bound (memory limit + 96 MiB + its index at the measured bytes per entry): {start_bound:.1f} MiB at start-up "
              f"(peak while loading {ls['peak_mib']:.1f}), {storm_bound:.1f} MiB in the storm (peak {r['larder storm']['peak_mib']:.1f})."]
    publish(lines, "scale.md")


if __name__ == "__main__":
    main()
