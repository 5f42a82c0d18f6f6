# Scheduling for CI time (issue 14). `ctest -j2` starts tests in order of COST, highest
# first, until Testing/Temporary/CTestCostData.txt holds measured times (so on every fresh CI
# build): the long tests start at once and overlap the many short ones instead of running
# alone at the end. Costs are seconds measured on a loaded 2-core machine. This file is
# included after the other tests/*.cmake (file(GLOB) sorts), so the tests exist; a test that
# is not registered in this build (no oclgrind, no shared models...) is passed over.
set(CD_TEST_COSTS
  fuzz_ci 120
  hardening_aarch64 90
  e2e_faults 60
  e2e_cl_prebuild 100
  mnn_arm 50
  fault_sweep_ci 50
  oracle_test_cl_conformance 30
  e2e_planted 25
  int8_models 24
  pl_engines 20
  diag_e2e 16
  pl_export_roundtrip 16
  pl_sdk_runners 15
  kernels_oclgrind 13
  e2e_fault_paths 11
  hardening_interrupt 10)
while(CD_TEST_COSTS)
  list(POP_FRONT CD_TEST_COSTS cd_t cd_c)
  if(TEST ${cd_t})
    set_tests_properties(${cd_t} PROPERTIES COST ${cd_c})
  endif()
endwhile()
