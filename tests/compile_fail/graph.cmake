# SPDX-License-Identifier: Apache-2.0
# Typed graph setters: a wrong argument count or type must not compile (nvcc sources).
vyre_compile_fail(graph_wrong_arg_count graph_wrong_arg_count.cu
  "the number of arguments must match the kernel's parameter count")
vyre_compile_fail(graph_wrong_arg_type graph_wrong_arg_type.cu
  "must convert to the kernel's parameter type without narrowing")
vyre_compile_fail(graph_narrowing_arg graph_narrowing_arg.cu
  "set_kernel_launch: each argument must convert to the kernel's parameter type without narrowing")
