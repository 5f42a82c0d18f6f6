# The Paddle-Lite SDK layer (src/backends/paddlelite/pl_sdk.h): the runners built for the real
# SDKs of .paddle-lite/ by `cldiff doctor` and run with no arguments (the armv8 one under
# qemu-aarch64); skipped (exit 77) with the reason where the SDKs, the compilers or qemu are
# missing. The lookup itself is unit-tested (tests/unit/test_pl_sdk.c).
add_test(NAME pl_sdk_runners
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/plsdk/test_pl_runners.sh $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(pl_sdk_runners PROPERTIES SKIP_RETURN_CODE 77 LABELS "paddle-lite;e2e" TIMEOUT 600)
