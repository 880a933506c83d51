#!/usr/bin/env python3
"""make bench's targets: every judged cell is a ratio to nginx (or to Larder's own memory
hits, or to exact LRU over the same requests) measured in the same run, never an absolute
time, as these shared machines read the same tree's cells far apart from one run to the next.

Each section's script calls `judge(key, value, cell)` as it reports; the figures gather in
bench/results/targets.json. `targets.py --reset` empties it (make bench's first step);
`targets.py` prints the table and exits 1 when a target is not met or was not measured.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results", "targets.json")

# key: (what is judged, ">=" or "<=", bound, unit)
TARGETS = {
    "memory-hits": ("memory hits, req/s: Larder / nginx proxy_cache (quiet)", ">=", 1.3, "×"),
    "memory-hits-logged": ("memory hits, req/s: Larder / nginx proxy_cache (both logging)", ">=", 1.3, "×"),
    "disk-hits": ("disk hits, req/s: Larder's disk hits / its memory hits", ">=", 0.5, "×"),
    "miss-overhead": ("miss overhead p50: Larder / nginx proxy_cache", "<=", 1.1, "×"),
    "storm": ("miss storm, req/s: Larder / nginx proxy_cache", ">=", 1.0, "×"),
    "storm-kept": ("miss storm: share of Larder's answers kept on disk", ">=", 95.0, " %"),
    "large-from-cache": ("100 MiB from cache, MB/s: Larder / nginx proxy_cache", ">=", 0.9, "×"),
    "large-streamed-miss": ("1 GiB streamed miss, whole transfer's speed: Larder / nginx proxy_cache", ">=", 0.9, "×"),
    "traced-hits": ("memory hits, req/s: every request traced and exported / untraced", ">=", 0.8, "×"),
    # The replay section (bench/replay.py): requests that reached the origin, at the same budget.
    "replay-skewed": ("replay misses at 1 % and 5 % budgets, web07, orm-busy, Zipf: Larder / exact LRU", "<=", 0.93, "×"),
    "replay-lru": ("replay misses, every trace and budget: Larder / exact LRU", "<=", 1.02, "×"),
    "replay-nginx": ("replay misses, every trace and budget: Larder / nginx proxy_cache", "<=", 1.0, "×"),
}


def met(key, value):
    _, sense, bound, _ = TARGETS[key]
    return value >= bound if sense == ">=" else value <= bound


def judge(key, value, cell):
    """Records one judged figure (the worst of its cells: `cell` names it) and returns the
    sentence a section's table prints under it."""
    figures = load()
    figures[key] = {"value": value, "cell": cell}
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(figures, f, indent=1)
    what, sense, bound, unit = TARGETS[key]
    return f"Target: {what} {sense.replace('>=', '≥').replace('<=', '≤')} {bound:g}{unit}: {value:.2f}{unit} ({cell}), " \
           f"{'met' if met(key, value) else 'NOT met'}."


def load():
    try:
        with open(RESULTS) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def main():
    if sys.argv[1:] == ["--reset"]:
        if os.path.exists(RESULTS):
            os.remove(RESULTS)
        return
    figures = load()
    lines = ["| target | bound | this run | cell judged (the worst) | verdict |", "| --- | ---: | ---: | --- | --- |"]
    failed = []
    for key, (what, sense, bound, unit) in TARGETS.items():
        figure = figures.get(key)
        if figure is None:
            verdict, shown, cell = "not measured", "-", "-"
        else:
            verdict = "met" if met(key, figure["value"]) else "NOT met"
            shown, cell = f"{figure['value']:.2f}{unit}", figure["cell"]
        if verdict != "met":
            failed.append(key)
        lines.append(f"| {what} | {sense.replace('>=', '≥').replace('<=', '≤')} {bound:g}{unit} | {shown} | {cell} | {verdict} |")
    text = "\n".join(["# make bench: targets", ""] + lines) + "\n"
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "targets.md"), "w") as f:
        f.write(text)
    print(text)
    if failed:
        sys.exit(f"make bench: targets not met or not measured: {', '.join(failed)}")


if __name__ == "__main__":
    main()
