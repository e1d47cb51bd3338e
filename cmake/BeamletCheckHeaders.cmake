# checkheaders: compiles every public header on its own (twice in one translation unit, which
# also checks the include guard), so that no header depends on what its users happened to
# include first. The dev suite checks each header as a test of its own (checkheaders.<path>,
# tests/CMakeLists.txt); `cmake --build --preset dev --target checkheaders` checks them all.
# The layer folders and the umbrellas; the deprecated flat paths (and renamed headers) only
# forward, with a warning (the layers.old_header_paths_warn test compiles those).
set(_beamlet_inc ${PROJECT_SOURCE_DIR}/include/beamlet)
file(GLOB_RECURSE _beamlet_public_headers RELATIVE ${PROJECT_SOURCE_DIR}/include
  ${_beamlet_inc}/core/*.hpp ${_beamlet_inc}/otp/*.hpp ${_beamlet_inc}/observe/*.hpp
  ${_beamlet_inc}/net/*.hpp ${_beamlet_inc}/dist/*.hpp)
list(APPEND _beamlet_public_headers beamlet/beamlet.hpp beamlet/net.hpp beamlet/dist.hpp)
# Renamed headers inside the layer folders forward the same way.
list(REMOVE_ITEM _beamlet_public_headers beamlet/core/mailbox.hpp)
set(_checkheaders_sources "")
foreach(header IN LISTS _beamlet_public_headers)
  string(REPLACE "/" "__" stem ${header})
  string(REPLACE ".hpp" ".cpp" stem ${stem})
  set(src ${PROJECT_BINARY_DIR}/checkheaders/${stem})
  file(CONFIGURE OUTPUT ${src}
    CONTENT "// Generated: ${header} compiles alone.\n#include <${header}>\n#include <${header}>\n")
  list(APPEND _checkheaders_sources ${src})
endforeach()
add_library(checkheaders OBJECT EXCLUDE_FROM_ALL ${_checkheaders_sources})
target_link_libraries(checkheaders PRIVATE beamlet)
beamlet_set_warnings(checkheaders)
# Only whether each header compiles matters here, not the code it generates: the compiler
# checks each one fully and writes no object (so the target is rebuilt whenever it is asked for).
target_compile_options(checkheaders PRIVATE -fsyntax-only)
# For the tests: each header and the source that checks it.
set(BEAMLET_CHECKED_HEADERS ${_beamlet_public_headers})
set(BEAMLET_CHECKHEADERS_SOURCES ${_checkheaders_sources})
