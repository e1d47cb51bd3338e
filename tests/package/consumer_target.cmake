# Included by the add_subdirectory and fetch_content consumer projects once beamlet is part of
# their build: as a subproject beamlet adds only the library (no tests, benchmarks or install
# rules), and the consumer compiles against beamlet::beamlet. The tests build the target
# consumer_compiles only: the consumer's sources compiled with what beamlet::beamlet hands them
# (include paths, C++20, sanitizer flags); linking would compile the whole library a second
# time, which the main build has already done with the same sources.
if(TARGET stress_test OR TARGET bench_core)
  message(FATAL_ERROR "beamlet added its tests or benchmarks as a subproject")
endif()
if(NOT TARGET beamlet::beamlet)
  message(FATAL_ERROR "beamlet::beamlet is not defined for a subproject's consumers")
endif()
add_executable(consumer ${CMAKE_CURRENT_LIST_DIR}/consumer.cpp)
target_link_libraries(consumer PRIVATE beamlet::beamlet)
add_library(consumer_compiles OBJECT ${CMAKE_CURRENT_LIST_DIR}/consumer.cpp)
target_link_libraries(consumer_compiles PRIVATE beamlet::beamlet)
