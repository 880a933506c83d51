#!/usr/bin/env python3
"""Writes layout/hot-functions.txt, the linker's symbol ordering file for the release build.

A miss runs code from thousands of functions once each, after its event loop slept for the
upstream's answer: linked in the default order they lie across megabytes of text, and a
miss waits on the caches and the TLB for each. Linked first and side by side, they share
pages and cache lines (docs/performance.md, the code's layout).

The list is what the event loop runs per request on the paths `larder-bench` drives: a miss
through a route, a miss through a pass-through route, a disk hit, and a memory hit logged
and quiet. Each path runs under callgrind twice, with 100 and 300 requests; the functions
that ran more in the second run are the path's, in the order of their names (so the file
changes only where the code a path runs does), the paths in that order.

Left out: functions of the toolchain's static libraries that sit in one large section with
many others (the standard library's own code is one 1.6 MB section), since ordering one
would move the whole section to the front.

usage: scripts/code-layout.py LARDER LARDER-BENCH [OUTPUT]
Both binaries are release builds with the Makefile's RELEASE_FLAGS (`make layout`).
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

if len(sys.argv) < 3:
    sys.exit(__doc__)
# The bench's helpers: free ports, the simulator's binary, starting, waiting for and stopping
# processes (bench.py takes LARDER as its first argument too).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from bench import WORK, free_port, simulator, start, stop_all, wait_for  # noqa: E402

RUNS = (100, 300)
# A section this large in a static library holds many functions (a function gets one of
# its own in the libraries that are built with function sections).
SHARED_SECTION_BYTES = 16 * 1024


def callgrind_costs(path):
    """Instructions per (object, function) in a callgrind file written with --dump-instr=yes."""
    costs = collections.Counter()
    obj = fn = None
    skip = False
    with open(path, errors="replace") as f:
        for line in f:
            if skip:
                skip = False
            elif line.startswith("ob="):
                obj = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip().split("'")[0]  # callgrind marks recursion levels with 'N
            elif line.startswith("calls="):
                skip = True  # the next line is the call's inclusive cost, not the function's own
            elif line.startswith("0x"):
                costs[(obj, fn)] += int(line.split()[-1])
    return costs


def path_functions(bench, work, name, args, env):
    """The functions of `bench` the event loop runs per request on one path, by name."""
    runs = []
    for count in RUNS:
        out = os.path.join(work, f"{name}.{count}")
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=yes",
                        "--compress-pos=no", "--compress-strings=no", "--toggle-collect=*EventLoopC3run*",
                        f"--callgrind-out-file={out}", bench, name, str(count), *args],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=600)
        runs.append(callgrind_costs(out))
    fewer, more = runs
    return sorted(fn for (obj, fn), cost in more.items() if obj == bench and cost > fewer.get((obj, fn), 0))


def shared_section_symbols():
    """Symbols of the toolchain's static libraries defined in a large shared .text section."""
    info = json.loads(subprocess.run(["swift", "-print-target-info"], capture_output=True, text=True, check=True).stdout)
    static = info["paths"]["runtimeResourcePath"].replace("/lib/swift", "/lib/swift_static") + "/linux"
    symbols = set()
    for library in sorted(os.listdir(static)):
        if not library.endswith(".a"):
            continue
        with tempfile.TemporaryDirectory() as objects:
            subprocess.run(["ar", "x", os.path.join(static, library)], cwd=objects, check=True)
            for name in os.listdir(objects):
                symbols |= large_section_symbols(os.path.join(objects, name))
    return symbols


def large_section_symbols(obj):
    sections = subprocess.run(["readelf", "-SW", obj], capture_output=True, text=True, errors="replace").stdout
    large = set()
    for line in sections.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[0].startswith("[") and fields[1] == ".text" and fields[2] == "PROGBITS":
            if int(fields[5], 16) > SHARED_SECTION_BYTES:
                large.add(fields[0].strip("[]"))
    if not large:
        return set()
    table = subprocess.run(["readelf", "-sW", obj], capture_output=True, text=True, errors="replace").stdout
    return {fields[7] for fields in map(str.split, table.splitlines()) if len(fields) >= 8 and fields[6] in large}


def main():
    bench = sys.argv[2]
    output = sys.argv[3] if len(sys.argv) > 3 else "layout/hot-functions.txt"
    # valgrind cannot read the DWARF 5 that Swift writes.
    stripped = os.path.join(WORK, "larder-bench")
    subprocess.run(["objcopy", "--strip-debug", bench, stripped], check=True)
    port = free_port()
    start([simulator(), "upstream-sim", "--port", str(port), "--latency", "1ms", "--max-age", "3600"],
          os.path.join(WORK, "simulator.log"))
    try:
        wait_for(port, "/balance")
        origin = f"http://127.0.0.1:{port}"
        env = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")
        paths = [("miss-path", [origin, "warning"]), ("pass-through-miss-path", [origin, "warning"]),
                 ("disk-hit-path", ["warning"]), ("hit-path", ["warning"]), ("hit-path", ["info"])]
        ordered = []
        for name, args in paths:
            ordered += path_functions(stripped, WORK, name, args, env)
    finally:
        stop_all()
    shared = shared_section_symbols()
    seen = set()
    lines = []
    for fn in ordered:
        if fn not in seen and fn not in shared and not fn.startswith("0x"):
            seen.add(fn)
            lines.append(fn)
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    with open(output, "w") as f:
        f.write("# Written by scripts/code-layout.py (make layout); the linker's --symbol-ordering-file.\n")
        f.write("\n".join(lines) + "\n")
    print(f"{output}: {len(lines)} functions")


if __name__ == "__main__":
    main()
