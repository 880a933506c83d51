#!/usr/bin/env python3
"""make soak: Larder (release build) at saturation for SOAK_SECONDS (default 600) with mixed
memory hits, misses and pass-through requests, against the upstream simulator on loopback.
Samples Larder's RSS every 10 s and reports errors (target 0) and RSS drift after warm-up
(target within ±10 %). Every process it starts is stopped by pid."""
import os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARDER = sys.argv[1]
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
WARMUP = min(120, SECONDS // 5)

# Process handling (start, wait, stop by process group) and RSS are bench.py's.
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench  # noqa: E402
from bench import free_port, rss_mib, start, wait_for  # noqa: E402

work = tempfile.mkdtemp(prefix="larder-soak-")
try:
    sim_port, port = free_port(), free_port()
    start([LARDER, "upstream-sim", "--port", str(sim_port), "--latency", "1ms"], f"{work}/sim.log")
    wait_for(sim_port, "/balance")
    upstream = f"http://127.0.0.1:{sim_port}"
    larder = start([LARDER, "serve", "--port", str(port), "--cache-dir", f"{work}/cache", "--memory-limit", "32MiB",
                    "--disk-limit", "128MiB", "--log-level", "warning", "--weather-url", f"{upstream}/v1/forecast",
                    "--balance-url", f"{upstream}/balance", "--route", f"/v1={upstream}"], f"{work}/larder.log")
    wait_for(port, "/livez")
    wrk = subprocess.Popen(["wrk", "-t1", "-c64", f"-d{SECONDS}s", "--timeout", "10s", "-s", f"{ROOT}/bench/soak.lua",
                            f"http://127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True, start_new_session=True)
    bench.processes.append(wrk)
    samples = []
    started = time.time()
    while wrk.poll() is None:
        time.sleep(10)
        if larder.poll() is not None:
            raise SystemExit("larder exited during the soak")
        samples.append((round(time.time() - started), rss_mib(larder.pid)))
        print(f"  t={samples[-1][0]:4d}s RSS {samples[-1][1]:6.1f} MiB", flush=True)
    out = wrk.stdout.read()
    print(out)
    after = [rss for t, rss in samples if t >= WARMUP]
    if after:
        first, last, peak = after[0], after[-1], max(after)
        drift = (last - first) / first * 100
        print(f"soak: RSS after warm-up ({WARMUP} s): first {first:.1f} MiB, last {last:.1f} MiB, peak {peak:.1f} MiB, drift {drift:+.1f} %")
finally:
    bench.stop_all()
