# The model zoo's CI slice (docs/zoo.md, tests/zoo/test_zoo_slice.py): models made by Paddle
# 2.6.2 + the paddlelite wheel's Opt (scripts/setup_zoo.sh builds .zoo/), cldiff's CPU against
# Paddle's own outputs and cpu,opencl fp32. Skipped (77) without .zoo/ or .venv-paddle.
add_test(NAME zoo_slice COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/zoo/test_zoo_slice.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(zoo_slice PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "zoo;e2e"
                     TIMEOUT 300)

# Engine slice (tests/zoo/test_zoo_engines.py): paddle-lite-arm,cpu on zoo models, Paddle's own
# outputs as the tiebreaker. Skipped (77) without .zoo/ or the armv8 SDK under qemu.
add_test(NAME zoo_engines COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/zoo/test_zoo_engines.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(zoo_engines PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "zoo;e2e"
                     TIMEOUT 300)

# Paddle-Lite's OpenCL engine (tests/zoo/test_zoo_ocl_engine.py): cpu,paddle-lite-opencl on zoo
# models, Opt's places for the x86 OpenCL library (report N), Paddle's outputs as the
# tiebreaker. Skipped (77) without .zoo/ or the paddle-lite-opencl engine.
add_test(NAME zoo_ocl_engine COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/zoo/test_zoo_ocl_engine.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(zoo_ocl_engine PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "zoo;e2e"
                     TIMEOUT 300)
