#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "CLinux.h"

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as storage engines check their
// blocks: the SSE 4.2 instruction where the CPU has it, a byte table elsewhere.

static uint32_t table[256];

// Filled when the program loads, before any thread can read it.
__attribute__((constructor)) static void fill_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[n] = c;
    }
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t length) {
    while (length--) crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t length) {
    uint64_t c = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

uint32_t larder_crc32c(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = data;
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return ~crc32c_sse42(crc, p, length);
#endif
    return ~crc32c_table(crc, p, length);
}

uint32_t larder_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    return ~crc32c_table(~crc, data, length);
}
