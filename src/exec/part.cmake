# The shepherd binary, next to loomd (the local executor looks for it there).
add_executable(loom-shepherd ${CMAKE_SOURCE_DIR}/src/exec/shepherd/main.c)
target_link_libraries(loom-shepherd PRIVATE loom_static)
