# Depthwise conv kernels (owner: h/dw): test_dw again with the AVX2 + FMA kernels forced
# (CLDIFF_GEMM_F32_KERNEL, gemm.h), so an AVX-512 machine checks both levels' bits.
add_test(NAME test_dw_avx2 COMMAND test_dw --jobs 1)
set_tests_properties(test_dw_avx2 PROPERTIES ENVIRONMENT "CLDIFF_GEMM_F32_KERNEL=avx2-fma" TIMEOUT 120)
