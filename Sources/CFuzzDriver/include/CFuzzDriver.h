// libFuzzer's driver, for a fuzz binary that keeps its own main (larder-fuzz): only linked,
// and only called, in a build with -sanitize=fuzzer (`make fuzz`).
#ifndef LARDER_CFUZZDRIVER_H
#define LARDER_CFUZZDRIVER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
