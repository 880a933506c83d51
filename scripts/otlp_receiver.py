#!/usr/bin/env python3
"""A small OTLP/HTTP trace receiver on loopback, for the tracing checks and the bench.

It takes `POST /v1/traces` as an OpenTelemetry collector does (protobuf or JSON, decoded
with opentelemetry-proto's own messages), keeps every span with its resource's attributes,
and answers an empty ExportTraceServiceResponse. `delay` holds each answer that long (a
slow collector). Run alone it writes its port to PORT-FILE and counts spans until stopped.

It also answers `GET /spans` with what it holds, as JSON (each span's service, name and
kind), for a check that cannot read its memory (the deploy files' run).

usage: otlp_receiver.py PORT-FILE [DELAY-SECONDS] | otlp_receiver.py --listen HOST:PORT
"""
import http.server
import json
import signal
import sys
import threading
import time

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {0: "unset", 1: "ok", 2: "error"}


def value_of(any_value):
    """An AnyValue as the Python value it holds."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(key_values):
    return {item.key: value_of(item.value) for item in key_values}


class Span:
    """One exported span, its ids in hex as traceparent writes them."""

    def __init__(self, span, resource, scope):
        self.trace_id = span.trace_id.hex()
        self.span_id = span.span_id.hex()
        self.parent_id = span.parent_span_id.hex()
        self.name = span.name
        self.kind = KINDS.get(span.kind, str(span.kind))
        self.attributes = attributes(span.attributes)
        self.status = STATUS.get(span.status.code, str(span.status.code))
        self.status_message = span.status.message
        self.links = [(link.trace_id.hex(), link.span_id.hex()) for link in span.links]
        self.events = [event.name for event in span.events]
        self.start = span.start_time_unix_nano
        self.end = span.end_time_unix_nano
        self.resource = resource
        self.scope = scope

    def __repr__(self):
        return (f"Span({self.name!r} {self.kind} trace={self.trace_id} id={self.span_id} parent={self.parent_id or '-'} "
                f"status={self.status} attrs={self.attributes} links={self.links})")


class Receiver:
    """Serves on 127.0.0.1 at a free port; `spans` grows as batches come."""

    def __init__(self, delay=0.0, host="127.0.0.1", port=0):
        self.delay = delay
        self.spans = []
        self.requests = 0
        self.content_types = set()
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces":
                    return self.answer(404, b"", "text/plain")
                if receiver.delay:
                    time.sleep(receiver.delay)
                content_type = self.headers.get("Content-Type", "")
                request = ExportTraceServiceRequest()
                if content_type.startswith("application/json"):
                    json_format.Parse(body, request)
                else:
                    request.ParseFromString(body)
                receiver.add(request, content_type)
                self.answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

            def do_GET(self):
                if self.path != "/spans":
                    return self.answer(404, b"", "text/plain")
                with receiver.lock:
                    held = [{"service": span.resource.get("service.name"), "name": span.name, "kind": span.kind}
                            for span in receiver.spans]
                self.answer(200, json.dumps(held).encode(), "application/json")

            def answer(self, status, body, content_type):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def add(self, request, content_type):
        spans = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                spans += [Span(span, resource, scope_spans.scope.name) for span in scope_spans.spans]
        with self.lock:
            self.requests += 1
            self.content_types.add(content_type)
            self.spans += spans

    def trace(self, trace_id):
        with self.lock:
            return [span for span in self.spans if span.trace_id == trace_id]

    def wait_for(self, predicate, timeout=10.0, what="spans"):
        """The spans once `predicate(spans)` holds; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout}s; received: {spans}")
            time.sleep(0.05)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def main():
    """Alone: serves until SIGTERM or SIGINT (then exits 0), its port in PORT-FILE, or at
    --listen HOST:PORT (the deploy files' stand-in for the collector image)."""
    arguments = sys.argv[1:]
    host, port, port_file = "127.0.0.1", 0, None
    if arguments[:1] == ["--listen"]:
        host, _, port = arguments[1].rpartition(":")
        arguments = arguments[2:]
    else:
        port_file = arguments.pop(0)
    receiver = Receiver(delay=float(arguments[0]) if arguments else 0.0, host=host, port=int(port))
    if port_file:
        with open(port_file, "w") as written:
            written.write(str(receiver.port))
    print(f"otlp receiver: listening on {host}:{receiver.port}", flush=True)
    stopped = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopped.set())
    stopped.wait()
    receiver.stop()
    print(f"otlp receiver: {len(receiver.spans)} spans in {receiver.requests} requests", flush=True)


if __name__ == "__main__":
    main()
