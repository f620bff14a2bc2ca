# mon extras: the NVML test double (tests/nvml/nvml_double.c), a shared
# library named libnvidia-ml.so.1 in BUILD/nvml-double/, which tests load
# through LOOM_NVML_LIB (or LD_LIBRARY_PATH) on machines without a GPU.
add_library(nvml_double SHARED ${CMAKE_SOURCE_DIR}/tests/nvml/nvml_double.c)
target_include_directories(nvml_double PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(nvml_double PRIVATE PkgConfig::JANSSON Threads::Threads)
set_target_properties(nvml_double PROPERTIES
  OUTPUT_NAME nvidia-ml
  SOVERSION 1
  NO_SONAME OFF
  C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/nvml-double)
