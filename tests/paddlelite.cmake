# The paddle-lite backend (docs/paddle-lite.md): instrument round trip and backend through the
# real runtime (skipped, exit 77 with the reason, without the .venv-pl that scripts/setup.sh
# makes or without ../shared/models), import (no runtime needed), and the C++ runner linked
# against the wheel (needs CLDIFF_PL_HEADERS, a folder with Paddle-Lite's paddle_api.h).
foreach(t pl_instrument pl_backend pl_import pl_runner pl_engines)
  add_test(NAME ${t} COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/paddlelite/test_${t}.py
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "paddle-lite;e2e"
                       TIMEOUT 600)
endforeach()
# Planted faults in Paddle-Lite's own OpenCL kernels (scripts/pl_planted.sh --ci: 2 plants on
# mask_detector, each must be a KERNEL FAULT at the planted layer; skips without SDKs, qemu, the
# wheel or libfaultinj).
if(TARGET faultinj)
  add_test(NAME pl_planted COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/paddlelite/test_pl_planted.py
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(pl_planted PROPERTIES ENVIRONMENT "${CD_E2E_ENV};CLDIFF_FAULTINJ=$<TARGET_FILE:faultinj>"
                       SKIP_RETURN_CODE 77 LABELS "paddle-lite;e2e" TIMEOUT 300)
endif()
