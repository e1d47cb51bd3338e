# cmake -DCXX=<compiler> -DCXX_ID=<GNU|Clang> -DINCLUDE=<include dir> -DOUT=<work dir>
#       -P old_paths.cmake
#
# The public headers' paths before the layer folders (beamlet/process.hpp, ...) still compile,
# each with exactly one deprecation warning naming its new path and nothing else; with
# BEAMLET_NO_DEPRECATED_HEADER_WARNINGS defined, with no warning at all.
file(GLOB old_headers RELATIVE ${INCLUDE} ${INCLUDE}/beamlet/*.hpp ${INCLUDE}/beamlet/gen_server/*.hpp
     ${INCLUDE}/beamlet/core/mailbox.hpp)
# The umbrellas and the version (which belongs to no layer) are not moved paths.
list(REMOVE_ITEM old_headers beamlet/beamlet.hpp beamlet/net.hpp beamlet/dist.hpp
     beamlet/version.hpp)
list(LENGTH old_headers count)
if(count LESS 30)
  message(FATAL_ERROR "found only ${count} old header paths under ${INCLUDE}/beamlet")
endif()
set(source "// Generated: every deprecated header path.\n")
foreach(h IN LISTS old_headers)
  string(APPEND source "#include <${h}>\n")
endforeach()
file(MAKE_DIRECTORY ${OUT})
file(WRITE ${OUT}/old_paths.cpp "${source}")

# One line per diagnostic: no source excerpt under it, no wrapping.
set(flags -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wold-style-cast
          -I${INCLUDE})
if(CXX_ID STREQUAL "GNU")
  list(APPEND flags -fno-diagnostics-show-caret -fmessage-length=0)
else()
  list(APPEND flags -fno-caret-diagnostics)
endif()
# Compiles `file` (with `flags`); fails the test if it does not compile, else sets `err` (what
# the compiler printed) and `diagnostics` (its warning and error lines) in the caller.
function(compile_diagnostics file what)
  execute_process(COMMAND ${CXX} ${flags} ${file}
    RESULT_VARIABLE rc ERROR_VARIABLE e OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} do not compile:\n${e}")
  endif()
  string(REGEX MATCHALL "[^\n]*(warning|error)[^\n]*" d "${e}")
  set(err "${e}" PARENT_SCOPE)
  set(diagnostics "${d}" PARENT_SCOPE)
endfunction()

compile_diagnostics(${OUT}/old_paths.cpp "the old paths")
set(seen 0)
foreach(line IN LISTS diagnostics)
  if(line MATCHES "warning: <(beamlet/[a-z_/]+\\.hpp)> is deprecated: include <(beamlet/(core|otp|observe)/[a-z_/]+\\.hpp)>")
    set(old ${CMAKE_MATCH_1})
    set(new ${CMAKE_MATCH_2})
    if(NOT EXISTS ${INCLUDE}/${new})
      message(FATAL_ERROR "${old} points to ${new}, which does not exist")
    endif()
    math(EXPR seen "${seen} + 1")
  else()
    message(FATAL_ERROR "a diagnostic other than a deprecation:\n${line}\n\nall of it:\n${err}")
  endif()
endforeach()
if(NOT seen EQUAL count)
  message(FATAL_ERROR "${count} old paths, ${seen} deprecation warnings:\n${err}")
endif()

execute_process(COMMAND ${CXX} ${flags} -DBEAMLET_NO_DEPRECATED_HEADER_WARNINGS
                        ${OUT}/old_paths.cpp
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR err MATCHES "warning|error")
  message(FATAL_ERROR "with BEAMLET_NO_DEPRECATED_HEADER_WARNINGS:\n${err}")
endif()
message(STATUS "${count} old header paths: one deprecation warning each, and nothing else")

# Renamed names: each still compiles through its deprecated alias or forwarding member, with a
# warning that names the new one, and nothing else.
set(source "#include <beamlet/beamlet.hpp>\n")
string(APPEND source "void use_old_names(beamlet::runtime& rt, beamlet::process& self) {\n")
string(APPEND source "  beamlet::mailbox me(rt);\n")                          # scoped_process
string(APPEND source "  const beamlet::ack_wait m = self.get_ack_wait();\n")  # ack_wait_mode, ack_wait()
string(APPEND source "  (void)self.set_ack_wait(m);\n")                       # ack_wait(mode)
string(APPEND source "  (void)me.self();\n}\n")
set(old_names 4)
file(WRITE ${OUT}/old_names.cpp "${source}")
compile_diagnostics(${OUT}/old_names.cpp "the old names")
set(renamed 0)
foreach(line IN LISTS diagnostics)
  if(line MATCHES "warning: .* is deprecated: (beamlet::[a-z_]+ is now beamlet::[a-z_]+|use ack_wait\\((mode)?\\))")
    math(EXPR renamed "${renamed} + 1")
  else()
    message(FATAL_ERROR "a diagnostic other than a renamed name's deprecation:\n${line}\n\nall of it:\n${err}")
  endif()
endforeach()
if(NOT renamed EQUAL old_names)
  message(FATAL_ERROR "${old_names} uses of old names, ${renamed} deprecation warnings:\n${err}")
endif()
message(STATUS "${old_names} uses of old names: one deprecation warning each, and nothing else")
