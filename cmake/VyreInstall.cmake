# SPDX-License-Identifier: Apache-2.0
# Install, export and package config: find_package(vyre CONFIG) works from an install prefix
# and from the build tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VYRE_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/vyre")

install(TARGETS vyre EXPORT vyre-targets)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/vyre" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT vyre-targets NAMESPACE vyre:: DESTINATION "${VYRE_CMAKE_INSTALL_DIR}")
# The build tree's own targets file: vyre::vyre on the source tree's headers.
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/vyre-targets.cmake" CONTENT [=[
# Generated: vyre::vyre from the build tree of @PROJECT_SOURCE_DIR@.
add_library(vyre::vyre INTERFACE IMPORTED)
set_target_properties(vyre::vyre PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "@PROJECT_SOURCE_DIR@/include"
  INTERFACE_COMPILE_FEATURES "cxx_std_20"
  INTERFACE_LINK_LIBRARIES "CUDA::cudart")
]=] @ONLY)

# The optional JSON loader gets its own export set: the package config loads it only when the
# consumer has simdjson too, so a consumer without simdjson still finds vyre::vyre.
if(TARGET vyre_egraph_json)
  install(TARGETS vyre_egraph_json EXPORT vyre-egraph-json-targets)
  install(EXPORT vyre-egraph-json-targets NAMESPACE vyre:: DESTINATION "${VYRE_CMAKE_INSTALL_DIR}")
  file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/vyre-egraph-json-targets.cmake" CONTENT [=[
# Generated: vyre::egraph_json from the build tree of @PROJECT_SOURCE_DIR@.
add_library(vyre::egraph_json INTERFACE IMPORTED)
set_target_properties(vyre::egraph_json PROPERTIES
  INTERFACE_LINK_LIBRARIES "vyre::vyre;simdjson::simdjson")
]=] @ONLY)
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/vyre-config.cmake.in"
  "${PROJECT_BINARY_DIR}/vyre-config.cmake"
  INSTALL_DESTINATION "${VYRE_CMAKE_INSTALL_DIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/vyre-config-version.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)
configure_file("${PROJECT_SOURCE_DIR}/cmake/VyreCudaDialect.cmake"
  "${PROJECT_BINARY_DIR}/VyreCudaDialect.cmake" COPYONLY)
install(FILES
  "${PROJECT_SOURCE_DIR}/cmake/VyreCudaDialect.cmake"
  "${PROJECT_BINARY_DIR}/vyre-config.cmake"
  "${PROJECT_BINARY_DIR}/vyre-config-version.cmake"
  DESTINATION "${VYRE_CMAKE_INSTALL_DIR}")
