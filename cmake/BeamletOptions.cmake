# Compiler settings shared by the library, tests, benchmarks and examples.
include(GNUInstallDirs)

function(beamlet_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
      -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual)
    # Clang checks the core's lock annotations (lib/core/thread_safety.hpp) at compile time.
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      target_compile_options(${target} PRIVATE -Wthread-safety)
    endif()
    if(BEAMLET_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()

# Sanitizers instrument every target in the tree (library, tests, benchmarks), so they are
# directory-wide options rather than usage requirements.
# BEAMLET_SANITIZER_FLAGS is also handed to the packaging tests' consumer projects, which link
# the instrumented library.
if(BEAMLET_SANITIZE STREQUAL "address")
  set(BEAMLET_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                              -fno-sanitize-recover=undefined)
  # GCC's -Wmaybe-uninitialized reasons about the instrumented code and reports uninitialized
  # reads inside libstdc++ (std::optional copies, <regex>'s std::function) that the plain and
  # Clang builds, which check the same sources uninstrumented, do not see. Off here only.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
elseif(BEAMLET_SANITIZE STREQUAL "thread")
  set(BEAMLET_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  # GCC notes that TSan does not model atomic_thread_fence; Boost.Asio uses fences internally
  # (beamlet has one, in a seqlock reader whose data are atomics, which TSan checks without
  # it), and the note must not fail a -Werror build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    add_compile_options(-Wno-tsan)
  endif()
elseif(BEAMLET_SANITIZE STREQUAL "fuzz")
  # ASan+UBSan everywhere, and libFuzzer's coverage instrumentation (BEAMLET_COVERAGE_FLAGS)
  # only where the fuzzers need it: the library's layers and the fuzz targets. The tests,
  # which link the same library, compile faster and run faster without it (the sanitizer
  # runtime provides the coverage callbacks the library calls).
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BEAMLET_SANITIZE=fuzz needs Clang (libFuzzer)")
  endif()
  set(BEAMLET_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                              -fno-sanitize-recover=undefined)
  set(BEAMLET_COVERAGE_FLAGS -fsanitize=fuzzer-no-link)
elseif(BEAMLET_SANITIZE)
  message(FATAL_ERROR
    "BEAMLET_SANITIZE must be '', 'address', 'thread' or 'fuzz', got '${BEAMLET_SANITIZE}'")
endif()
if(BEAMLET_SANITIZER_FLAGS)
  add_compile_options(${BEAMLET_SANITIZER_FLAGS})
  add_link_options(${BEAMLET_SANITIZER_FLAGS})
endif()
