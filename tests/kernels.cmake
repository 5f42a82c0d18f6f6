# OpenCL kernel checks (owner: clops).
# 1. Every kernels/*.cl compiles (prelude prepended) in fp32, fp16 and fp16-compute with
#    clang's OpenCL C front end (with the kernel-kind header the build generates).
add_test(NAME kernels_compile COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/check_kernels.sh ${CMAKE_SOURCE_DIR}/kernels
         ${CD_OP_KINDS_CL})
set_tests_properties(kernels_compile PROPERTIES LABELS opencl TIMEOUT 300)
# 2. Small cases of every kernel family under oclgrind (fp32 and fp16-storage variants;
#    oclgrind cannot run half arithmetic): fails on any error oclgrind reports (memory,
#    API misuse, data races) or when no kernel ran. The full PoCL conformance run
#    (tests/oracle/test_cl_conformance.py) is registered by tests/oracle.cmake.
find_program(CD_OCLGRIND oclgrind)
if(CD_OCLGRIND AND EXISTS /usr/lib/oclgrind/liboclgrind-rt.so)
  add_test(NAME kernels_oclgrind
           COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/oracle/test_cl_conformance.py --oclgrind
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(kernels_oclgrind PROPERTIES
    ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>;PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/oracle"
    LABELS opencl TIMEOUT 900)
else()
  message(STATUS "oclgrind or /usr/lib/oclgrind/liboclgrind-rt.so not found: kernels_oclgrind test not registered")
endif()
