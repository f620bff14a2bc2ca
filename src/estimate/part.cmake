# estimate: the allocation tracker, a preloadable library (not part of
# libloom: it replaces malloc). Built without sanitizers or coverage, which
# would wrap the very allocator it replaces.
add_library(loom_alloctrack SHARED ${CMAKE_SOURCE_DIR}/src/estimate/alloctrack/alloctrack.c)
set_target_properties(loom_alloctrack PROPERTIES OUTPUT_NAME loom_alloctrack
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_compile_options(loom_alloctrack PRIVATE -fno-sanitize=all -fno-sanitize-coverage=trace-pc-guard,trace-cmp,indirect-calls)
target_link_options(loom_alloctrack PRIVATE -fno-sanitize=all)
