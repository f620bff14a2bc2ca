# estimate: the allocation tracker, a preloadable library (not part of
# libloom: it replaces malloc). Built without sanitizers or coverage, which
# would wrap the very allocator it replaces.
add_library(loom_alloctrack SHARED ${CMAKE_SOURCE_DIR}/src/estimate/alloctrack/alloctrack.c)
set_target_properties(loom_alloctrack PROPERTIES OUTPUT_NAME loom_alloctrack
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_compile_options(loom_alloctrack PRIVATE -fno-sanitize=all)
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  target_compile_options(loom_alloctrack PRIVATE
                         -fno-sanitize-coverage=trace-pc-guard,trace-cmp,indirect-calls)
endif()
target_link_options(loom_alloctrack PRIVATE -fno-sanitize=all)
# estimate: where loomd's estimates look up device names when neither
# --device-dir nor $LOOM_DEVICE_DIR says otherwise.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/estimate/request.c PROPERTIES
  COMPILE_DEFINITIONS LOOM_EST_DEVICE_DIR="${CMAKE_SOURCE_DIR}/workloads/devices")
