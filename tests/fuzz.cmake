# Fuzzing (issue 5). Harnesses live in tests/fuzz/fuzz_<reader>.c, one per untrusted reader:
#   nb (cd_nb_load_mem), dump (cd_dump_open + what compare/report read), policy
#   (cd_policy_parse), npy (cd_npy_parse), png (cd_input_from_spec with a .png file).
#
# Two ways to build them:
#  * CLDIFF_FUZZ=ON (clang only; scripts/fuzz.sh configures such a build): fuzz_<reader> are
#    libFuzzer binaries (-fsanitize=fuzzer,address,undefined; the whole library is then
#    compiled with -fsanitize=fuzzer-no-link,address,undefined by fuzz.sh's CMAKE_C_FLAGS).
#  * any other build (gcc, the sanitizer build): fuzz_<reader>_replay, the same harness with
#    a plain main() (tests/fuzz/replay_main.c) that runs it once per file. The test
#    fuzz_regress_<reader> replays tests/fuzz/regressions/<reader>/ (every crash ever found,
#    minimised) plus the committed seeds on every CI run.
# Short fuzzing runs are the ctest entry `fuzz_ci` (scripts/fuzz.sh --ci), which builds its own
# clang configuration under ${CMAKE_BINARY_DIR}/fuzz-build; long runs are on demand
# (scripts/fuzz.sh --long SECONDS).
option(CLDIFF_FUZZ "Build libFuzzer harnesses (needs clang)" OFF)

set(CD_FUZZ_READERS nb dump policy npy png mnn)
set(CD_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)

