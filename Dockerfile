# Larder: a multi-stage build. The build stage compiles a release binary with the Swift
# standard library linked statically; the runtime stage has only what that binary loads
# at run time (libcurl, hiredis, CA certificates, tzdata) and runs as a non-root numeric user.

# ---- build ------------------------------------------------------------------------------
FROM swift:6.3-noble AS build
# DL3008 (pin apt versions) is ignored: the base image's distribution pins the versions,
# and exact Ubuntu package versions disappear from the mirrors within weeks.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libhiredis-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package.swift names the test targets too, so their folders must be present to build.
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# The flags are make bench's and make release's (Makefile, RELEASE_FLAGS): what is measured ships.
RUN swift build -c release --static-swift-stdlib -Xswiftc -cross-module-optimization --experimental-lto-mode=full --product larder \
    && install -D "$(swift build -c release --show-bin-path)/larder" /out/larder

# ---- runtime ----------------------------------------------------------------------------
FROM ubuntu:24.04
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4t64 libhiredis1.1.0 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 larder \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin larder \
    && mkdir -p /var/cache/larder \
    && chown 10001:10001 /var/cache/larder
COPY --from=build /out/larder /usr/local/bin/larder
ENV LARDER_HOST=0.0.0.0 \
    LARDER_PORT=8080 \
    LARDER_CACHE_DIR=/var/cache/larder
# glibc keeps 7 freed blocks of each size per thread for reuse. A miss storm frees libcurl's
# and Swift's blocks in larger bursts, and the rest went through glibc's shared bins: at 512
# the event loops spend less CPU per answer (make bench: scale, miss storm, server CPU
# µs/answer) for about 1.5 MiB more memory, and a memory hit costs the same (hot key).
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=512
USER 10001:10001
VOLUME ["/var/cache/larder"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["larder", "healthcheck"]
# `docker stop` sends SIGTERM: Larder drains in-flight requests and exits 0 within 8 s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["larder", "serve"]
