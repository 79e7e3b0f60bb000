#!/usr/bin/env bash
# Fresh machine → the whole test suite: set up and build, run every test (GPU tests are skipped,
# with a message, where no GPU is present), then build the CPU path with AddressSanitizer and
# UBSan and run the job-file corpus and the I/O tests under it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
(cd build && ctest --output-on-failure -j"$(nproc)")
echo "== sanitizers: job-file corpus and I/O under ASan + UBSan"
scripts/setup.sh build-asan -DWITH_CUDA=OFF -DTW_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# LeakSanitizer leaves libgomp's thread pool alone (tests/lsan.supp: reported now and then at exit on a
# loaded machine, not ours); test_lsan fails where the suppression is not in effect
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
(cd build-asan && TW_TEST_CASES=2 ctest --output-on-failure -j"$(nproc)" -L cpu -R '^(test_job|test_hdf5_roundtrip|test_model|test_stencil|test_sources|test_compare|test_segy|test_checkpoint|test_lsan|cli_bad_input)$')
echo "== schedule instrumentation: time-level shadow asserted on every read (TW_DEBUG_LEVELS);"
echo "   built without segyio too, as on the GPU machines: the SEG-Y features must say so (test_segy, cli_segy)"
scripts/setup.sh build-levels -DWITH_CUDA=OFF -DTW_DEBUG_LEVELS=ON -DWITH_SEGYIO=OFF
(cd build-levels && ctest --output-on-failure -j"$(nproc)" -R '^(test_schedule|test_window|test_cpu_diamond|test_checkpoint|test_segy|cli_segy)$')
