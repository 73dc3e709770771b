# SPDX-License-Identifier: Apache-2.0
# Helpers for vyre's own tests.
#
# vyre_add_host_test(NAME name SOURCES ...)  host-only Catch2 executable, one CTest entry per
#                                            test case.
# vyre_add_gpu_test(NAME name SOURCES ...)   one executable per component (CUDA sources); one
#                                            CTest entry that reports SKIPPED (exit code 77)
#                                            on a machine without a usable CUDA device. Not
#                                            created at all with VYRE_BUILD_GPU_TESTS=OFF: pass
#                                            LIBRARIES and DEFINITIONS here, never afterwards.
include_guard(GLOBAL)

set(VYRE_TEST_SKIP_CODE 77)

if(NOT TARGET vyre_catch_main)
  add_library(vyre_catch_main STATIC "${PROJECT_SOURCE_DIR}/tests/support/catch_main.cpp")
  target_link_libraries(vyre_catch_main PUBLIC Catch2::Catch2)
  add_library(vyre_gpu_catch_main STATIC "${PROJECT_SOURCE_DIR}/tests/support/gpu_catch_main.cpp")
  target_link_libraries(vyre_gpu_catch_main PUBLIC Catch2::Catch2 vyre::vyre)
  target_compile_definitions(vyre_gpu_catch_main PRIVATE VYRE_TEST_SKIP_CODE=${VYRE_TEST_SKIP_CODE})
endif()

function(vyre_test_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra>)
endfunction()

function(vyre_add_host_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE vyre::vyre vyre_catch_main ${ARG_LIBRARIES})
  target_include_directories(${ARG_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests/support")
  vyre_test_warnings(${ARG_NAME})
  # --warn NoTests: an entry whose name matches no test case (a ';' in a test name splits it
  # into two such entries) fails instead of passing without running anything.
  catch_discover_tests(${ARG_NAME} TEST_PREFIX "${ARG_NAME}." DISCOVERY_MODE PRE_TEST
                       EXTRA_ARGS --warn NoTests)
endfunction()

function(vyre_add_gpu_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBRARIES;DEFINITIONS" ${ARGN})
  if(NOT VYRE_BUILD_GPU_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE vyre::vyre vyre_gpu_catch_main ${ARG_LIBRARIES})
  target_compile_definitions(${ARG_NAME} PRIVATE ${ARG_DEFINITIONS})
  target_include_directories(${ARG_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests/support")
  vyre_test_warnings(${ARG_NAME})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME})
  set_tests_properties(${ARG_NAME} PROPERTIES
    SKIP_RETURN_CODE ${VYRE_TEST_SKIP_CODE} LABELS gpu)
endfunction()
