#!/bin/bash
# tests/gpu/run.sh OUTDIR -- everything the CUDA backend must show on a GPU
# machine, in one run: it builds the project with CUDA for sm_90, runs the
# CUDA tests and the benchmark, and leaves its logs in OUTDIR (at most
# eight files: summary.txt last printed, then machine.txt, build.log,
# tests.log, bench.txt).
#
# The machine needs CUDA (nvcc, the driver) and a C compiler; the rest
# comes with the tree in .gpu/ (tests/gpu/prepare.sh puts it there): the
# distribution tarball, so that no Autotools are needed, and Debian's
# zlib, xxHash, PCRE2, libcrypto, pkg-config and make, unpacked into a
# folder of their own (never into /).  Without .gpu/, a tree with a configure script and a
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
#      tree (or a .tar.gz of one) to build there (cmake, sm_90 only; it
#      builds from the start, beside steps 1 to 3)
#
# Environment: GPU_STEPS (default "build test bench"; a later call on the
# same machine can run "bench" alone over the first one's build; "cpu"
# adds step 5, the CPU kernels on the GPU machine's processor), GPU_WORK
# (scratch folder, default /tmp/gguf-gpu), JOBS (default: all cores),
# LLAMA_BENCH, LLAMA_SRC, PEER_WAIT (seconds the bench step waits for the
# peer's build, default 900), BENCH_SIZES, BENCH_RUNS; for step 5
# LLAMA_CPU_BIN, CPU_LIST (default: cpu0 and a core that is not its
# sibling), CPU_PARALLEL (default 16).
set -u
out=${1:?usage: tests/gpu/run.sh OUTDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${GPU_WORK:-/tmp/gguf-gpu}
jobs=${JOBS:-$(nproc)}
steps=${GPU_STEPS:-build test bench}
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
    grep -m1 '^model name' /proc/cpuinfo
    echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|amx_[a-z0-9]+)$' | tr '\n' ' ')"
} > "$out/machine.txt" 2>&1
say "machine: $(nvidia-smi -L 2>&1 | head -n 1)"
say "$(grep -E '^(model name|cpu flags)' "$out/machine.txt")"

