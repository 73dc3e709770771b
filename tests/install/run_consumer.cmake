# SPDX-License-Identifier: Apache-2.0
# cmake -P script: install vyre (MODE=prefix) or use its build tree (MODE=build_tree), then
# configure, build and run the consumer project.
cmake_minimum_required(VERSION 3.25)

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT status EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "step failed (${status}): ${command}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
if(MODE STREQUAL "prefix")
  set(prefix "${WORK_DIR}/install")
  run_step(${CMAKE_COMMAND_PATH} --install "${VYRE_BINARY_DIR}" --prefix "${prefix}")
  if(NOT EXISTS "${prefix}/include/vyre/vyre.hpp")
    message(FATAL_ERROR "install did not place include/vyre/vyre.hpp under ${prefix}")
  endif()
  set(find_args "-DCMAKE_PREFIX_PATH=${prefix}")
else()
  set(find_args "-Dvyre_DIR=${VYRE_BINARY_DIR}")
endif()

run_step(${CMAKE_COMMAND_PATH} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  ${find_args} -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND_PATH} --build "${WORK_DIR}/build")
run_step("${WORK_DIR}/build/vyre_consumer")
