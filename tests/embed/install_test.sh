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
  nm -D --defined-only "$libdir/libfragscope.so" >"$work/capi.symbols"
  nm -D --defined-only "$libdir/libfragscope_torch.so" >"$work/torch.symbols"
  grep -q ' T fragscope_malloc$' "$work/capi.symbols" ||
    fail "libfragscope.so does not export fragscope_malloc"
  grep -q ' T fragscope_torch_malloc$' "$work/torch.symbols" ||
    fail "libfragscope_torch.so does not export fragscope_torch_malloc"
  ! grep -q '_ZN9fragscope' "$work/capi.symbols" "$work/torch.symbols" ||
    fail "a shared library exports C++ symbols of fragscope"
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
  "$work/example-pkgconfig" "$work/example-pkgconfig.fst" >"$work/example-pkgconfig.out" ||
    fail "the pkg-config build of examples/c does not run"
  grep -q "out of memory on device 0: capacity" "$work/example-pkgconfig.out" ||
    fail "the pkg-config build of examples/c printed no OOM report"
fi
# The C++ and C snippets of docs/embedding.md, compiled as the bodies of main() against the
# installed package, and run: the page's copy-paste examples stay true.
snippets=$work/snippets
mkdir -p "$snippets"
extract() {  # extract NAME: the fenced block after "<!-- snippet: NAME", #includes first
  awk -v name="$1" '
    index($0, "<!-- snippet: " name " ") == 1 { want = 1; next }
    want && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$source/docs/embedding.md" >"$snippets/$1.body"
  [ -s "$snippets/$1.body" ] || fail "no '$1' snippet in docs/embedding.md"
  grep '^#include' "$snippets/$1.body" || true
}
{ extract cpp; echo '#include <cstdio>'; echo 'int main() {'
  grep -v '^#include' "$snippets/cpp.body"; echo 'return 0; }'; } >"$snippets/snippet.cpp"
{ extract c; echo '#include <stdio.h>'; echo 'int main(void) {'
  grep -v '^#include' "$snippets/c.body"; echo 'return 0; }'; } >"$snippets/snippet.c"
cat >"$snippets/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(fragscope_doc_snippets LANGUAGES C CXX)
find_package(fragscope 0.1 REQUIRED)
add_executable(snippet-cpp snippet.cpp)
target_link_libraries(snippet-cpp PRIVATE fragscope::allocator fragscope::traces)
add_executable(snippet-c snippet.c)
target_link_libraries(snippet-c PRIVATE fragscope::capi)
CMAKE
cmake -S "$snippets" -B "$snippets/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      >"$work/snippets.log" 2>&1 && cmake --build "$snippets/build" >>"$work/snippets.log" 2>&1 ||
  { cat "$work/snippets.log"; fail "the snippets of docs/embedding.md do not build"; }
(cd "$snippets" && ./build/snippet-cpp >cpp.out && ./build/snippet-c >c.out) ||
  fail "a snippet of docs/embedding.md failed"
grep -q "request-too-large" "$snippets/cpp.out" || fail "the C++ snippet printed no OOM report"
grep -q "capacity" "$snippets/c.out" || fail "the C snippet printed no OOM report"
[ -s "$snippets/run.fst" ] || fail "the snippets wrote no trace"

echo "install test: ok ($prefix)"
