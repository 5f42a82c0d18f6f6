# Fault injector (tests/faultinj/faultinj.c): an OpenCL loader layer (OPENCL_LAYERS) that
# corrupts the output of one op's kernels as real GPU bugs do; the CI slice of the fault sweep
# (scripts/fault_sweep.py --ci) and the e2e tests of the failure paths use it.
# docs/planted-bugs.md, "Fault injection by op type".
add_library(faultinj SHARED ${CMAKE_CURRENT_SOURCE_DIR}/faultinj/faultinj.c)
target_include_directories(faultinj PRIVATE ${OPENCL_INCLUDE_DIR})
target_link_libraries(faultinj PRIVATE ${CMAKE_DL_LIBS} Threads::Threads m)
set_target_properties(faultinj PROPERTIES C_VISIBILITY_PRESET hidden)
# The layer is loaded into programs that are not sanitized (Paddle-Lite's runner, pl_planted):
# an ASan-linked layer aborts there ("ASan runtime does not come first"), so it is built plain
# in the sanitizer build too (an unsanitized library inside a sanitized cldiff is fine).
if(CLDIFF_SANITIZE)
  target_compile_options(faultinj PRIVATE -fno-sanitize=all)
  target_link_options(faultinj PRIVATE -fno-sanitize=all)
endif()

# The CI slice of the fault sweep: testdata/mobilenet_tiny.nb (fp32: scale, nan, row, stale;
# fp16: scale, rtz) and multi_input.nb (fp32: scale, row), one layer per op type, 62 runs. Fails
# on a tool error, a wrong layer, or a survivor whose fault is over 1.5x its bound. 70 runs
# took 125 s with the 2 cores at load 5-7 (25 s user + 39 s system CPU).
find_program(CD_FI_PYTHON NAMES python3)
set(CD_FI_PY ${CMAKE_SOURCE_DIR}/.venv/bin/python)
if(NOT EXISTS ${CD_FI_PY})
  set(CD_FI_PY ${CD_FI_PYTHON})
endif()
add_test(NAME fault_sweep_ci
  COMMAND ${CD_FI_PY} ${CMAKE_SOURCE_DIR}/scripts/fault_sweep.py --ci --cldiff $<TARGET_FILE:cldiff>
          --faultinj $<TARGET_FILE:faultinj> --out ${CMAKE_BINARY_DIR}/fault-sweep-ci --timeout 120)
set_tests_properties(fault_sweep_ci PROPERTIES TIMEOUT 400 LABELS e2e ENVIRONMENT "CLDIFF_NO_PROGRESS=1;NO_COLOR=1")
