# `cmake --install` (make install PREFIX=...): the programs, libloom (shared
# and static) with its headers and loom.pc, the shipped data under
# share/loom (found there by loom_data_path), man pages, bash completion,
# the systemd unit and sysusers entry, the configuration file, the
# Prometheus rules. Included from the top-level CMakeLists.txt after
# GNUInstallDirs and the targets.
set(LOOMD_CONFIG_DEFAULT ${CMAKE_INSTALL_FULL_SYSCONFDIR}/loom/loomd.conf)
# Both the daemon's objects (config.c reads the file) and main.c (its --help names it).
target_compile_definitions(loomd PRIVATE LOOMD_CONFIG_DEFAULT="${LOOMD_CONFIG_DEFAULT}")
target_compile_definitions(loomd_lib PRIVATE LOOMD_CONFIG_DEFAULT="${LOOMD_CONFIG_DEFAULT}")
set_target_properties(loom_shared PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})

install(TARGETS loom_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# loomd finds loom-shepherd beside itself (src/exec/local.c); loom prof
# finds libloom_cupti.so beside loom (a build tree), else in the library
# directory, LOOM_LIB_FROM_BIN away from loom (src/cli/cmd_prof.c).
install(TARGETS loomd loom-shepherd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
file(RELATIVE_PATH LOOM_LIB_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/cli/cmd_prof.c APPEND PROPERTY COMPILE_DEFINITIONS
             LOOM_LIB_FROM_BIN="${LOOM_LIB_FROM_BIN}")
if(TARGET loom_cupti)
  install(TARGETS loom_cupti LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS loom_alloctrack LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS loom_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS loom_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

configure_file(${CMAKE_SOURCE_DIR}/dist/loom.pc.in ${CMAKE_BINARY_DIR}/loom.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# workloads/ is laid out as share/loom is: catalogs name ../templates, ../jobs.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/workloads/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loom
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)

# `loom estimate calibrate` runs this script (src/cli/cmd_estimate.c finds it
# through loom_data_path("calibrate") outside the build tree).
install(FILES ${CMAKE_SOURCE_DIR}/bench/estimate_calibrate.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/loom/calibrate)

install(FILES ${CMAKE_SOURCE_DIR}/dist/man/loom.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/dist/man/loomd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${CMAKE_SOURCE_DIR}/dist/completion/loom.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME loom)

# systemd looks in PREFIX/lib/systemd/system for /usr and /usr/local.
configure_file(${CMAKE_SOURCE_DIR}/dist/systemd/loomd.service.in ${CMAKE_BINARY_DIR}/loomd.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/loomd.service DESTINATION lib/systemd/system)
# The shared (multi-user) mode: loomd as root with --multi-user (docs/security.md).
configure_file(${CMAKE_SOURCE_DIR}/dist/systemd/loomd-multiuser.service.in
               ${CMAKE_BINARY_DIR}/loomd-multiuser.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/loomd-multiuser.service DESTINATION lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/dist/systemd/loom.sysusers.conf DESTINATION lib/sysusers.d
        RENAME loom.conf)

install(DIRECTORY ${CMAKE_SOURCE_DIR}/dist/prometheus/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loom/prometheus)

# The configuration file: an existing one (an operator's) is kept.
install(CODE "
  set(conf \"\$ENV{DESTDIR}${LOOMD_CONFIG_DEFAULT}\")
  if(EXISTS \"\${conf}\")
    message(STATUS \"Keeping: \${conf}\")
  else()
    file(INSTALL ${CMAKE_SOURCE_DIR}/dist/loomd.conf DESTINATION \"${CMAKE_INSTALL_FULL_SYSCONFDIR}/loom\")
  endif()")
