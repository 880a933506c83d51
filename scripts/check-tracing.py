#!/usr/bin/env python3
"""Traces for real: a built `larder serve` exports its spans over OTLP/HTTP to a receiver on
loopback (otlp_receiver.py, opentelemetry-proto's messages), in front of an origin on
loopback that records the `traceparent` it is sent. Checked: the spans' tree, names, kinds,
attributes and status, and the origin's `traceparent`, for a hit, a miss, a pass-through
miss with a client's `traceparent` (parent-based sampling at ratio 0, set in a configuration
file), an aggregate with a late part and a stale-while-revalidate refresh; then, with the
collector down and then slow, that the answers are unchanged and prompt and the lost spans
are counted in `larder_trace_spans_dropped_total` and said in one log line.

usage: check-tracing.py LARDER  (run with the tools venv's python: make test does)
"""
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_receiver import Receiver  # noqa: E402
from tracing_harness import (FAILURES, Larder, Origin, announcements, below, check, free_port,  # noqa: E402
                             http_conventions, roots, server_span, traceparent_ids, wait_until)

Larder.binary = os.path.abspath(sys.argv[1])
# Spans leave within a tenth of a second; a slow collector's answer waits past the queue's filling.
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}


def answers_unchanged(larder, origin, label):
    """Forty requests of one stored answer: each a prompt 200 with the origin's body."""
    path = f"/api/fresh/{label}"
    results = [larder.get(path) for _ in range(40)]
    expected = json.dumps({"path": path}).encode()
    check(all(status == 200 and body == expected for status, _, body, _ in results), f"{label}: every answer is the origin's 200")
    slowest = max(seconds for *_, seconds in results)
    check(slowest < 1.0, f"{label}: no answer waited on the collector (slowest {slowest * 1000:.0f} ms)")
    return len(results)


