#!/usr/bin/env python3
"""make bench, tracing section: what exporting traces costs a memory hit, in one run.

Three Larders as compose ships them (but at `--log-level warning`) before one simulator:
untraced, every request sampled, and 1 % sampled (`OTEL_TRACES_SAMPLER_ARG=0.01`), the two
traced ones exporting over OTLP/HTTP to a receiver on loopback that takes each batch and
answers as a collector does (without decoding it: a collector runs elsewhere). wrk at 64
connections on one hot key, BENCH_ROUNDS (3) interleaved rounds of BENCH_DURATION (10) s;
the best round of each counts. Judged: every request sampled against untraced, req/s
(≥ 0.8×, bench/targets.py). Reported beside: 1 % sampled, server CPU per request, and the
spans the receiver got or Larder dropped (`larder_trace_spans_dropped_total`).

Loopback only; every process is stopped by its own pid.
"""
import http.server
import os
import re
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import WORK, cpu_seconds, environment_for, free_port, publish, simulator, start, stop_all, wait_for, wrk  # noqa: E402
from targets import judge  # noqa: E402

LARDER = sys.argv[1]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
HOT = "/weather?lat=52.52&lon=13.41"


class Sink:
    """Takes `POST /v1/traces` and answers an empty ExportTraceServiceResponse (zero bytes)."""

    def __init__(self):
        self.batches = 0
        self.bytes = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                sink.batches += 1
                sink.bytes += length
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def dropped(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(n) for n in re.findall(r"^larder_trace_spans_dropped_total\{[^}]*\} (\S+)$", text, re.M))


def measure(name, proc, port):
    before = cpu_seconds(proc.pid)
    rps, p50, p99, requests = wrk(port, 64, path=HOT)
    cpu = (cpu_seconds(proc.pid) - before) / max(requests, 1) * 1e6
    print(f"    {name:28} {rps:9.0f} req/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  {cpu:5.1f} µs CPU/req")
    return {"rps": rps, "p50": p50, "p99": p99, "cpu_us": cpu, "requests": requests}


def main():
    sink = Sink()
    cells = [("untraced", {}), ("every request sampled", {"OTEL_TRACES_SAMPLER_ARG": "1"}),
             ("1 % sampled", {"OTEL_TRACES_SAMPLER_ARG": "0.01"})]
    try:
        sim_port = free_port()
        start([simulator(), "upstream-sim", "--port", str(sim_port), "--latency", "50ms", "--max-age", "3600"], f"{WORK}/tracing-sim.log")
        wait_for(sim_port, "/balance")
        servers = []
        for index, (name, otel) in enumerate(cells):
            port = free_port()
            env = environment_for([LARDER])
            if otel:
                env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.port}", **otel})
            proc = start([LARDER, "serve", "--port", str(port), "--cache-dir", f"{WORK}/larder-tracing-{index}", "--log-level", "warning",
                          "--weather-url", f"http://127.0.0.1:{sim_port}/v1/forecast",
                          "--balance-url", f"http://127.0.0.1:{sim_port}/balance"], f"{WORK}/larder-tracing-{index}.log", env)
            wait_for(port, "/livez")
            urllib.request.urlopen(f"http://127.0.0.1:{port}{HOT}", timeout=10).read()
            servers.append((name, proc, port))
        results = {name: [] for name, _ in cells}
        for rep in range(1, ROUNDS + 1):
            print(f"tracing, round {rep}")
            for name, proc, port in servers:
                results[name].append(measure(name, proc, port))
        lost = {name: dropped(port) for name, _, port in servers}
    finally:
        stop_all()
    best = {name: max(rounds, key=lambda r: r["rps"]) for name, rounds in results.items()}
    base = best["untraced"]["rps"]
    ratio = best["every request sampled"]["rps"] / base
    lines = ["# make bench: tracing", "",
             "| cell, hot key, 64 connections | req/s | / untraced | p50 ms | p99 ms | server CPU µs/req | spans dropped |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, _ in cells:
        row = best[name]
        lines.append(f"| {name} | {row['rps']:.0f} | {row['rps'] / base:.2f}× | {row['p50']:.2f} | {row['p99']:.2f} | "
                     f"{row['cpu_us']:.1f} | {lost[name]:.0f} |")
    lines += ["", f"The receiver took {sink.batches} batches ({sink.bytes / 1e6:.1f} MB).", "",
              judge("traced-hits", ratio, "every request sampled, hot key, 64 connections")]
    publish(lines, "tracing.md")


if __name__ == "__main__":
    main()
