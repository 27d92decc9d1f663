//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// libFuzzer's driver, from the toolchain's libclang_rt.fuzzer (linked by swiftc -sanitize=fuzzer).
//
// SwiftPM links an executable's entry point as main (--defsym main=<module>_main), so libFuzzer's own main() cannot
// be the program's: each fuzz target has a Swift @main (FuzzTarget) that hands its input function to this driver,
// which parses libFuzzer's flags and runs the fuzzing loop as libFuzzer's main() would.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
