# The phone route (paddle-lite-phone, docs/paddle-lite-phone.md) on the shared opencl,arm model:
# skipped (exit 77) with the reason where the arm64 PoCL sysroot (scripts/setup_phone.sh), the
# armv8 SDK, the model or the venv is missing. Cost: ~80 s the first time on a machine (PoCL
# compiles the model's kernels under qemu into cldiff's cache; minutes more on a loaded machine:
# TIMEOUT 1500 is a hang guard), 25-70 s after (warm PoCL cache; the rest of the checks).
add_test(NAME phone_route
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/phone/test_phone.sh $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(phone_route PROPERTIES SKIP_RETURN_CODE 77 LABELS "paddle-lite;e2e" TIMEOUT 1500 COST 80)
# the shared models folder as tests/e2e.cmake found it (CD_SHARED_MODELS at configure time, else
# ../shared/models beside the source tree)
if(DEFINED CD_E2E_SHARED)
  set_tests_properties(phone_route PROPERTIES ENVIRONMENT "CD_SHARED_MODELS=${CD_E2E_SHARED}")
endif()
