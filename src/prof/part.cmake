# prof extras:
# - prof_synth, the synthetic workload of the profiler's tests (busy/idle
#   phases with known CPU time, step markers);
# - libloom_cupti.so, the CUPTI activity tracer injected with --kernels,
#   built only where the CUDA toolkit with CUPTI is installed
#   (LOOM_CUDA_ROOT, default /usr/local/cuda), and prof_cupti_probe, which
#   loads it and calls InitializeInjection as the CUDA driver would.
add_executable(prof_synth ${CMAKE_SOURCE_DIR}/tests/integration/prof_synth.c)

set(LOOM_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit (for the CUPTI tracer)")
find_path(LOOM_CUPTI_INCLUDE cupti_activity.h
          HINTS ${LOOM_CUDA_ROOT}/include ${LOOM_CUDA_ROOT}/extras/CUPTI/include NO_DEFAULT_PATH)
find_library(LOOM_CUPTI_LIBRARY cupti
             HINTS ${LOOM_CUDA_ROOT}/lib64 ${LOOM_CUDA_ROOT}/lib
                   ${LOOM_CUDA_ROOT}/extras/CUPTI/lib64 NO_DEFAULT_PATH)
if(LOOM_CUPTI_INCLUDE AND LOOM_CUPTI_LIBRARY)
  message(STATUS "prof: CUPTI found (${LOOM_CUPTI_LIBRARY}); building libloom_cupti.so")
  file(GLOB cupti_src CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/prof/cupti/*.c)
  add_library(loom_cupti SHARED ${cupti_src})
  # cuda.h and cupti.h use a few constructs our warnings reject.
  target_include_directories(loom_cupti SYSTEM PRIVATE ${LOOM_CUPTI_INCLUDE}
                             ${LOOM_CUDA_ROOT}/include)
  target_link_libraries(loom_cupti PRIVATE ${LOOM_CUPTI_LIBRARY} Threads::Threads)
  get_filename_component(cupti_dir ${LOOM_CUPTI_LIBRARY} DIRECTORY)
  set_target_properties(loom_cupti PROPERTIES BUILD_RPATH ${cupti_dir} INSTALL_RPATH ${cupti_dir})
  add_executable(prof_cupti_probe ${CMAKE_SOURCE_DIR}/tests/integration/prof_cupti_probe.c)
  target_link_libraries(prof_cupti_probe PRIVATE ${CMAKE_DL_LIBS})
else()
  message(STATUS "prof: no CUPTI under ${LOOM_CUDA_ROOT}; the --kernels tracer is not built")
endif()
