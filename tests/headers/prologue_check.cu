// SPDX-License-Identifier: Apache-2.0
// prologue_check.cpp compiled by nvcc, where the region also pushes and pops nvcc's diagnostic
// state (an unbalanced pop is an error under -Werror=all-warnings).
#include "prologue_check.cpp"
