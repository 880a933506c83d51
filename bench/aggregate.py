#!/usr/bin/env python3
"""make bench, aggregate section: what a declared aggregate costs, in one run.

- A three-part aggregate (`/trio`: the weather, the balance, and the simulator's forecast
  through a pass-through route), every part a memory hit, against a single memory hit
  (`/weather`) on the same Larder: req/s and server CPU per request over BENCH_ROUNDS (3)
  interleaved rounds, 64 connections (the table keeps each one's best round; the ratio is
  the median of the rounds' own).
- The same with one optional part whose origin takes 200 ms and is never fresh (an upstream
  simulator with `--latency 200ms --max-age 0`), under a 100 ms deadline (`/late`): p50 and
  p99 over 8 connections, and whether answers that start a fetch are partial and say so
  (`Larder-Missing`).

Reported, not judged: make bench's targets are ratios to nginx (bench/targets.py).

Loopback only; every process is stopped by its own pid.
"""
import os
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import WORK, cpu_seconds, free_port, publish, simulator, start, stop_all, wait_for, wrk  # noqa: E402

LARDER = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
FORECAST = "/v1/forecast?latitude={lat}&longitude={lon}&current=temperature_2m,weather_code"
SINGLE = "/weather?lat=52.52&lon=13.41"
TRIO = "/trio?lat=52.52&lon=13.41"
LATE = "/late?lat=52.52&lon=13.41"


def config(port, sim_port, slow_port):
    return f"""port: {port}
cache-dir: {WORK}/larder-aggregate
log-level: warning
weather-url: http://127.0.0.1:{sim_port}/v1/forecast
balance-url: http://127.0.0.1:{sim_port}/balance
routes:
  /v1: {{origin: "http://127.0.0.1:{sim_port}"}}
  /slow: {{origin: "http://127.0.0.1:{slow_port}", strip-prefix: true}}
aggregates:
  /trio:
    parts:
      weather: /weather?lat={{lat}}&lon={{lon}}
      balance: /balance
      forecast: "{FORECAST}"
  /late:
    deadline: 100ms
    parts:
      weather: /weather?lat={{lat}}&lon={{lon}}
      balance: /balance
      late: {{target: "/slow{FORECAST}", required: false}}
"""


def fetch(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def measure(proc, port, path, connections, duration=None):
    before = cpu_seconds(proc.pid)
    rps, p50, p99, requests = wrk(port, connections, path=path, **({"duration": duration} if duration else {}))
    cpu = (cpu_seconds(proc.pid) - before) / max(requests, 1) * 1e6
    print(f"    {path:32} c={connections:<3} {rps:9.0f} req/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  {cpu:5.1f} µs CPU/req")
    return {"rps": rps, "p50": p50, "p99": p99, "cpu_us": cpu}


def main():
    try:
        sim_port, slow_port, port = free_port(), free_port(), free_port()
        start([simulator(), "upstream-sim", "--port", str(sim_port), "--latency", "50ms", "--max-age", "3600"], f"{WORK}/agg-sim.log")
        start([simulator(), "upstream-sim", "--port", str(slow_port), "--latency", "200ms", "--max-age", "0"], f"{WORK}/agg-slow.log")
        wait_for(sim_port, "/balance")
        wait_for(slow_port, "/balance")
        path = f"{WORK}/aggregate.yaml"
        open(path, "w").write(config(port, sim_port, slow_port))
        larder = start([LARDER, "serve", "--config", path], f"{WORK}/larder-aggregate.log")
        wait_for(port, "/livez")
        for target in (SINGLE, TRIO, TRIO, LATE):
            status, _, _ = fetch(port, target)
            if status != 200:
                raise SystemExit(f"{target} answered {status}")
        _, headers, _ = fetch(port, TRIO)
        if not headers.get("Cache-Status", "").startswith("larder; hit") or headers.get("Larder-Parts", "").count("; hit;") != 3:
            raise SystemExit(f"/trio's parts are not all memory hits: {headers}")
        time.sleep(0.3)  # no fetch of the late part in flight: this request starts one and cannot wait for it
        status, headers, _ = fetch(port, LATE)
        if status != 200 or headers.get("Larder-Missing") != "late":
            raise SystemExit(f"/late is not a partial answer that names its late part: {status} {headers}")

        single, trio = [], []
        for rep in range(1, ROUNDS + 1):
            print(f"aggregate, round {rep}")
            single.append(measure(larder, port, SINGLE, 64))
            trio.append(measure(larder, port, TRIO, 64))
        print("aggregate with a late part")
        late = measure(larder, port, LATE, 8)
        partial = 0
        for _ in range(20):
            time.sleep(0.3)
            partial += fetch(port, LATE)[1].get("Larder-Missing") == "late"
    finally:
        stop_all()
    best_single, best_trio = max(single, key=lambda r: r["rps"]), max(trio, key=lambda r: r["rps"])
    # Each round measures the two back to back; their ratio within a round is the figure (the
    # machine's state drifts between rounds by more than the difference measured).
    ratios = sorted(t["cpu_us"] / s["cpu_us"] for s, t in zip(single, trio))
    ratio = statistics.median(ratios)
    lines = ["# make bench: aggregates", "",
             "| cell | req/s | p50 ms | p99 ms | server CPU µs/req |", "| --- | ---: | ---: | ---: | ---: |",
             f"| single memory hit `{SINGLE}`, 64 connections | {best_single['rps']:.0f} | {best_single['p50']:.2f} | "
             f"{best_single['p99']:.2f} | {best_single['cpu_us']:.1f} |",
             f"| three-part aggregate, all memory hits, 64 connections | {best_trio['rps']:.0f} | {best_trio['p50']:.2f} | "
             f"{best_trio['p99']:.2f} | {best_trio['cpu_us']:.1f} |",
             f"| three-part aggregate, one part 200 ms away, deadline 100 ms, 8 connections | {late['rps']:.0f} | {late['p50']:.2f} | "
             f"{late['p99']:.2f} | {late['cpu_us']:.1f} |", "",
             f"Aggregate CPU per request / single hit's, within each round: {', '.join(f'{r:.2f}×' for r in ratios)}; "
             f"median {ratio:.2f}×.",
             f"Late part: p99 {late['p99']:.1f} ms against a deadline of 100 ms; {partial} of 20 answers sampled one by one after the run (each starting its own fetch) were partial and named it. "
             "Under load some answers are whole: a request that joins a fetch already under way gets its answer once it lands within the deadline."]
    publish(lines, "aggregate.md")


if __name__ == "__main__":
    main()
