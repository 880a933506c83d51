"""The replay section's request traces, and exact LRU over them.

Traces are read from the shared/traces folder beside the checkout (never copied into the
tree; BENCH_TRACES names another folder). Each is a list of (key, size): a key is an int, a size the body's bytes (adapt_size
carries its objects' sizes; every other trace gets `SMALL_BODY`). The synthetic ones are Zipf
draws with a burst of one-time keys (a scan) in the middle, seeded, so every run replays the
same requests.
"""
import array
import bisect
import collections
import gzip
import itertools
import lzma
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _shared_traces():
    """The nearest `shared/traces` beside the checkout or one of its parents (a worktree sits deeper)."""
    folder = ROOT
    while os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        if os.path.isdir(os.path.join(folder, "shared", "traces")):
            return os.path.join(folder, "shared", "traces")
    raise SystemExit("no shared/traces folder beside the checkout: set BENCH_TRACES")


FOLDER = os.environ.get("BENCH_TRACES") or _shared_traces()
SMALL_BODY = 100
# cache2k-orm-busy has 5 M requests: its first 150,000 keep the section within its ten
# minutes. BENCH_REPLAY_PREFIX changes it (0: the whole trace).
ORM_PREFIX = int(os.environ.get("BENCH_REPLAY_PREFIX", "150000"))


def _path(name):
    return os.path.join(FOLDER, name)


def _big_endian_keys(name, limit=0):
    keys = array.array("i", lzma.open(_path(name)).read())
    if array.array("i", [1]).tobytes()[0] == 1:
        keys.byteswap()
    return [(key, SMALL_BODY) for key in (keys[:limit] if limit else keys)]


def _lirs(name):
    with gzip.open(_path(name), "rt") as f:
        return [(int(line), SMALL_BODY) for line in f if line.strip()]


def _adapt_size():
    requests = []
    with lzma.open(_path("adapt_size-request.trace.xz"), "rt") as f:
        for line in f:
            fields = line.split()
            if len(fields) == 3:
                requests.append((int(fields[1]), int(fields[2])))
    return requests


def zipf(alpha, keys=10_000, before=25_000, scan=10_000, after=25_000, seed=96):
    """`before` Zipf(alpha) draws over `keys` keys, `scan` keys asked once each, `after` draws."""
    draw = random.Random(seed)
    weights = list(itertools.accumulate(1 / rank ** alpha for rank in range(1, keys + 1)))
    total = weights[-1]

    def sample(count):
        return [(bisect.bisect_left(weights, draw.random() * total), SMALL_BODY) for _ in range(count)]

    return sample(before) + [(keys + n, SMALL_BODY) for n in range(scan)] + sample(after)


# name: (what it is, reader). The order is the table's.
TRACES = {
    "web07": ("cache2k-web07: product pages of an e-commerce site", lambda: _big_endian_keys("cache2k-web07.trace.xz")),
    "orm-busy": (f"cache2k-orm-busy: database objects of the same site (first {ORM_PREFIX:,} requests)" if ORM_PREFIX else
                 "cache2k-orm-busy: database objects of the same site", lambda: _big_endian_keys("cache2k-orm-busy.trace.xz", ORM_PREFIX)),
    "adapt_size": ("adapt_size: CDN requests, with their objects' sizes", _adapt_size),
    "sprite": ("lirs-sprite: file-system blocks", lambda: _lirs("lirs-sprite.trace.gz")),
    "multi2": ("lirs-multi2: several programs' blocks interleaved", lambda: _lirs("lirs-multi2.trace.gz")),
    "zipf-0.7": ("Zipf(0.7) over 10,000 keys, a scan of 10,000 one-time keys in the middle", lambda: zipf(0.7)),
    "zipf-0.9": ("Zipf(0.9) over 10,000 keys, a scan of 10,000 one-time keys in the middle", lambda: zipf(0.9)),
    "zipf-1.1": ("Zipf(1.1) over 10,000 keys, a scan of 10,000 one-time keys in the middle", lambda: zipf(1.1)),
}


def distinct(requests):
    """Each key's size (the last one asked: a trace may give one key two sizes)."""
    return dict(requests)


def exact_lru(requests, entries):
    """Exact LRU holding at most `entries` entries: (misses, bytes of the misses)."""
    return lru(requests, entries, lambda size: 1)


def exact_lru_bytes(requests, budget, overhead):
    """Exact LRU holding at most `budget` bytes, each entry its size plus `overhead` (an object
    larger than the whole budget is never held): (misses, bytes of the misses)."""
    return lru(requests, budget, lambda size: size + overhead)


def lru(requests, budget, cost_of):
    """Exact LRU within `budget`, each entry costing `cost_of(size)`. An entry is a request's
    key and size, as the URL the caches are asked (`/o/KEY/SIZE`): adapt_size asks for
    40,240 pairs of its 36,815 keys and a size, and a key asked with a new size is a miss
    for Larder and nginx, which an LRU by key alone counted as a hit (it read 5-9 % fewer
    misses than nginx)."""
    held = collections.OrderedDict()
    used = misses = missed_bytes = 0
    for request in requests:
        size = request[1]
        if request in held:
            held.move_to_end(request)
            continue
        misses += 1
        missed_bytes += size
        cost = cost_of(size)
        if cost > budget:
            continue
        held[request] = cost
        used += cost
        while used > budget:
            used -= held.popitem(last=False)[1]
    return misses, missed_bytes
