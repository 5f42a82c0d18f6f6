# int8 oracle tests (docs/int8.md): the numpy integer reference (tests/oracle/int8_ref.py)
# against the CPU backend's int8 mode.
#  int8_layers: random int8 conv/depthwise/fc/mul/matmul layers through op_runner, bit-exact
#               (int8_layers_float_sums: the same without the AVX512-VNNI pointwise sums).
#  int8_models: every int8 layer of every int8 model in ../shared/models, recomputed from the
#               inputs cldiff dumped (--layers all), bit-exact; skipped (exit 77, shown as
#               "Skipped" by ctest) when that folder is absent.
set(CD_INT8_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
add_test(NAME int8_layers COMMAND ${CD_INT8_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/int8_layers_check.py
         --cases 200 WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(int8_layers PROPERTIES ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>"
                     LABELS oracle TIMEOUT 600)
# The same layers with the integer-SIMD pointwise sums switched off (CLDIFF_INT8_NO_VNNI=1): on a
# CPU with AVX512-VNNI both ways of summing a 1x1 conv stay tested (gemm_int8.h).
add_test(NAME int8_layers_float_sums COMMAND ${CD_INT8_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/int8_layers_check.py
         --cases 60 WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(int8_layers_float_sums PROPERTIES
                     ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>;CLDIFF_INT8_NO_VNNI=1"
                     LABELS oracle TIMEOUT 600)
add_test(NAME int8_models COMMAND ${CD_INT8_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/int8_models_check.py
         $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR}/../shared/models WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(int8_models PROPERTIES LABELS oracle TIMEOUT 900 SKIP_RETURN_CODE 77)
