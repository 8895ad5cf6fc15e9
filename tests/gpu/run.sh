#!/bin/bash
# tests/gpu/run.sh OUTDIR -- everything the CUDA backend must show on a GPU
# machine, in one run: it builds the project with CUDA for sm_90, runs the
# CUDA tests and the benchmark, and leaves its logs in OUTDIR (at most
# eight files: summary.txt last printed, then machine.txt, build.log,
# tests.log, bench.txt).
#
# The machine needs CUDA (nvcc, the driver), a C compiler and make; the
# rest comes with the tree in .gpu/ (tests/gpu/prepare.sh puts it there):
# the distribution tarball, so that no Autotools are needed, and Debian's
# zlib, xxHash, PCRE2 and pkg-config, unpacked into a folder of their own
# (never into /).  Without .gpu/, a tree with a configure script and a
# machine with the packages serve as well.
#
# What runs:
#   1. configure --enable-cuda --with-cuda-arch=sm_90; make
#   2. make check TESTS='tests/test-cuda-blocks tests/test-cuda tests/test-forward'
#      (test-cuda: the CUDA backend against the CPU's on every weight type)
#   3. qwen-run --device cuda on the tiny model: the message and exit status
#      of an unusable request (--device cuda on a model it refuses)
#   4. tests/bench/bench-cuda.sh: pp512 and tg128 on the 1.5b and 7b Q4_K_M
#      synthetic models, beside llama-bench when there is one: LLAMA_BENCH
#      names a llama-bench built with CUDA, or LLAMA_SRC a llama.cpp source
#      tree to build there (cmake, sm_90 only; minutes of the lease)
#
# Environment: GPU_WORK (scratch folder, default /tmp/gguf-gpu), JOBS
# (default: all cores), LLAMA_BENCH, LLAMA_SRC, BENCH_SIZES, BENCH_RUNS.
set -u
out=${1:?usage: tests/gpu/run.sh OUTDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${GPU_WORK:-/tmp/gguf-gpu}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out" "$work" || exit 2
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
t_start=$SECONDS
elapsed() { echo "$((SECONDS - t_start)) s"; }

{
    date -u
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
    command -v nvcc && nvcc --version | tail -n 2
    gcc --version | head -n 1
    nproc
} > "$out/machine.txt" 2>&1
say "machine: $(nvidia-smi -L 2>&1 | head -n 1)"

# --- dependencies ---
deps=$work/deps
conf_env=()
if ls "$src"/.gpu/debs/*.deb > /dev/null 2>&1; then
    mkdir -p "$deps"
    for f in "$src"/.gpu/debs/*.deb; do dpkg -x "$f" "$deps" || say "cannot unpack $f"; done
    lib=$deps/usr/lib/x86_64-linux-gnu
    export PATH=$deps/usr/bin:$PATH
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    conf_env=(CPPFLAGS="-I$deps/usr/include" LDFLAGS="-L$lib -Wl,-rpath,$lib"
              PCRE2_CFLAGS="-I$deps/usr/include" PCRE2_LIBS="-L$lib -lpcre2-8")
fi

# --- 1. build ---
tarball=$(ls "$src"/.gpu/gguf-tools-*.tar.gz 2>/dev/null | tail -n 1)
if [ -n "$tarball" ]; then
    rm -rf "$work/src"
    mkdir -p "$work/src"
    tar xzf "$tarball" -C "$work/src" --strip-components=1 || { say "cannot unpack $tarball"; exit 2; }
    tree=$work/src
elif [ -x "$src/configure" ]; then
    tree=$src
else
    say "no .gpu/ tarball (tests/gpu/prepare.sh) and no configure script: cannot build"
    exit 2
fi
build=$work/build
rm -rf "$build"
mkdir -p "$build"
cd "$build" || exit 2
if ! "$tree/configure" --enable-cuda --with-cuda-arch=sm_90 "${conf_env[@]}" > "$out/build.log" 2>&1 ||
   ! make -j"$jobs" >> "$out/build.log" 2>&1 ||
   ! make -j"$jobs" tests/gguf-synth tests/test-cuda tests/test-cuda-blocks tests/test-forward \
        >> "$out/build.log" 2>&1; then
    say "build failed ($(elapsed)); the end of build.log:"
    tail -n 30 "$out/build.log" | tee -a "$summary"
    exit 1
fi
say "build: $(grep -m1 'CUDA:' "$out/build.log" | sed 's/^ *//') ($(elapsed))"

# --- 2. tests ---
status=0
make -j"$jobs" check TESTS='tests/test-cuda-blocks tests/test-cuda tests/test-forward' \
    > "$out/tests.log" 2>&1 || status=1
for t in test-cuda-blocks test-cuda test-forward; do
    echo "==== tests/$t.log" >> "$out/tests.log"
    cat "tests/$t.log" >> "$out/tests.log" 2>/dev/null
    say "tests/$t: $(sed -n 's/^:test-result: //p' "tests/$t.trs" 2>/dev/null)"
done
grep -E 'against the CPU|greedy|positions|cuda: ' tests/test-cuda.log 2>/dev/null | tee -a "$summary"

# --- 3. the tool ---
./tests/gguf-synth --size small --type q8_0 -o "$work/q8.gguf" 2>> "$out/tests.log"
./gguf-requant -q --type 'blk.1.ffn_up.weight=q8_k' "$work/q8.gguf" "$work/q8k.gguf" 2>> "$out/tests.log"
./tests/gguf-synth --size tiny -o "$work/tiny.gguf" 2>> "$out/tests.log"
{
    echo "==== qwen-run --device cuda --stats (tiny)"
    ./qwen-run -m "$work/tiny.gguf" --device cuda -p hello -n 16 --temp 0 --stats; echo "exit $?"
    echo "==== qwen-run --device cuda on Q8_K weights (refused: exit 2)"
    ./qwen-run -m "$work/q8k.gguf" --device cuda -p hello -n 4 --temp 0; echo "exit $?"
    echo "==== qwen-run --device auto on Q8_K weights (the CPU)"
    ./qwen-run -m "$work/q8k.gguf" --device auto -p hello -n 4 --temp 0; echo "exit $?"
} >> "$out/tests.log" 2>&1
say "tool: $(grep -c '^exit' "$out/tests.log") runs, see tests.log ($(elapsed))"

# --- 4. benchmark ---
if [ -z "${LLAMA_BENCH:-}" ] && [ -n "${LLAMA_SRC:-}" ]; then
    say "building llama.cpp from $LLAMA_SRC"
    if cmake -S "$LLAMA_SRC" -B "$work/llama" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
            -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release > "$out/llama-build.log" 2>&1 &&
       cmake --build "$work/llama" -j"$jobs" --target llama-bench >> "$out/llama-build.log" 2>&1; then
        export LLAMA_BENCH=$work/llama/bin/llama-bench
    else
        say "llama.cpp build failed: see llama-build.log"
    fi
fi
top_srcdir=$tree top_builddir=$build BENCH_DIR=$work/models \
    bash "$tree/tests/bench/bench-cuda.sh" > "$out/bench.txt" 2>&1 || status=1
tee -a "$summary" < "$out/bench.txt"
say "done in $(elapsed), status $status"
exit $status