# --- dependencies ---
deps=$work/deps
conf_env=()
if ls "$src"/.gpu/debs/*.deb > /dev/null 2>&1; then
    mkdir -p "$deps"
    for f in "$src"/.gpu/debs/*.deb; do dpkg -x "$f" "$deps" || say "cannot unpack $f"; done
    lib=$deps/usr/lib/x86_64-linux-gnu
    export PATH=$deps/usr/bin:$PATH
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    conf_env=(CPPFLAGS="-I$deps/usr/include -I$deps/usr/include/x86_64-linux-gnu"
              LDFLAGS="-L$lib -Wl,-rpath,$lib"
              PCRE2_CFLAGS="-I$deps/usr/include" PCRE2_LIBS="-L$lib -lpcre2-8"
              LIBCRYPTO_CFLAGS="-I$deps/usr/include -I$deps/usr/include/x86_64-linux-gnu"
              LIBCRYPTO_LIBS="-L$lib -lcrypto")
fi

has_step() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

# --- the peer: llama.cpp builds beside ours (LLAMA_SRC: a source tree, or
# a .tar.gz of one with a single top folder), in a session of its own so
# that it goes on after this call: a later call (GPU_STEPS=bench) on the
# same machine waits for it.  llama-build.log and llama.status in GPU_WORK.
if has_step build && [ -z "${LLAMA_BENCH:-}" ] && [ -n "${LLAMA_SRC:-}" ]; then
    say "building llama.cpp from $LLAMA_SRC, beside"
    lsrc=$LLAMA_SRC
    [ -f "$lsrc" ] && lsrc=$(cd "$(dirname "$lsrc")" && pwd)/$(basename "$lsrc")
    rm -f "$work/llama.status"
    setsid bash -c '
        set -e
        w=$1 lsrc=$2 jobs=$3
        trap "echo \$? > $w/llama.status" EXIT
        if [ -f "$lsrc" ]; then
            rm -rf "$w/llama-src"
            mkdir -p "$w/llama-src"
            tar xzf "$lsrc" -C "$w/llama-src" --strip-components=1
            lsrc=$w/llama-src
        fi
        cmake -S "$lsrc" -B "$w/llama" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
            -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
            -DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release
        nice cmake --build "$w/llama" -j"$jobs" --target llama-bench
    ' peer "$work" "$lsrc" "$jobs" > "$work/llama-build.log" 2>&1 < /dev/null &
fi

# --- 1. build ---
build=$work/build
if has_step build; then
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
else
    tree=$work/src
    [ -x "$tree/configure" ] || tree=$src
    [ -x "$build/qwen-run" ] || { say "no build in $build: run the build step first"; exit 2; }
fi
cd "$build" || exit 2

status=0
if has_step test; then
    # --- 2. tests ---
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
fi

# --- 4. benchmark ---
if has_step bench; then
    if [ -z "${LLAMA_BENCH:-}" ] && [ -n "${LLAMA_SRC:-}" ]; then
        t0=$SECONDS
        while [ ! -f "$work/llama.status" ] && [ $((SECONDS - t0)) -lt "${PEER_WAIT:-900}" ]; do sleep 2; done
        cp "$work/llama-build.log" "$out/" 2>/dev/null
        if [ "$(cat "$work/llama.status" 2>/dev/null)" = 0 ]; then
            export LLAMA_BENCH=$work/llama/bin/llama-bench
            say "llama.cpp: built (waited $((SECONDS - t0)) s)"
        else
            say "llama.cpp: not built (status $(cat "$work/llama.status" 2>/dev/null || echo 'still building')): see llama-build.log"
        fi
    fi
    top_srcdir=$tree top_builddir=$build BENCH_DIR=$work/models \
        bash "$tree/tests/bench/bench-cuda.sh" > "$out/bench.txt" 2>&1 || status=1
    tee -a "$summary" < "$out/bench.txt"
fi
# --- 5. the CPU beside the GPU (GPU_STEPS=cpu): the machine's own
# processor on two cores, qwen-run --device cpu against a CPU build of
# llama.cpp (LLAMA_CPU_BIN: its bin/ folder, carried like .gpu), prompts
# and decoding of the 1.5b, batched decoding, the 0.5b: the figures of the
# CPU kernels on a processor this project may not otherwise reach (AMX) ---
if has_step cpu; then
    sib=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null)
    other=$(awk -v s="$sib" 'BEGIN { n = split(s, a, /[,-]/); for (i = 1; i <= n; i++) x[a[i]] = 1
              for (c = 1; c < 1024; c++) if (!(c in x)) { print c; exit } }')
    cpus=${CPU_LIST:-0,$other}
    b=$tree/tests/bench
    mkdir -p "$work/models"
    make -s tests/bench/bench-mem > /dev/null 2>&1
    (
        # no GPU for these: qwen-run's --device auto then takes the CPU
        export CUDA_VISIBLE_DEVICES= top_srcdir=$tree top_builddir=$build BENCH_DIR=$work/models
        [ -n "${LLAMA_CPU_BIN:-}" ] && export LLAMA_BENCH=$LLAMA_CPU_BIN/llama-bench \
            LD_LIBRARY_PATH=$LLAMA_CPU_BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        echo "cpus $cpus (cpu0's siblings: $sib); $(grep -m1 '^model name' /proc/cpuinfo)"
        for p in 512 128; do
            echo "==== 1.5b, prompt $p"
            BENCH_PROMPT=$p taskset -c "$cpus" bash "$b/bench-qwen-run.sh"
        done
        echo "==== 1.5b, batched"
        BENCH_PARALLEL=${CPU_PARALLEL:-16} BENCH_LINES=16 taskset -c "$cpus" bash "$b/bench-batched.sh"
        ./tests/gguf-synth --size 0.5b --type q4_k_m -o "$work/models/cpu-0.5b.gguf" > /dev/null &&
            echo "==== 0.5b, prompt 128" &&
            BENCH_MODEL=$work/models/cpu-0.5b.gguf taskset -c "$cpus" bash "$b/bench-qwen-run.sh"
    ) > "$out/cpu-bench.txt" 2>&1 || status=1
    tee -a "$summary" < "$out/cpu-bench.txt"
fi
say "done in $(elapsed), status $status"
exit $status
