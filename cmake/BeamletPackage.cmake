# Debian packages with CPack (scripts/package builds them; tests/package installs and uses them):
#   libbeamlet-dev      headers, the static library (or the shared library's link name), the
#                       CMake package and beamlet.pc: what a build needs;
#   libbeamlet<soname>  the shared library, when beamlet is built shared (BEAMLET_SHARED): what a
#                       program needs to run. Debian names a library's package after its
#                       SONAME, which carries the minor version before 1.0 (libbeamlet0.2 holds
#                       libbeamlet.so.0.2), so two minors can be installed side by side.
# The packages install under /usr; configure with -DCMAKE_INSTALL_PREFIX=/usr (scripts/package
# does) for Debian's multiarch library folder (/usr/lib/<triplet>), else they use /usr/lib.
set(BEAMLET_PACKAGE_MAINTAINER "beamlet maintainers <maintainers@beamlet.invalid>" CACHE STRING
  "The Maintainer field of the Debian packages")

get_target_property(_beamlet_type beamlet TYPE)
set(_beamlet_runtime_package libbeamlet${_beamlet_soversion})

set(CPACK_PACKAGE_NAME beamlet)
set(CPACK_PACKAGE_VENDOR beamlet)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${BEAMLET_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS OFF)

set(CPACK_DEBIAN_BEAMLET_DEV_PACKAGE_NAME libbeamlet-dev)
set(CPACK_DEBIAN_BEAMLET_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_BEAMLET_DEV_DESCRIPTION
  "beamlet brings the Erlang/OTP process model to C++20: processes with mailboxes and
selective receive, links, monitors, GenServer, Supervisor, DynamicSupervisor and
PartitionSupervisor, sockets owned by processes, and Erlang distribution.
.
This package holds the development files: the headers, the library to link, the CMake package
(find_package(beamlet)) and the pkg-config file (pkg-config beamlet).")

# What a consumer's link needs beside the library: OpenSSL's link names for TLS distribution,
# and the C++ standard library the library was compiled against.
set(_beamlet_dev_depends "")
if(BEAMLET_TLS)
  list(APPEND _beamlet_dev_depends libssl-dev)
endif()
string(REGEX MATCH "^[0-9]+" _beamlet_cxx_major "${CMAKE_CXX_COMPILER_VERSION}")
if(BEAMLET_STDLIB_FLAG STREQUAL "-stdlib=libc++")
  # Clang's own libc++ (Debian packages it per LLVM version).
  list(APPEND _beamlet_dev_depends "libc++-${_beamlet_cxx_major}-dev"
                                   "libc++abi-${_beamlet_cxx_major}-dev")
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND _beamlet_dev_depends "libstdc++-${_beamlet_cxx_major}-dev | libstdc++-dev")
else()
  # Clang with GCC's library: the one Debian 12's Clang uses.
  list(APPEND _beamlet_dev_depends "libstdc++-12-dev | libstdc++-dev")
endif()
if(_beamlet_type STREQUAL "SHARED_LIBRARY")
  list(APPEND _beamlet_dev_depends
    "${_beamlet_runtime_package} (= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})")
  set(CPACK_COMPONENTS_ALL beamlet_dev beamlet_runtime)
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_PACKAGE_NAME ${_beamlet_runtime_package})
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_PACKAGE_SECTION libs)
  # dpkg-shlibdeps reads the library's own needs (libc6, libstdc++6, libssl3, ...).
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_PACKAGE_SHLIBDEPS ON)
  # A shlibs file, so that dpkg-shlibdeps can compute what a package built against it needs.
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # for the packages that hold a library
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
  # CPack's own scripts call ldconfig unconditionally; these skip it when dpkg installs into
  # another root (DPKG_ROOT), as the packaging tests do.
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/cmake/debian/postinst ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
  set(CPACK_DEBIAN_BEAMLET_RUNTIME_DESCRIPTION
    "beamlet brings the Erlang/OTP process model to C++20. This package holds the shared
library that programs built against libbeamlet-dev load at run time.")
else()
  set(CPACK_COMPONENTS_ALL beamlet_dev)
endif()
list(JOIN _beamlet_dev_depends ", " CPACK_DEBIAN_BEAMLET_DEV_PACKAGE_DEPENDS)

include(CPack)
