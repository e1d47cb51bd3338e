# cmake -DROOT=<lib dir> [-DINCLUDE=<include dir>] -DLAYERS=core;otp;... -P check_layers.cmake
#
# LAYERS lists the layers bottom up. Fails when
#  - a file of lib/<A>/ includes (with quotes) a file that exists in lib/<B>/, B != A: a layer's
#    private headers are its own;
#  - a file of lib/<A>/ or of <include>/beamlet/<A>/ includes (with angle brackets) a public
#    header of a layer above A (<beamlet/<B>/...>, or the umbrellas beamlet/<B>.hpp and
#    beamlet/beamlet.hpp): a layer is built on the layers below it only;
#  - such a file includes a public header by a path outside the layer folders (the deprecated
#    flat paths), which would hide which layer it reaches.
set(bad "")

# The rank of each layer (0 = the bottom one).
set(rank 0)
foreach(layer IN LISTS LAYERS)
  set(rank_${layer} ${rank})
  math(EXPR rank "${rank} + 1")
endforeach()
set(top_rank ${rank})

function(check_angle_includes src layer)
  file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*<beamlet/[^>]+>")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<(beamlet/[^>]+)>.*" "\\1" inc "${line}")
    # The layer a path names: beamlet/<layer>/..., or a layer's umbrella beamlet/<layer>.hpp.
    # (${CMAKE_MATCH_1} is expanded before if() matches, hence the two steps.)
    set(target "")
    if(inc MATCHES "^beamlet/([a-z_]+)/")
      set(target ${CMAKE_MATCH_1})
    elseif(inc MATCHES "^beamlet/([a-z_]+)\\.hpp$")
      set(target ${CMAKE_MATCH_1})
    endif()
    if(inc STREQUAL "beamlet/version.hpp")
      set(target core)  # the version belongs to no layer; the core builds version()
    endif()
    if(inc STREQUAL "beamlet/beamlet.hpp")
      set(target_rank ${top_rank})
      set(target "every layer")
    elseif(target AND DEFINED rank_${target})
      set(target_rank ${rank_${target}})
    else()
      list(APPEND bad "${src}: includes <${inc}>, a path outside the layer folders")
      set(bad "${bad}" PARENT_SCOPE)
      continue()
    endif()
    if(target_rank GREATER rank_${layer})
      list(APPEND bad "${src}: includes <${inc}>, a header of ${target}, above ${layer}")
      set(bad "${bad}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

foreach(layer IN LISTS LAYERS)
  file(GLOB_RECURSE sources ${ROOT}/${layer}/*.cpp ${ROOT}/${layer}/*.hpp)
  foreach(src IN LISTS sources)
    file(STRINGS ${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
      get_filename_component(inc_name ${inc} NAME)
      foreach(other IN LISTS LAYERS)
        if(NOT other STREQUAL layer AND EXISTS ${ROOT}/${other}/${inc_name})
          list(APPEND bad "${src}: includes ${inc}, a private header of lib/${other}")
        endif()
      endforeach()
    endforeach()
    check_angle_includes(${src} ${layer})
  endforeach()
  if(INCLUDE)
    file(GLOB_RECURSE headers ${INCLUDE}/beamlet/${layer}/*.hpp)
    foreach(src IN LISTS headers)
      check_angle_includes(${src} ${layer})
    endforeach()
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "layer violation:\n  ${msg}")
endif()
