# beamlet is built in layers, bottom up: core (processes, mailboxes, scheduler, timers, names),
# otp (proc_lib, gen_server, supervisors), observe (logger, reports, metrics, HTTP endpoint),
# net (sockets as processes) and dist (Erlang distribution). Each layer is an object library
# compiled from lib/<layer>/, against the public headers (include/beamlet/<layer>/ and those of
# the layers below) and its own private headers only; the `beamlet` library is made of all
# their objects.
#
# beamlet_add_layer(<name> SOURCES <files...>) defines the object library beamlet_<name>.
# Internal target: do not depend on it directly, link beamlet::beamlet.
#
# The rule "a layer includes no private header of another layer" is enforced twice: the
# compiler cannot find another layer's private headers (they are not on the include path),
# and the check_layers target (built with everything) fails on any `#include "..."` in
# lib/<layer>/ that names a file of another layer's folder, however it is spelled. The same
# target fails when lib/<layer>/ or include/beamlet/<layer>/ includes a public header of a
# layer above it (<beamlet/<upper>/...>), or a public header by a deprecated flat path.

# The standard headers most of the layers' files include (BEAMLET_PCH).
set(_beamlet_pch_headers
  <algorithm> <array> <atomic> <chrono> <condition_variable> <cstddef> <cstdint> <cstring>
  <deque> <exception> <functional> <limits> <map> <memory> <mutex> <optional> <stdexcept>
  <string> <string_view> <system_error> <thread> <type_traits> <typeinfo> <unordered_map>
  <utility> <variant> <vector>)

function(beamlet_add_layer name)
  cmake_parse_arguments(L "" "" "SOURCES" ${ARGN})
  set(target beamlet_${name})
  add_library(${target} OBJECT ${L_SOURCES})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target}
    PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    PRIVATE
      ${CMAKE_CURRENT_SOURCE_DIR})
  # Boost (Asio timers, core::demangle) is an implementation detail: consumers never see it.
  target_include_directories(${target} SYSTEM PRIVATE ${Boost_INCLUDE_DIRS})
  # Asio 1.74 uses std::invoke_result only where it knows the compiler has it (MSVC), and
  # std::result_of otherwise, which C++20 removed and libc++ 16 no longer declares.
  target_compile_definitions(${target} PRIVATE BOOST_ASIO_NO_DEPRECATED
                                               BOOST_ASIO_HAS_STD_INVOKE_RESULT=1)
  if(BEAMLET_COUNT_LOCKS)
    target_compile_definitions(${target} PRIVATE BEAMLET_COUNT_LOCKS=1)
  endif()
  if(BEAMLET_SYSTEM_ALLOCATOR)
    target_compile_definitions(${target} PRIVATE BEAMLET_SYSTEM_ALLOCATOR=1)
  endif()
  if(BEAMLET_SHARED)
    # Hidden unless a public header declares it (BEAMLET_BEGIN_NAMESPACE's pragma): the ABI
    # is the public headers, and Boost's and the library's internals stay out of it.
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                               CXX_VISIBILITY_PRESET hidden)
  endif()
  beamlet_set_warnings(${target})
  # A function of the library that is not static, not in an anonymous namespace, and defined
  # without a declaration seen first is either a public one whose header the file forgot (in a
  # shared beamlet it would then be hidden: the definition, in a private namespace block, is its
  # first declaration) or a helper that should be internal.
  # (GCC's -Wmissing-declarations; Clang's is -Wmissing-prototypes.)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wmissing-prototypes)
  else()
    target_compile_options(${target} PRIVATE -Wmissing-declarations)
  endif()
  if(BEAMLET_COVERAGE_FLAGS)
    target_compile_options(${target} PRIVATE ${BEAMLET_COVERAGE_FLAGS})
  endif()
  if(BEAMLET_PCH)
    # The first layer precompiles the header, the others reuse it: every layer is compiled
    # with the same flags (this function's), which a precompiled header requires.
    get_property(pch_owner GLOBAL PROPERTY BEAMLET_PCH_OWNER)
    if(pch_owner)
      target_precompile_headers(${target} REUSE_FROM ${pch_owner})
    else()
      target_precompile_headers(${target} PRIVATE ${_beamlet_pch_headers})
      set_property(GLOBAL PROPERTY BEAMLET_PCH_OWNER ${target})
    endif()
  endif()
  set_property(GLOBAL APPEND PROPERTY BEAMLET_LAYERS ${name})
endfunction()

# Adds the check_layers target over every layer defined so far.
function(beamlet_check_layers)
  get_property(layers GLOBAL PROPERTY BEAMLET_LAYERS)
  add_custom_target(check_layers ALL
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR}/lib
            -DINCLUDE=${PROJECT_SOURCE_DIR}/include "-DLAYERS=${layers}"
            -P ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
    COMMENT "Checking that no layer includes another layer's private headers or a layer above"
    VERBATIM)
endfunction()
