#!/usr/bin/env python3
"""Checks that a release binary was linked in layout/hot-functions.txt's order.

Fails when fewer than MIN_FOUND of the listed functions are in the binary (the list is stale:
`make layout` writes it again) or when those found are not side by side at the front of the
text (the linker did not take the list).

usage: scripts/check-layout.py BINARY [LIST]
"""
import subprocess
import sys

MIN_FOUND = 0.9
# Functions packed side by side span little more than their own bytes (alignment padding,
# and a few the linker places elsewhere); in the default order they span megabytes.
MAX_SPAN_RATIO = 1.5


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    listed = sys.argv[2] if len(sys.argv) > 2 else "layout/hot-functions.txt"
    with open(listed) as f:
        wanted = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    symbols = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    found = {}
    for fields in map(str.split, symbols.splitlines()):
        if len(fields) == 4 and fields[2] in "tTwW" and fields[3] in wanted:
            found.setdefault(fields[3], (int(fields[0], 16), int(fields[1], 16)))
    share = len(found) / max(1, len(wanted))
    if share < MIN_FOUND:
        sys.exit(f"{listed}: {len(found)} of {len(wanted)} functions are in {binary} ({share:.0%}); run make layout")
    # The densest run of the listed functions, where most of them lie.
    starts = sorted(start for start, _ in found.values())
    size = sum(length for _, length in found.values())
    core = starts[len(starts) // 20: len(starts) - len(starts) // 20]
    span = core[-1] - core[0]
    if span > MAX_SPAN_RATIO * size:
        sys.exit(f"{binary}: the listed functions span {span} bytes for {size} of their own; not linked in {listed}'s order")
    print(f"{listed}: {len(found)} of {len(wanted)} functions, side by side ({span} bytes for {size})")


if __name__ == "__main__":
    main()
