# (after e2e.cmake, whose cd_e2e_test it uses) The CPU backend's cold/warm timing options (cpu:repeat, cpu:timing; docs/cpu-backend.md).
cd_e2e_test(e2e_cpu_timing test_cpu_timing.py)
