// Linux system interfaces that Glibc's Swift module does not export.
#ifndef LARDER_CLINUX_H
#define LARDER_CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <time.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC: one call, no race with fork.
/// Defined in shim.c, which needs _GNU_SOURCE (defining it here would clash with Glibc's module).
int larder_accept_nonblocking(int fd);

/// pread that fails with EAGAIN rather than wait for the disk: the bytes are read only when
/// the page cache holds them (preadv2 with RWF_NOWAIT; EOPNOTSUPP where a file system cannot).
long larder_pread_cached(int fd, void *buffer, unsigned long count, long offset);

/// copy_file_range (a _GNU_SOURCE declaration Swift does not see): `count` bytes copied by the
/// kernel from `in` at `*in_offset` to `out` at `*out_offset`, both offsets advanced.
long larder_copy_file_range(int in, long *in_offset, int out, long *out_offset, unsigned long count);

/// fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): frees `count` bytes of the file's
/// blocks from `offset`, the size unchanged (reads there give zeros); 0, or -1 (errno says why).
int larder_punch_hole(int fd, long offset, long count);

/// The peer's IP address as text (IPv4 dotted, IPv6 with IPv4-mapped addresses shown as
/// IPv4) into out; 0 on success, -1 when there is none (out then holds "").
int larder_peer_address(int fd, char *out, unsigned long size);

/// CRC-32C (Castagnoli) of `length` bytes, continuing from `crc` (0 to start): the disk
/// tier's check of its files, in hardware where the CPU has it. Defined in crc32c.c.
uint32_t larder_crc32c(uint32_t crc, const void *data, size_t length);
/// The same by table alone, so tests can hold the hardware path to it.
uint32_t larder_crc32c_portable(uint32_t crc, const void *data, size_t length);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child keeps no descriptor
/// numbered `from` or above. Defined in shim.c, for the same reason as accept4.
int larder_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

/// ThreadSanitizer's happens-before annotations (`__tsan_acquire`, `__tsan_release`) in a
/// build with it, nothing otherwise. Defined in shim.c, where the sanitizer is known.
void larder_tsan_acquire(void *address);
void larder_tsan_release(void *address);

/// Names the calling thread (visible in top -H and perf); at most 15 characters are kept.
void larder_set_thread_name(const char *name);

/// Registers or modifies an fd with an opaque 64-bit token (fd and generation).
static inline int larder_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev);
}

/// epoll_event is packed on x86_64; Swift cannot read its fields safely, so copy them out here.
static inline uint64_t larder_epoll_event_token(const struct epoll_event *events, int index) {
    return events[index].data.u64;
}
static inline uint32_t larder_epoll_event_flags(const struct epoll_event *events, int index) {
    return events[index].events;
}
static inline size_t larder_epoll_event_size(void) { return sizeof(struct epoll_event); }

static inline int larder_errno(void) { return errno; }

/// Bytes malloc has handed out and not had back (main arena and mappings alike).
static inline long larder_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long)(info.uordblks + info.hblkhd);
}

/// Fixes malloc's mmap threshold (blocks at least this large are mapped on their own and
/// returned to the system when freed, whatever was freed before) and caps its arenas.
static inline void larder_malloc_configure(int mmap_threshold, int max_arenas) {
    mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    mallopt(M_ARENA_MAX, max_arenas);
}

/// SIGPIPE ignored, unless the process has a handler of its own for it: a write to a peer
/// that has gone then fails with EPIPE instead of ending the process.
static inline void larder_ignore_broken_pipes(void) {
    struct sigaction current;
    if (sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

/// Which event loop the calling thread runs, counting from 1; 0 on every other thread.
/// Counters every request adds to keep one stripe per loop, so two loops never write the
/// same cache line. Defined in shim.c.
extern _Thread_local unsigned larder_loop_slot;
static inline unsigned larder_get_loop_slot(void) { return larder_loop_slot; }
static inline void larder_set_loop_slot(unsigned slot) { larder_loop_slot = slot; }

#endif
