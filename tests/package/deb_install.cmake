# cmake -DPACKAGE_SCRIPT=<scripts/package> -DBUILD=<build tree> -DOUT=<work dir> -P deb_install.cmake
#
# Packages the build tree under test with scripts/package, checks that every dependency the
# packages declare is installed on this machine (so a plain `dpkg -i` here would not refuse
# them), and installs them with dpkg into a scratch root (OUT/root, its own dpkg database): the
# consumer tests then build against OUT/root/usr only (package.deb_find_package,
# package.deb_pkg_config).
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/root/var/lib/dpkg/updates ${OUT}/root/var/lib/dpkg/info)
file(TOUCH ${OUT}/root/var/lib/dpkg/status)

execute_process(COMMAND ${PACKAGE_SCRIPT} --build-dir ${BUILD} --out ${OUT}/deb
  RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scripts/package failed (${rc}): ${listing}${err}")
endif()
message("${listing}")
file(GLOB debs ${OUT}/deb/*.deb)
list(FILTER debs INCLUDE REGEX "/libbeamlet-dev_[^/]*\\.deb$|/libbeamlet[0-9.]+_[^/]*\\.deb$")
set(dev ${debs})
list(FILTER dev INCLUDE REGEX "/libbeamlet-dev_")
if(NOT dev)
  message(FATAL_ERROR "scripts/package made no libbeamlet-dev package: ${debs}")
endif()

# Each dependency group ("a | b") must have one member installed here.
foreach(deb IN LISTS debs)
  execute_process(COMMAND dpkg-deb --field ${deb} Depends
    OUTPUT_VARIABLE depends OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "," ";" groups "${depends}")
  foreach(group IN LISTS groups)
    string(REPLACE "|" ";" alternatives "${group}")
    set(found FALSE)
    foreach(alternative IN LISTS alternatives)
      string(REGEX REPLACE "\\(.*\\)" "" name "${alternative}")
      string(STRIP "${name}" name)
      if(name MATCHES "^libbeamlet")
        set(found TRUE)  # one of the packages made here
      else()
        execute_process(COMMAND dpkg-query -W -f=\${Status} ${name}
          OUTPUT_VARIABLE status ERROR_QUIET)
        if(status MATCHES "install ok installed")
          set(found TRUE)
        endif()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "${deb} depends on '${group}', which this machine does not have")
    endif()
  endforeach()
endforeach()

# --force-depends: the scratch database knows no other package; the check above stands for it.
# --force-script-chrootless: the runtime package's maintainer scripts run here, with DPKG_ROOT
# set, instead of in a chroot into a root that has no shell.
set(dpkg dpkg --force-not-root --force-depends --force-script-chrootless --instdir=${OUT}/root
         --admindir=${OUT}/root/var/lib/dpkg)
execute_process(COMMAND ${dpkg} --install ${debs}
  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg --install failed (${rc}): ${log}")
endif()
foreach(deb IN LISTS debs)
  execute_process(COMMAND dpkg-deb --field ${deb} Package
    OUTPUT_VARIABLE package OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND dpkg --admindir=${OUT}/root/var/lib/dpkg --status ${package}
    OUTPUT_VARIABLE status)
  if(NOT status MATCHES "Status: install ok installed")
    message(FATAL_ERROR "${package} is not installed in the scratch root:\n${status}")
  endif()
endforeach()
execute_process(COMMAND dpkg --admindir=${OUT}/root/var/lib/dpkg --listfiles libbeamlet-dev
  OUTPUT_VARIABLE files)
string(REPLACE "\n" ";" files "${files}")
foreach(want "/include/beamlet/beamlet\\.hpp$" "/include/beamlet/version\\.hpp$"
             "/cmake/beamlet/beamletConfig\\.cmake$" "/cmake/beamlet/beamletConfigVersion\\.cmake$"
             "/pkgconfig/beamlet\\.pc$" "/libbeamlet\\.(a|so)$" "/bin/beamlet-top$")
  set(hit ${files})
  list(FILTER hit INCLUDE REGEX "${want}")
  if(NOT hit)
    message(FATAL_ERROR "libbeamlet-dev installs nothing matching ${want}:\n${files}")
  endif()
  list(GET hit 0 hit)
  if(NOT EXISTS ${OUT}/root${hit})
    message(FATAL_ERROR "dpkg lists ${hit}, which is not in ${OUT}/root")
  endif()
endforeach()
set(headers ${files})
list(FILTER headers INCLUDE REGEX "/include/beamlet/.*\\.hpp$")
list(LENGTH headers n)
message("installed into ${OUT}/root: ${n} headers")
