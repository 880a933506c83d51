#!/usr/bin/env python3
"""The performance gate's pass-through origin, on loopback (HTTP/1.1, keep-alive).

- /storm/etag: a small answer marked `no-cache` with an ETag, 304 when If-None-Match has it
  (every use is revalidated: the 304 revalidation path);
- /storm/big/...: 16 MiB marked `no-store` (streamed through, never stored: the relay path);
- any other path: a small answer fresh for an hour (the pass-through miss path).

usage: origin.py PORT-FILE  (writes the port it listens on to PORT-FILE, then serves)
"""
import http.server
import os
import sys

SMALL = b'{"origin":"gate","padding":"' + b"x" * 200 + b'"}'
BIG = bytes(range(256)) * (16 * 1024 * 1024 // 256)
ETAG = '"gate-1"'


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/storm/etag":
            if ETAG in self.headers.get("If-None-Match", ""):
                return self.answer(304, b"", {"Cache-Control": "no-cache", "ETag": ETAG})
            return self.answer(200, SMALL, {"Cache-Control": "no-cache", "ETag": ETAG})
        if self.path.startswith("/storm/big/"):
            return self.answer(200, BIG, {"Cache-Control": "no-store"})
        return self.answer(200, SMALL, {"Cache-Control": "max-age=3600"})

    def answer(self, status, body, headers):
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if len(body) < 1024 else "application/octet-stream")
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
