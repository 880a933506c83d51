// hiredis for Swift. The blocking API is enough: the client drives one connection from a
// thread of its own and pipelines what is queued. These wrappers keep the reply and
// context structs' details (a union-free but pointer-heavy layout) out of Swift.
#ifndef LARDER_CHIREDIS_SHIM_H
#define LARDER_CHIREDIS_SHIM_H

#include <hiredis/hiredis.h>
#include <sys/time.h>

static inline struct timeval larder_redis_timeval(long milliseconds) {
    struct timeval tv;
    tv.tv_sec = milliseconds / 1000;
    tv.tv_usec = (milliseconds % 1000) * 1000;
    return tv;
}

static inline int larder_redis_error(const redisContext *context) { return context->err; }
static inline const char *larder_redis_error_text(const redisContext *context) { return context->errstr; }

#endif
