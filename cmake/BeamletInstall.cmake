# Install rules and an exported package, so that consumers can write
#   find_package(beamlet REQUIRED)  and link  beamlet::beamlet.
include(CMakePackageConfigHelpers)

# Two components, as Debian splits a library (cmake/BeamletPackage.cmake): `beamlet_runtime` is
# the shared library a program needs to run, `beamlet_dev` everything a build needs (headers, the static
# library or the shared library's link name, the CMake package, the pkg-config file).
install(TARGETS beamlet
  EXPORT beamletTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT beamlet_dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT beamlet_runtime NAMELINK_COMPONENT beamlet_dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT beamlet_runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/beamlet
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT beamlet_dev)

set(BEAMLET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/beamlet)
install(EXPORT beamletTargets
  FILE beamletTargets.cmake
  NAMESPACE beamlet::
  DESTINATION ${BEAMLET_CMAKE_DIR}
  COMPONENT beamlet_dev)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/beamletConfig.cmake.in
  ${PROJECT_BINARY_DIR}/beamletConfig.cmake
  INSTALL_DESTINATION ${BEAMLET_CMAKE_DIR})
# Before 1.0 only the same minor version is compatible (docs/versioning.md).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_beamlet_compatibility SameMinorVersion)
else()
  set(_beamlet_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/beamletConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${_beamlet_compatibility})
install(FILES
  ${PROJECT_BINARY_DIR}/beamletConfig.cmake
  ${PROJECT_BINARY_DIR}/beamletConfigVersion.cmake
  DESTINATION ${BEAMLET_CMAKE_DIR}
  COMPONENT beamlet_dev)

# pkg-config (beamlet.pc), for builds that do not use CMake. The library is static unless
# BEAMLET_SHARED, so what it links is in Libs.private (pkg-config --static --libs); a static
# library's consumer must also pull in the layers' startup object, which nothing names.
file(RELATIVE_PATH BEAMLET_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" BEAMLET_PC_TO_PREFIX "${BEAMLET_PC_TO_PREFIX}")
set(BEAMLET_PC_LINK_STARTUP "")
if(NOT BEAMLET_SHARED)
  set(BEAMLET_PC_LINK_STARTUP " -Wl,--undefined=beamlet_layer_hooks")
endif()
set(BEAMLET_PC_STDLIB "")
if(BEAMLET_STDLIB_FLAG)
  set(BEAMLET_PC_STDLIB " ${BEAMLET_STDLIB_FLAG}")
endif()
set(BEAMLET_PC_PRIVATE_LIBS "")
if(BEAMLET_TLS)
  set(BEAMLET_PC_PRIVATE_LIBS "-lssl -lcrypto")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/beamlet.pc.in ${PROJECT_BINARY_DIR}/beamlet.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/beamlet.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT beamlet_dev)

# Build-tree export: a consumer may point beamlet_DIR at the build directory.
export(EXPORT beamletTargets
  FILE ${PROJECT_BINARY_DIR}/beamletTargets.cmake
  NAMESPACE beamlet::)

# CPack writes the top-level project's CPackConfig.cmake and `package` target: only beamlet's
# own build makes packages, never a project that includes it.
if(BEAMLET_MASTER_PROJECT)
  include(${CMAKE_CURRENT_LIST_DIR}/BeamletPackage.cmake)
endif()
