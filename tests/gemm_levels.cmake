# The fp32 GEMM / direct-conv levels below the best one this machine has (gemm.h,
# CLDIFF_GEMM_F32_KERNEL): test_gemm again with the AVX2 + FMA kernels forced, so an AVX-512
# machine still checks their bits (direct vs packed, threads, the sequential fmaf chain). The
# portable level is covered where it is the machine's own (no FMA guarantee there).
add_test(NAME test_gemm_avx2 COMMAND test_gemm --jobs 1)
set_tests_properties(test_gemm_avx2 PROPERTIES ENVIRONMENT "CLDIFF_GEMM_F32_KERNEL=avx2-fma" TIMEOUT 300)
