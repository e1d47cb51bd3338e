# Compiler settings shared by the library, tests, benchmarks and examples.
include(GNUInstallDirs)

# The warnings beamlet's own code compiles with (and, with BEAMLET_WERROR, fails on).
set(BEAMLET_WARNING_FLAGS "")
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(BEAMLET_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                            -Wcast-align -Woverloaded-virtual)
  # Clang checks the core's lock annotations (lib/core/thread_safety.hpp) at compile time.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND BEAMLET_WARNING_FLAGS -Wthread-safety)
  endif()
  if(BEAMLET_WERROR)
    list(APPEND BEAMLET_WARNING_FLAGS -Werror)
  endif()
endif()

function(beamlet_set_warnings target)
  target_compile_options(${target} PRIVATE ${BEAMLET_WARNING_FLAGS})
endfunction()

# The command that checks a source against the public headers without building anything
# (-fsyntax-only: the front end's verdict, no code), for the tests that ask whether something
# compiles (checkheaders, the compile-fail tests). It calls the compiler directly, with the
# flags a target linking beamlet gets, rather than building a target of this tree: two builds
# of one tree must not run at once, and a direct compile lets ctest run these checks side by
# side and beside the other tests.
function(beamlet_syntax_check_command out)
  separate_arguments(flags UNIX_COMMAND "${CMAKE_CXX_FLAGS}")
  if(CMAKE_BUILD_TYPE)
    string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
    separate_arguments(config_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS_${config}}")
    list(APPEND flags ${config_flags})
  endif()
  # The directory's own options too (the sanitizers' flags and the warnings they turn off).
  get_property(dir_options DIRECTORY PROPERTY COMPILE_OPTIONS)
  list(APPEND flags ${dir_options})
  if(NOT DEFINED CMAKE_CXX_EXTENSIONS OR CMAKE_CXX_EXTENSIONS)
    list(APPEND flags ${CMAKE_CXX20_EXTENSION_COMPILE_OPTION})
  else()
    list(APPEND flags ${CMAKE_CXX20_STANDARD_COMPILE_OPTION})
  endif()
  set(${out} ${CMAKE_CXX_COMPILER} ${flags} -I${PROJECT_SOURCE_DIR}/include -fsyntax-only
      PARENT_SCOPE)
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
