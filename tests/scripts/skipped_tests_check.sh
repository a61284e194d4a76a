#!/bin/sh
# scripts/skipped-tests on the JUnit file of a real ctest run of three tests, made as
# gtest_discover_tests makes them: one passes, one skips for want of a GPU (expected), one skips
# because a library is missing (a feature left untested: it must be listed as not expected).
#   skipped_tests_check.sh SCRIPT CTEST
set -eu
script=$1
ctest=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
skip() {  # what GoogleTest prints for GTEST_SKIP() << REASON
  printf '[ RUN      ] %s\nx_test.cpp:7: Skipped\n%s\n[  SKIPPED ] %s (0 ms)\n' "$1" "$2" "$1" \
    >"$work/$1.out"
}
skip Gpu.needs_a_device "no CUDA device: cuda: no CUDA device available"
skip Lib.needs_a_library "host-jemalloc: libjemalloc.so.2 not found (apt-get install libjemalloc2)"
printf '[ RUN      ] Plain.passes\n[       OK ] Plain.passes (0 ms)\n' >"$work/Plain.passes.out"
for name in Gpu.needs_a_device Lib.needs_a_library Plain.passes; do
  echo "add_test($name cat $work/$name.out)"
  echo "set_tests_properties($name PROPERTIES SKIP_REGULAR_EXPRESSION \"  SKIPPED \")"
done >"$work/CTestTestfile.cmake"
(cd "$work" && "$ctest" --output-junit "$work/junit.xml" >/dev/null)
"$script" "check run=$work/junit.xml" >"$work/listing"
cat "$work/listing"
fail() { echo "skipped-tests: $1"; exit 1; }
grep -q "check run: 2 skipped" "$work/listing" || fail "not 2 skipped"
grep -q "Plain.passes" "$work/listing" && fail "lists a test that ran"
# Everything after the loud heading is the unexpected skips: the library's, with its reason, only.
sed -n '/^!!!! 1 skipped for a reason other than/,$p' "$work/listing" >"$work/unexpected"
grep -q "check run: Lib.needs_a_library: host-jemalloc: libjemalloc.so.2 not found" \
  "$work/unexpected" || fail "the library's skip is not flagged as unexpected"
grep -q "Gpu.needs_a_device" "$work/unexpected" && fail "the GPU skip is flagged"
grep -q "expected: needs a GPU" "$work/listing" || fail "the GPU skip is not called expected"
echo "skipped-tests check passed"
