"""What check-tracing.py's cases run on: `check`, which prints each verdict and keeps the
failures; the origin the pass-through routes forward to; a `larder serve` child process;
and the readings of a trace's spans (its roots, a span's descendants, the HTTP server
attributes). The cases themselves, and what each expects, are in check-tracing.py.
"""
import http.client
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

FAILURES = []


def check(condition, what):
    print(("  ok   " if condition else "  FAIL ") + what)
    if not condition:
        FAILURES.append(what)
    return condition


class Origin:
    """The pass-through origin: records each request's path and trace fields, and answers
    /fresh/… fresh for an hour, /swr/… fresh for 1 s then stale-while-revalidate for 60 s,
    /late/… after 0.8 s (past an aggregate's deadline) and /broken/… with 503."""

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with origin.lock:
                    origin.seen.append((self.path, self.headers.get("traceparent"), self.headers.get("tracestate")))
                if "/late/" in self.path:
                    time.sleep(0.8)
                if "/broken/" in self.path:
                    return self.answer(503, b'{"down":true}', "no-store")
                lifetime = "max-age=1, stale-while-revalidate=60" if "/swr/" in self.path else "max-age=3600"
                self.answer(200, json.dumps({"path": self.path}).encode(), lifetime)

            def answer(self, status, body, cache_control):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", cache_control)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def requests(self, path):
        with self.lock:
            return [(traceparent, tracestate) for seen, traceparent, tracestate in self.seen if seen == path]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Larder:
    """`larder serve` on a free port with its log in a file; stopped with SIGTERM."""

    binary = None  # the built `larder`: check-tracing.py's argument

    def __init__(self, work, name, arguments, environment):
        self.log_path = os.path.join(work, f"{name}.log")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "LARDER_"))}
        env.update(environment)
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen([Larder.binary, "serve", "--port", "0", "--cache-dir", os.path.join(work, name + "-cache"),
                                         "--built-in-routes", "none", *arguments],
                                        stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 20
        self.port = None
        while self.port is None:
            found = re.search(r"listening on http://[^:]+:(\d+)", self.text())
            if found:
                self.port = int(found.group(1))
            elif self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"larder {name} did not start:\n{self.text()}")
            else:
                time.sleep(0.05)

    def text(self):
        with open(self.log_path) as log:
            return log.read()

    def get(self, path, headers=None, timeout=10):
        """Status, headers and body of one request, and the seconds it took."""
        began = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        body = response.read()
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body, time.monotonic() - began

    def dropped(self):
        """larder_trace_spans_dropped_total by reason."""
        _, _, body, _ = self.get("/metrics")
        return {reason: float(count) for reason, count in
                re.findall(r'^larder_trace_spans_dropped_total\{reason="([a-z_]+)"\} (\S+)$', body.decode(), re.M)}

    def stop(self, within=20):
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            status = "killed"
        self.log.close()
        return status


def traceparent_ids(header):
    """(trace id, parent id, sampled) of a `traceparent` field."""
    version, trace_id, parent_id, flags = header.split("-")
    return trace_id, parent_id, int(flags, 16) & 1 == 1


def roots(spans):
    ids = {span.span_id for span in spans}
    return [span for span in spans if span.parent_id not in ids]


def below(spans, top):
    """`top`'s descendants."""
    found, frontier = [], [top.span_id]
    while frontier:
        children = [span for span in spans if span.parent_id in frontier]
        found += children
        frontier = [span.span_id for span in children]
    return found


def server_span(receiver, trace_id, what):
    spans = receiver.wait_for(lambda got: any(s.trace_id == trace_id and s.kind == "server" for s in got), what=what)
    return next(s for s in spans if s.trace_id == trace_id and s.kind == "server")


def http_conventions(span, method, path, route, status):
    """OpenTelemetry's HTTP server attributes, as the issue lists them."""
    a = span.attributes
    check(a.get("http.request.method") == method and a.get("url.path") == path and a.get("http.route") == route
          and a.get("http.response.status_code") == status,
          f"{path}: server span {span.name!r} says {method} {path}, route {route}, status {status}: {a}")
    check(a.get("client.address") == "127.0.0.1" and a.get("network.protocol.version") == "1.1"
          and a.get("server.port") is not None and a.get("server.address") is not None,
          f"{path}: server span has client.address, server.address and .port, network.protocol.version")


def free_port():
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def announcements(larder):
    return [line for line in larder.text().splitlines() if "trace spans dropped" in line]


def wait_until(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
