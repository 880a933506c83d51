// Declarations only: libFuzzer provides LLVMFuzzerRunDriver when linked in.
#include "CFuzzDriver.h"
