# gen: where the shipped templates are found when neither --templates nor
# $LOOM_TEMPLATE_DIR says otherwise.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/gen/catalog_source.c PROPERTIES
  COMPILE_DEFINITIONS LOOM_GEN_TEMPLATE_DIR="${CMAKE_SOURCE_DIR}/workloads/templates")