def collector_down(work, origin):
    print("== collector down: answers unchanged, the spans lost counted, one line")
    # AsyncHTTPClient tries to connect again until the export's time is up: half a second here.
    larder = Larder(work, "down", ["--route", f"/api={origin.url}"],
                    {**FAST_EXPORT, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}", "OTEL_EXPORTER_OTLP_TIMEOUT": "500"})
    sent = answers_unchanged(larder, origin, "down")
    wait_until(lambda: sum(larder.dropped().values()) >= sent, 15)
    dropped = larder.dropped()
    check(dropped.get("export_failed", 0) + dropped.get("queue_full", 0) >= sent,
          f"larder_trace_spans_dropped_total counts at least the {sent} server spans: {dropped}")
    check(len(announcements(larder)) == 1, f"one log line says so: {announcements(larder)}")
    began = time.monotonic()
    check(larder.stop() == 0 and time.monotonic() - began < 5, f"stops with status 0 with the collector still down, "
          f"in {time.monotonic() - began:.1f} s")


def collector_slow(work, origin):
    print("== collector slow (1 s an answer, a queue of 4): answers unchanged, the spans past the queue counted, one line")
    receiver = Receiver(delay=1.0)
    larder = Larder(work, "slow", ["--route", f"/api={origin.url}"],
                    {**FAST_EXPORT, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
                     "OTEL_BSP_MAX_QUEUE_SIZE": "4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4"})
    sent = answers_unchanged(larder, origin, "slow")
    check(wait_until(lambda: larder.dropped().get("queue_full", 0) >= sent - 8, 15),
          f"queue_full counts what the queue of 4 could not hold: {larder.dropped()}")
    check(len(announcements(larder)) == 1, f"one log line says so: {announcements(larder)}")
    check(larder.stop() == 0, "stops with status 0, the queue flushed to the slow collector")
    check(len(receiver.spans) > 0, f"the slow collector got spans all the same ({len(receiver.spans)})")
    receiver.stop()


AGGREGATES = """
built-in-routes: none
routes:
  /api: {{origin: "{origin}"}}
aggregates:
  /both:
    deadline: 300ms
    parts:
      fresh: /api/fresh/part
      late: {{target: /api/late/part, required: false}}
"""


def traced_requests(work, origin):
    print("== every request sampled: a miss, a hit, an aggregate with a late part, a stale-while-revalidate refresh")
    receiver = Receiver()
    config = os.path.join(work, "traced.yaml")
    with open(config, "w") as written:
        written.write(AGGREGATES.format(origin=origin.url))
    larder = Larder(work, "traced", ["--config", config],
                    {**FAST_EXPORT, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "larder-check",
                     "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=check"})
    try:
        check("tracing on" in larder.text(), "the start says tracing is on")
        miss(larder, origin, receiver)
        aggregate(larder, origin, receiver)
        refresh(larder, origin, receiver)
        check(receiver.content_types == {"application/x-protobuf"}, f"batches came as OTLP/HTTP protobuf: {receiver.content_types}")
        check(sum(larder.dropped().values()) == 0, f"no span dropped: {larder.dropped()}")
    finally:
        check(larder.stop() == 0, "stops with status 0")
        receiver.stop()
    parent_based(work, origin)


def miss(larder, origin, receiver):
    path = "/api/fresh/one"
    status, headers, _, _ = larder.get(path)
    check(status == 200 and "fwd=miss" in headers.get("cache-status", ""), f"{path}: a miss ({headers.get('cache-status')})")
    [(sent, _)] = origin.requests(path)
    trace_id, parent_id, sampled = traceparent_ids(sent)
    check(sampled, f"{path}: the origin got a sampled traceparent ({sent})")
    server = server_span(receiver, trace_id, f"server span of {path}")
    trace = receiver.wait_for(lambda got: any(s.trace_id == trace_id and s.span_id == parent_id for s in got),
                              what=f"the span the origin's traceparent names ({parent_id})")
    trace = [s for s in trace if s.trace_id == trace_id]
    check(roots(trace) == [server] and server.parent_id == "", f"{path}: one tree, the server span at its root: {trace}")
    http_conventions(server, "GET", path, "/api", 200)
    check(server.name == "GET /api" and server.attributes.get("larder.cache.outcome") == "miss"
          and server.attributes.get("larder.cache.tier") == "upstream" and "fwd=miss" in server.attributes.get("larder.cache.status", ""),
          f"{path}: named by its route, the cache's verdict a miss from the upstream: {server}")
    upstream = next(s for s in trace if s.span_id == parent_id)
    check(upstream.kind == "client" and upstream in below(trace, server) and upstream.name == "GET"
          and upstream.attributes.get("http.response.status_code") == 200 and upstream.status == "unset"
          and upstream.attributes.get("url.full", "").endswith(path),
          f"{path}: the origin's traceparent names the upstream exchange, a client span under the server span: {upstream}")
    check(server.resource.get("service.name") == "larder-check" and server.resource.get("deployment.environment") == "check"
          and server.resource.get("service.version"), f"resource: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the version: {server.resource}")
    access = [line for line in larder.text().splitlines() if "log=access" in line and f"path={path}" in line]
    check(len(access) == 1 and f"trace_id={trace_id}" in access[0] and f"span_id={server.span_id}" in access[0],
          f"{path}: the access line carries trace_id and span_id: {access}")

    status, headers, _, _ = larder.get(path)
    check(status == 200 and "hit" in headers.get("cache-status", "") and len(origin.requests(path)) == 1, f"{path} again: a hit")
    hit = receiver.wait_for(lambda got: sum(s.kind == "server" and s.attributes.get("url.path") == path for s in got) == 2,
                            what=f"the hit's server span of {path}")
    hit = [s for s in hit if s.kind == "server" and s.attributes.get("url.path") == path and s.trace_id != trace_id][0]
    hit_trace = receiver.trace(hit.trace_id)
    check(hit_trace == [hit], f"{path} hit: the server span alone: {hit_trace}")
    http_conventions(hit, "GET", path, "/api", 200)
    check(hit.attributes.get("larder.cache.outcome") == "hit" and hit.attributes.get("larder.cache.tier") == "memory"
          and hit.status == "unset", f"{path} hit: a memory hit: {hit.attributes}")

    path = "/api/broken/one"
    status, _, _, _ = larder.get(path)
    [(sent, _)] = origin.requests(path)
    broken = server_span(receiver, traceparent_ids(sent)[0], f"server span of {path}")
    check(status >= 500 and broken.status == "error" and broken.attributes.get("http.response.status_code") == status
          and broken.attributes.get("error.type") == str(status), f"{path}: a {status} sets the server span's status to error: {broken}")
    failed = [s for s in receiver.trace(broken.trace_id) if s.kind == "client"]
    check(len(failed) == 1 and failed[0].status == "error", f"{path}: and the upstream exchange's: {failed}")


def aggregate(larder, origin, receiver):
    status, headers, _, _ = larder.get("/both")
    check(status == 200 and headers.get("larder-missing") == "late", f"/both: the late part missing ({headers.get('larder-missing')})")
    [(sent, _)] = origin.requests("/api/late/part")
    trace_id = traceparent_ids(sent)[0]
    server = server_span(receiver, trace_id, "server span of /both")
    http_conventions(server, "GET", "/both", "/both", 200)
    # The late part's upstream call ends after the answer: its span comes with a later batch.
    trace = receiver.wait_for(lambda got: len([s for s in got if s.trace_id == trace_id and s.kind == "client"]) >= 2,
                              timeout=10, what="both parts' upstream spans of /both")
    trace = [s for s in trace if s.trace_id == trace_id]
    check(roots(trace) == [server] and len(below(trace, server)) == len(trace) - 1, f"/both: one tree under the server span: {trace}")
    parts = {s.name: s for s in trace if s.parent_id == server.span_id}
    check(set(parts) == {"part fresh", "part late"}, f"/both: a child span per part that was no memory hit: {sorted(parts)}")
    late = parts.get("part late")
    check(late is not None and late.end > server.end and late.attributes.get("larder.aggregate.part") == "late",
          f"/both: the late part's span goes on past the answer: {late}")
    check("late" in server.attributes.get("larder.aggregate.parts", ""), f"/both: the server span says how each part was answered: {server.attributes}")
    check(all(any(c.parent_id == part.span_id and c.kind == "client" for c in trace) for part in parts.values()),
          "/both: each part's upstream exchange under its part span")


def refresh(larder, origin, receiver):
    path = "/api/swr/one"
    larder.get(path)
    [(first, _)] = origin.requests(path)
    time.sleep(2.1)  # past max-age=1 by a whole second (Age counts whole seconds), within stale-while-revalidate
    status, headers, _, _ = larder.get(path)
    check(status == 200 and "ttl=-" in headers.get("cache-status", ""), f"{path}: served stale ({headers.get('cache-status')})")
    check(wait_until(lambda: len(origin.requests(path)) == 2, 5), f"{path}: one background refresh reached the origin")
    stale_request = receiver.wait_for(lambda got: sum(s.kind == "server" and s.attributes.get("url.path") == path for s in got) == 2,
                                      what=f"the stale answer's server span of {path}")
    stale_request = [s for s in stale_request if s.kind == "server" and s.attributes.get("url.path") == path
                     and s.trace_id != traceparent_ids(first)[0]][0]
    refresh_trace_id, refresh_parent, _ = traceparent_ids(origin.requests(path)[1][0])
    check(refresh_trace_id != stale_request.trace_id, f"{path}: the refresh is a trace of its own")
    trace = receiver.wait_for(lambda got: any(s.trace_id == refresh_trace_id and s.span_id == refresh_parent for s in got),
                              what="the refresh's upstream span")
    trace = [s for s in trace if s.trace_id == refresh_trace_id]
    [root] = roots(trace)
    check(root.name == "revalidate" and root.parent_id == "" and (stale_request.trace_id, stale_request.span_id) in root.links
          and root.attributes.get("larder.cache.resource", "").startswith(path),
          f"{path}: the refresh's root span links to the request that started it: {trace}")
    check(stale_request.attributes.get("larder.cache.outcome") == "stale", f"{path}: the request's span says stale: {stale_request.attributes}")


def parent_based(work, origin):
    print("== parent-based sampling at ratio 0 (the configuration file): a client's traceparent decides")
    receiver = Receiver()
    config = os.path.join(work, "sampled.yaml")
    with open(config, "w") as written:
        written.write(f"tracing-endpoint: {receiver.endpoint}\ntracing-sample-ratio: 0\nroutes:\n  /api: {{origin: \"{origin.url}\"}}\n")
    larder = Larder(work, "sampled", ["--config", config], FAST_EXPORT)
    try:
        larder.get("/api/fresh/unsampled")
        client_trace, client_span = secrets.token_hex(16), secrets.token_hex(8)
        path = "/api/fresh/sampled"
        larder.get(path, {"traceparent": f"00-{client_trace}-{client_span}-01", "tracestate": "vendor=opaque"})
        [(sent, state)] = origin.requests(path)
        trace_id, parent_id, sampled = traceparent_ids(sent)
        check(trace_id == client_trace and sampled and parent_id != client_span,
              f"{path}: the origin got the client's trace, sampled, under Larder's own span ({sent})")
        check(state == "vendor=opaque", f"{path}: and the client's tracestate ({state})")
        server = server_span(receiver, client_trace, f"server span of {path}")
        check(server.parent_id == client_span, f"{path}: the server span's parent is the client's span")
        http_conventions(server, "GET", path, "/api", 200)
        [(unsampled, _)] = origin.requests("/api/fresh/unsampled")
        time.sleep(0.5)  # five export intervals
        check(unsampled is None or (not receiver.trace(traceparent_ids(unsampled)[0]) and not traceparent_ids(unsampled)[2]),
              f"without a traceparent at ratio 0: nothing exported, the origin told unsampled if anything ({unsampled})")
        check(all(s.trace_id == client_trace for s in receiver.spans), f"only the client's sampled trace was exported")
    finally:
        check(larder.stop() == 0, "stops with status 0")
        receiver.stop()


def main():
    work = tempfile.mkdtemp(prefix="check-tracing-")
    origin = Origin()
    try:
        for section in (traced_requests, collector_down, collector_slow):
            began = time.monotonic()
            section(work, origin)
            print(f"  ({time.monotonic() - began:.1f} s)")
    finally:
        origin.stop()
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"check-tracing: {len(FAILURES)} failed")
        sys.exit(1)
    print("check-tracing: spans exported as described; a slow or absent collector costs no answer")


if __name__ == "__main__":
    main()
