# The fp32 GEMM / direct-conv levels below the best one this machine has (gemm.h,
# CLDIFF_GEMM_F32_KERNEL): test_gemm again with the AVX2 + FMA kernels forced, so an AVX-512
# machine still checks their bits (direct vs packed, threads, the sequential fmaf chain). The
# portable level is covered where it is the machine's own (no FMA guarantee there).
add_test(NAME test_gemm_avx2 COMMAND test_gemm --jobs 1)
set_tests_properties(test_gemm_avx2 PROPERTIES ENVIRONMENT "CLDIFF_GEMM_F32_KERNEL=avx2-fma" TIMEOUT 300)
# The nn oracle (conv, depthwise incl. 1-3 row maps, 5x5 and dilated filters, pooling...) on
# the AVX2 + FMA float kernels (ops_nn_conv.c honours the same cap), against numpy/onnxruntime.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/oracle/test_nn.py)
  add_test(NAME oracle_test_nn_avx2 COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python
           ${CMAKE_CURRENT_SOURCE_DIR}/oracle/test_nn.py WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(oracle_test_nn_avx2 PROPERTIES
    ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>;PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/oracle;CLDIFF_GEMM_F32_KERNEL=avx2-fma"
    LABELS oracle TIMEOUT 600)
endif()
