# cmake -DPKG_CONFIG=<pkg-config> -DPC_PATH=<dir of beamlet.pc> -DCXX=<compiler> -DFLAGS=<flags>
#       -DSOURCE=<consumer.cpp> -DOUT=<work dir> -P pkg_config.cmake
#
# Builds the consumer (as C++20, with the build's own flags: a sanitizer's) with what the
# installed beamlet.pc says (pkg-config --static, since the library is static), runs it, and
# fails unless it ran to its end.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config is not installed (scripts/bootstrap installs it)")
endif()
set(ENV{PKG_CONFIG_PATH} ${PC_PATH})
execute_process(COMMAND ${PKG_CONFIG} --modversion beamlet
  RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config does not find beamlet in ${PC_PATH}: ${err}")
endif()
execute_process(COMMAND ${PKG_CONFIG} --static --cflags --libs beamlet
  RESULT_VARIABLE rc OUTPUT_VARIABLE pc ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --static --cflags --libs beamlet: ${err}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc}")
separate_arguments(extra UNIX_COMMAND "${FLAGS}")
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${CXX} -std=c++20 ${extra} ${SOURCE} -o ${OUT}/consumer ${pc_flags}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer does not build with beamlet.pc's flags (${pc}):\n${err}")
endif()
# A shared beamlet is found where the package put it.
execute_process(COMMAND ${PKG_CONFIG} --variable=libdir beamlet
  OUTPUT_VARIABLE libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
set(ENV{LD_LIBRARY_PATH} ${libdir})
execute_process(COMMAND ${OUT}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("beamlet ${version} through pkg-config: ${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer: pong received")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}${err}")
endif()
