# (after e2e.cmake, whose cd_e2e_test it uses) The benchmark of issue 29: pl_probe_runner's
# --repeat/--op-times against the Debian Paddle-Lite x86 SDK and scripts/bench_cpu.sh on one small
# model, 1 round (docs/benchmarks.md "CPU reference vs Paddle-Lite x86"). Skips (77) without the
# SDK, g++ or a model.
cd_e2e_test(e2e_bench_cpu test_bench_cpu.py)
set_tests_properties(e2e_bench_cpu PROPERTIES LABELS "e2e;paddle-lite" TIMEOUT 300)