if(CLDIFF_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CLDIFF_FUZZ=ON needs clang (libFuzzer): configure with CC=clang-14 or use scripts/fuzz.sh")
  endif()
  # The harnesses link only what the five readers reach: the model reader, the dump, the
  # policy and npy parsers, the input loader (src/cli/inputs.c), and what those call (the op
  # registry with the CPU backend's op tables, the plan, the comparison). Measured with nm over
  # a full build: 51 of cldiff_lib's 120 objects, all in the folders below. The rest (OpenCL and
  # Paddle-Lite backends, the local check, diagnosis, the CLI, reports, the embedded kernels) is
  # not compiled in the fuzz build, which was most of fuzz_ci's time (216 of 278 s, loaded
  # 2-core machine). A reader that starts calling into another folder fails to link here:
  # add the folder.
  file(GLOB CD_FUZZ_LIB_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_SOURCE_DIR}/src/model/*.c ${CMAKE_SOURCE_DIR}/src/store/*.c ${CMAKE_SOURCE_DIR}/src/util/*.c
    ${CMAKE_SOURCE_DIR}/src/compare/*.c ${CMAKE_SOURCE_DIR}/src/engine/*.c ${CMAKE_SOURCE_DIR}/src/backends/cpu/*.c
    ${CMAKE_SOURCE_DIR}/src/cli/inputs.c)
  # The CPU backend is linked (the op registry's tables point into it) but no harness runs its
  # kernels, and it is most of this build's compile time at -O1 under ASan + UBSan + coverage
  # (ops_nn_conv.c 24 s of CPU at -O1, 4 s at -O0; gemm.c over 90 s at -O1): -O0 there. The
  # sanitizers and the coverage instrumentation stay on; the readers keep fuzz.sh's -O1.
  file(GLOB CD_FUZZ_CPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/cpu/*.c)
  set_source_files_properties(${CD_FUZZ_CPU_SOURCES} PROPERTIES COMPILE_OPTIONS -O0)
  add_library(cldiff_fuzz_lib STATIC ${CD_FUZZ_LIB_SOURCES})
  target_include_directories(cldiff_fuzz_lib PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}
    ${HDF5_INCLUDE_DIRS} ${OPENCL_INCLUDE_DIR})
  target_compile_definitions(cldiff_fuzz_lib PUBLIC CL_TARGET_OPENCL_VERSION=120
    CLDIFF_VERSION="${PROJECT_VERSION}" ${HDF5_DEFINITIONS})
  target_link_libraries(cldiff_fuzz_lib PUBLIC ${HDF5_C_LIBRARIES} PNG::PNG OpenMP::OpenMP_C
    Threads::Threads ${CMAKE_DL_LIBS} m)
  foreach(r ${CD_FUZZ_READERS})
    add_executable(fuzz_${r} ${CD_FUZZ_DIR}/fuzz_${r}.c ${CD_FUZZ_DIR}/fuzz_common.c)
    target_include_directories(fuzz_${r} PRIVATE ${CD_FUZZ_DIR})
    target_compile_options(fuzz_${r} PRIVATE -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer)
    target_link_options(fuzz_${r} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${r} PRIVATE cldiff_fuzz_lib)
  endforeach()

  # Seed corpora, copied at configure time into the build tree (the shared models are not
  # committed; the generated test models and committed seeds are).
  set(CD_FUZZ_SEEDS ${CMAKE_BINARY_DIR}/fuzz-seeds)
  file(REMOVE_RECURSE ${CD_FUZZ_SEEDS})
  file(MAKE_DIRECTORY ${CD_FUZZ_SEEDS}/nb ${CD_FUZZ_SEEDS}/dump ${CD_FUZZ_SEEDS}/policy
       ${CD_FUZZ_SEEDS}/npy ${CD_FUZZ_SEEDS}/png)
  file(GLOB nb_seeds ${CMAKE_SOURCE_DIR}/testdata/*.nb ${CMAKE_SOURCE_DIR}/../shared/models/*.nb)
  if(nb_seeds)
    file(COPY ${nb_seeds} DESTINATION ${CD_FUZZ_SEEDS}/nb)
  endif()
  foreach(r ${CD_FUZZ_READERS})
    file(GLOB s ${CD_FUZZ_DIR}/seeds/${r}/* ${CD_FUZZ_DIR}/regressions/${r}/*)
    list(FILTER s EXCLUDE REGEX "/\\.gitkeep$")
    if(s)
      file(COPY ${s} DESTINATION ${CD_FUZZ_SEEDS}/${r})
    endif()
  endforeach()
else()
  foreach(r ${CD_FUZZ_READERS})
    add_executable(fuzz_${r}_replay ${CD_FUZZ_DIR}/fuzz_${r}.c ${CD_FUZZ_DIR}/fuzz_common.c
                   ${CD_FUZZ_DIR}/replay_main.c)
    target_include_directories(fuzz_${r}_replay PRIVATE ${CD_FUZZ_DIR})
    target_link_libraries(fuzz_${r}_replay PRIVATE cldiff_lib)
    set(dirs ${CD_FUZZ_DIR}/regressions/${r})
    if(EXISTS ${CD_FUZZ_DIR}/seeds/${r})
      list(APPEND dirs ${CD_FUZZ_DIR}/seeds/${r})
    endif()
    add_test(NAME fuzz_regress_${r} COMMAND fuzz_${r}_replay ${dirs})
    set_tests_properties(fuzz_regress_${r} PROPERTIES LABELS "fuzz;hardening" TIMEOUT 120)
    if(r STREQUAL "dump")
      # HDF5's own leaks on corrupt files (see tests/hardening/lsan-hdf5.supp); matters in
      # the sanitizer build, where LeakSanitizer is on.
      set_tests_properties(fuzz_regress_${r} PROPERTIES ENVIRONMENT
        "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/hardening/lsan-hdf5.supp;HDF5_USE_FILE_LOCKING=FALSE")
    endif()
  endforeach()

  # Short fuzzing of every harness (3 s each, after replaying its seeds and regressions) in
  # a separate clang build: it proves the libFuzzer build and the replay under clang's ASan +
  # UBSan; the real fuzzing is `scripts/fuzz.sh --long SECONDS`, on demand. (The sanitizer
  # pass replays the same seeds and regressions with gcc's ASan: fuzz_regress_<reader>.)
  # Not RUN_SERIAL: the fuzzers are single-threaded, so other tests share the machine.
  add_test(NAME fuzz_ci COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/fuzz.sh --ci
           --build ${CMAKE_BINARY_DIR}/fuzz-build)
  # TIMEOUT is a hang guard: scripts/test.sh runs the sanitizer builds beside this ctest, and on a
  # loaded 2-core machine this test once needed more than 600 s.
  set_tests_properties(fuzz_ci PROPERTIES LABELS "fuzz;hardening" TIMEOUT 1500 SKIP_RETURN_CODE 77)
endif()
