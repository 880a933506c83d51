#define _GNU_SOURCE 1
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "CLinux.h"

long larder_copy_file_range(int in, long *in_offset, int out, long *out_offset, unsigned long count) {
    loff_t from = *in_offset, to = *out_offset;
    ssize_t copied = copy_file_range(in, &from, out, &to, count, 0);
    *in_offset = from;
    *out_offset = to;
    return copied;
}

int larder_punch_hole(int fd, long offset, long count) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, count);
}

int larder_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int larder_peer_address(int fd, char *out, unsigned long size) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (size > 0) out[0] = 0;
    if (getpeername(fd, (struct sockaddr *)&address, &length) != 0) return -1;
    if (address.ss_family == AF_INET) {
        return inet_ntop(AF_INET, &((struct sockaddr_in *)&address)->sin_addr, out, size) ? 0 : -1;
    }
    if (address.ss_family == AF_INET6) {
        struct in6_addr *ip = &((struct sockaddr_in6 *)&address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(ip)) return inet_ntop(AF_INET, &ip->s6_addr[12], out, size) ? 0 : -1;
        return inet_ntop(AF_INET6, ip, out, size) ? 0 : -1;
    }
    return -1;
}

_Thread_local unsigned larder_loop_slot = 0;

void larder_set_thread_name(const char *name) {
    char short_name[16];
    strncpy(short_name, name, sizeof short_name - 1);
    short_name[sizeof short_name - 1] = 0;
    pthread_setname_np(pthread_self(), short_name);
}

long larder_pread_cached(int fd, void *buffer, unsigned long count, long offset) {
    struct iovec part = { buffer, count };
    return preadv2(fd, &part, 1, offset, RWF_NOWAIT);
}

int larder_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LARDER_THREAD_SANITIZER 1
#endif
#endif

#ifdef LARDER_THREAD_SANITIZER
void __tsan_acquire(void *address);
void __tsan_release(void *address);
void larder_tsan_acquire(void *address) { __tsan_acquire(address); }
void larder_tsan_release(void *address) { __tsan_release(address); }
#else
void larder_tsan_acquire(void *address) { (void)address; }
void larder_tsan_release(void *address) { (void)address; }
#endif
