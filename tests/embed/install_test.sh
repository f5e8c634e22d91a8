#!/usr/bin/env bash
# embed.install: `cmake --install` into a temporary prefix, then examples/cpp built against it as a
# separate CMake project (Ninja, offline), run on the host backing, and its trace read by the
# installed `fragscope report`; examples/c built with pkg-config alone.
#   install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR C_COMPILER
set -euo pipefail
build=$1 source=$2 work=$3 cc=$4
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log"

# What is installed.
for file in include/fragscope/fragscope.h include/fragscope/allocator/memory_system.hpp \
            include/fragscope/traces/trace_writer.hpp bin/fragscope bin/fragscope-alloc-demo; do
  [ -e "$prefix/$file" ] || fail "$file is not installed"
done
libdir=$(dirname "$(find "$prefix" -name libfragscope_allocator.a | head -1)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "libfragscope_allocator.a is not installed"
for file in libfragscope_traces.a libfragscope.so libfragscope_torch.so \
            cmake/fragscope/fragscopeConfig.cmake cmake/fragscope/fragscopeConfigVersion.cmake \
            cmake/fragscope/fragscope-targets.cmake pkgconfig/fragscope.pc; do
  [ -e "$libdir/$file" ] || fail "$libdir/$file is not installed"
done
# The shared libraries export the C entry points and nothing of the C++ inside.
if command -v nm >/dev/null; then
  nm -D --defined-only "$libdir/libfragscope.so" | grep -q ' T fragscope_malloc$' ||
    fail "libfragscope.so does not export fragscope_malloc"
  nm -D --defined-only "$libdir/libfragscope_torch.so" | grep -q ' T fragscope_torch_malloc$' ||
    fail "libfragscope_torch.so does not export fragscope_torch_malloc"
  ! nm -D --defined-only "$libdir/libfragscope.so" | grep -q '_ZN9fragscope' ||
    fail "libfragscope.so exports C++ symbols"
fi

# A separate project: find_package(fragscope), fragscope::allocator, fragscope::traces,
# fragscope::capi.
export PATH="/usr/local/cuda/bin:$PATH"  # the package finds CUDAToolkit when fragscope has CUDA
cmake -S "$source/examples/cpp" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" ||
  { cat "$work/consumer-configure.log"; fail "the consumer project does not configure"; }
cmake --build "$work/consumer" >"$work/consumer-build.log" ||
  { cat "$work/consumer-build.log"; fail "the consumer project does not build"; }

"$work/consumer/fragscope-example" "$work/example.fst" >"$work/example.out" ||
  { cat "$work/example.out"; fail "fragscope-example failed"; }
grep -q "out of memory on device 0: request-too-large" "$work/example.out" ||
  fail "fragscope-example printed no OOM report"

status=0
"$prefix/bin/fragscope" report "$work/example.fst" --json >"$work/report.json" || status=$?
[ "$status" -eq 1 ] || fail "fragscope report exited $status, expected 1 (one OOM)"
# 3 steps of 1 + 2 + ... + 8 MiB live at once: peak LOAD 36 MiB; the 100 MiB request is too large.
grep -Eq '"peak_load": 37748736\b' "$work/report.json" || fail "peak LOAD is not 36 MiB: $(cat "$work/report.json")"
grep -Eq '"cause": "request-too-large"' "$work/report.json" || fail "no request-too-large OOM"
grep -Eq '"request": 104857600\b' "$work/report.json" || fail "the OOM request is not 100 MiB"
"$prefix/bin/fragscope" report "$work/example.fst" >"$work/report.txt" || true
grep -q "request-too-large" "$work/report.txt" || fail "the text report does not explain the OOM"

# The C example through the CMake package (fragscope::capi) ...
"$work/consumer/fragscope-example-c" "$work/example-c.fst" >"$work/example-c.out" ||
  fail "fragscope-example-c failed"
grep -q "out of memory on device 0: capacity" "$work/example-c.out" || fail "no C OOM report"
status=0
"$prefix/bin/fragscope" report "$work/example-c.fst" --json >"$work/report-c.json" || status=$?
[ "$status" -eq 1 ] || fail "fragscope report of the C trace exited $status, expected 1"
grep -Eq '"peak_load": 50331648\b' "$work/report-c.json" || fail "C trace: peak LOAD is not 48 MiB"

# ... and through pkg-config alone.
if command -v pkg-config >/dev/null; then
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs fragscope)
  # shellcheck disable=SC2086
  "$cc" -std=c11 -Wall -Werror "$source/examples/c/main.c" $flags -Wl,-rpath,"$libdir" \
        -o "$work/example-pkgconfig"
  "$work/example-pkgconfig" "$work/example-pkgconfig.fst" | grep -q "capacity" ||
    fail "the pkg-config build of examples/c does not run"
fi
echo "install test: ok ($prefix)"
