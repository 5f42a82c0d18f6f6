# Fault injector (tests/faultinj/faultinj.c): an OpenCL loader layer (OPENCL_LAYERS) that
# corrupts the output of one op's kernels as real GPU bugs do; the CI slice of the fault sweep
# (scripts/fault_sweep.py --ci) and the e2e tests of the failure paths use it.
# docs/planted-bugs.md, "Fault injection by op type".
add_library(faultinj SHARED ${CMAKE_CURRENT_SOURCE_DIR}/faultinj/faultinj.c)
target_include_directories(faultinj PRIVATE ${OPENCL_INCLUDE_DIR})
target_link_libraries(faultinj PRIVATE ${CMAKE_DL_LIBS} Threads::Threads m)
set_target_properties(faultinj PROPERTIES C_VISIBILITY_PRESET hidden)
