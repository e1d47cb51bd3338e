# cmake -DLIBRARY=<libbeamlet.so> -P shared_exports.cmake
#
# A shared beamlet exports what its public headers declare and nothing else of its own: the
# public API is there, the library's internal classes (declared under lib/ only) and Boost,
# which it compiles in, are not, so a program's own Boost cannot collide with it.
execute_process(COMMAND nm --dynamic --defined-only --demangle ${LIBRARY}
  RESULT_VARIABLE rc OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${LIBRARY} failed: ${err}")
endif()
string(REGEX MATCHALL "[^\n]*beamlet::[^\n]*" ours "${symbols}")
list(LENGTH ours n)
message("${LIBRARY}: ${n} exported symbols of beamlet")

foreach(public "beamlet::v0::runtime::runtime\\(" "beamlet::v0::basic_process::exit\\("
               "beamlet::v0::dynamic_supervisor::" "beamlet::v0::dist::start\\("
               "beamlet::v0::net::tcp_socket::" "beamlet::v0::logger::"
               "typeinfo for beamlet::v0::exit_exception")
  if(NOT symbols MATCHES "${public}")
    message(FATAL_ERROR "${LIBRARY} does not export ${public}")
  endif()
endforeach()
# Nothing whose name mentions Boost (its classes, its templates instantiated in beamlet).
string(REGEX MATCH "[^\n]*boost::[^\n]*" leak "${symbols}")
if(leak)
  message(FATAL_ERROR "${LIBRARY} exports a symbol of Boost's: ${leak}")
endif()
# Classes declared under lib/ only.
foreach(private "beamlet::v0::detail::timer_service::" "beamlet::v0::detail::timer_wheel::"
                "beamlet::v0::net::detail::io_engine::" "beamlet::v0::net::detail::acceptor_core::"
                "beamlet::v0::dist::detail::node_state::")
  string(REGEX MATCH "[^\n]*${private}[^\n]*" leak "${symbols}")
  if(leak)
    message(FATAL_ERROR "${LIBRARY} exports what no public header declares: ${leak}")
  endif()
endforeach()
