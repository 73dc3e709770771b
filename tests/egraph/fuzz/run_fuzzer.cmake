# SPDX-License-Identifier: Apache-2.0
# cmake -P script: run one libFuzzer target for SECONDS from its seed corpus. A crash fails the
# test; the crashing input is left in the build folder (crash-*) to be kept under corpus/.
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY "${CORPUS}")
get_filename_component(work "${CORPUS}" DIRECTORY)
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=20 -rss_limit_mb=2048
          -print_final_stats=1 "-artifact_prefix=${work}/" "${CORPUS}" "${SEEDS}"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${status}); its crash input is in ${work}")
endif()
