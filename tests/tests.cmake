# Test registration. Every file is found by name, so adding a test needs no
# edit here:
#   tests/unit/test_<name>.c        cmocka program, test "unit.<name>"
#   tests/integration/test_<name>.sh|.py   test "integration.<name>"
#   tests/python/test_<name>.py     unittest of the Python SDK, test "unit.python_<name>"
#   tests/fuzz/fuzz_<name>.c        libFuzzer target (LOOM_FUZZ, clang), with a
#                                   short run as test "fuzz.<name>" seeded
#                                   from tests/fuzz/corpus/<name>/ if present
# Tests that start a Slurm (names containing "slurm") and all integration
# tests hold the lock "slurm": Slurm's daemons listen on fixed ports.
# Tests see LOOM_BUILD_DIR (this build), LOOM_PLAIN_BUILD_DIR (unsanitized
# build for ctypes, may be empty), LOOM_SOURCE_DIR. Nothing reads outside the
# repository but the optional conformance run (LOOM_MUSTACHE_SPEC).
# Tests need cmocka, which `make test` installs (scripts/deps.sh test); a
# plain build (`make`, `make run`) does without it and has no unit tests.
pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
if(NOT CMOCKA_FOUND)
  message(STATUS "tests: cmocka not found, no tests in this build (make test installs it)")
  return()
endif()

set(LOOM_TEST_ENV
    LOOM_BUILD_DIR=${CMAKE_BINARY_DIR}
    LOOM_PLAIN_BUILD_DIR=${LOOM_PLAIN_BUILD_DIR}
    LOOM_SOURCE_DIR=${CMAKE_SOURCE_DIR}
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

file(GLOB unit_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src ${unit_tests})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^test_" "" short ${name})
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} PRIVATE loomd_lib loom_static PkgConfig::CMOCKA)
  add_test(NAME unit.${short} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(unit.${short} PROPERTIES ENVIRONMENT "${LOOM_TEST_ENV}" TIMEOUT 300)
  if(short MATCHES "slurm")
    set_tests_properties(unit.${short} PROPERTIES RESOURCE_LOCK slurm) # one Slurm at a time
  endif()
  if(short STREQUAL "map")
    # core's malloc/calloc/realloc calls go through the test's __wrap_ functions, which can
    # fail the Nth one (tests/unit/test_map.c)
    target_link_options(${name} PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
  endif()
  if(short STREQUAL "alloc_fail")
    # loom's own malloc/calloc/realloc/strdup/strndup calls (in the static library's objects) go
    # through the test's __wrap_ functions, which can fail the Nth one
    # (tests/unit/test_alloc_fail.c)
    target_link_options(${name} PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc
                        -Wl,--wrap=strdup -Wl,--wrap=strndup)
  endif()
endforeach()

# Each part includes only the parts below it (docs/design.md, "Parts").
add_test(NAME unit.layers COMMAND bash ${CMAKE_SOURCE_DIR}/tests/layers.sh
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.layers PROPERTIES ENVIRONMENT "${LOOM_TEST_ENV}" TIMEOUT 60)

# The official Mustache specification, where a copy is given: skipped (77)
# with its reason where not.
foreach(pair "mustache:test_template" "mustache_plans:test_template_plan")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 tname)
  list(GET pair 1 prog)
  add_test(NAME conformance.${tname} COMMAND ${prog} --spec WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(conformance.${tname} PROPERTIES
                       ENVIRONMENT "${LOOM_TEST_ENV};LOOM_MUSTACHE_SPEC=${LOOM_MUSTACHE_SPEC}"
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# Helper of integration.runtime_agree: the simulator's starts, one a line.
add_executable(sim_starts ${CMAKE_SOURCE_DIR}/tests/integration/sim_starts.c)
target_link_libraries(sim_starts PRIVATE loom_static)

file(GLOB integ_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/test_*.sh
     ${CMAKE_SOURCE_DIR}/tests/integration/test_*.py)
foreach(src ${integ_tests})
  get_filename_component(name ${src} NAME_WE)
  get_filename_component(ext ${src} EXT)
  string(REGEX REPLACE "^test_" "" short ${name})
  if(ext STREQUAL ".py")
    set(cmd /usr/bin/python3 ${src})
  else()
    set(cmd bash ${src})
  endif()
  add_test(NAME integration.${short} COMMAND ${cmd} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(integration.${short} PROPERTIES ENVIRONMENT "${LOOM_TEST_ENV}" TIMEOUT 900
                       RESOURCE_LOCK "integration;slurm")
endforeach()

# The Python SDK (python/loom, docs/python.md): tests/python/test_<name>.py is
# test "unit.python_<name>", unittest against the in-process fake loomd of
# tests/python/fake_loomd.py (no loomd, no build); "unit.python_mypy" runs
# mypy --strict over the SDK (Debian's python3-mypy, scripts/deps/test.txt)
# and fails on any finding. Label "python" selects them all (ctest -L python).
file(GLOB py_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/python/test_*.py)
foreach(src ${py_tests})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^test_" "" short ${name})
  add_test(NAME unit.python_${short} COMMAND /usr/bin/python3 -m unittest -v ${name}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/python)
  set_tests_properties(unit.python_${short} PROPERTIES ENVIRONMENT "${LOOM_TEST_ENV}" TIMEOUT 300
                       LABELS "unit;python")
endforeach()
add_test(NAME unit.python_mypy
         COMMAND /usr/bin/python3 -m mypy --strict --config-file python/pyproject.toml
                 --cache-dir ${CMAKE_BINARY_DIR}/mypy-cache python/loom
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.python_mypy PROPERTIES TIMEOUT 600 LABELS "unit;python")

if(LOOM_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  # libloom's objects carry coverage instrumentation in this build (see the
  # top-level CMakeLists), so the fuzzer is guided through the library too.
  file(GLOB fuzz_targets CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${fuzz_targets})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" short ${name})
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE loomd_lib loom_static)
    add_test(NAME fuzz.${short}
             COMMAND ${CMAKE_SOURCE_DIR}/scripts/fuzz-run.sh $<TARGET_FILE:${name}>
                     ${CMAKE_BINARY_DIR}/fuzz-corpus/${short} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${short}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(fuzz.${short} PROPERTIES ENVIRONMENT "${LOOM_TEST_ENV}" TIMEOUT 300)
  endforeach()
endif()
