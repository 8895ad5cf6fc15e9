#!/bin/sh
# test-dump-estimate.sh -- gguf-dump --estimate against what qwen-run
# allocates (its --stats "memory bytes" line, counted as each buffer is
# allocated) for qwen2 and qwen3 models of several weight types, contexts,
# conversations, threads and SIMD levels; llama.cpp's key/value cache
# against the sizes llama.cpp printed for the same settings (and against
# llama-batched-bench itself when LLAMA_BATCHED_BENCH names it); the
# weights alone for an architecture qwen-run lacks; split sets and
# streams; the text view; usage errors.

test_name=test-dump-estimate
. "${top_srcdir:-.}/tests/common.sh"
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
DUMP=$(tool gguf-dump)
RUN=$(tool qwen-run)
EDIT=$(tool gguf-edit)
REQUANT=$(tool gguf-requant)
SYNTH=$top_builddir/tests/gguf-synth
need_exec "$DUMP" "$RUN" "$EDIT" "$REQUANT" "$SYNTH"
need_python

synth() {
    synth_model "$@" --seed 7
}
synth "$tmp/tiny.gguf" --size tiny
synth "$tmp/q4km.gguf" --size small --type q4_k_m
synth "$tmp/q8.gguf" --size small --type q8_0
synth "$tmp/q40.gguf" --size small --type q4_0 --untied
synth "$tmp/qwen3.gguf" --arch qwen3 --size small --type q4_k_m

# field JSON KEY: a number of gguf-dump --estimate --json's document.
field() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"
}

# agree NAME MODEL SIMD CTX PARALLEL THREADS: qwen-run's memory bytes with
# those settings equal gguf-dump --estimate's (PARALLEL 0: one prompt,
# else --each-line --parallel; CTX 0: the default).
agree() {
    _n=$1 _m=$2 _simd=$3 _c=$4 _np=$5 _t=$6
    set -- -t "$_t"
    [ "$_c" -ne 0 ] && set -- "$@" -c "$_c"
    if [ "$_np" -eq 0 ]; then
        printf 'Hello\n' > "$tmp/$_n.in"
        GGUF_SIMD=$_simd "$RUN" -m "$_m" --temp 0 -n 2 --stats "$@" -f "$tmp/$_n.in" \
            >"$tmp/$_n.run" 2>"$tmp/$_n.runerr"
        _st=$?
    else
        printf 'one\ntwo\nthree\n' > "$tmp/$_n.in"
        GGUF_SIMD=$_simd "$RUN" -m "$_m" --temp 0 -n 2 --stats --each-line --parallel "$_np" "$@" \
            <"$tmp/$_n.in" >"$tmp/$_n.run" 2>"$tmp/$_n.runerr"
        _st=$?
        set -- "$@" --parallel "$_np"
    fi
    check "$_n: qwen-run ran (status $_st: $(head -c 300 "$tmp/$_n.runerr"))" [ "$_st" -eq 0 ]
    run 0 "$_n" env GGUF_SIMD="$_simd" "$DUMP" --estimate --json "$@" "$_m"
    _want=$(sed -n 's/^memory bytes: //p' "$tmp/$_n.runerr")
    _got=$(printf 'weights %s, kv_cache %s, compute %s, host %s, device 0, repacked %s' \
        "$(field "$tmp/$_n.out" weights)" "$(field "$tmp/$_n.out" kv_cache)" \
        "$(field "$tmp/$_n.out" compute)" "$(field "$tmp/$_n.out" logits)" \
        "$(field "$tmp/$_n.out" repacked)")
    check "$_n: estimate '$_got' equals qwen-run's '$_want'" [ -n "$_want" ] && [ "$_got" = "$_want" ]
}

best=$("$RUN" -m "$tmp/tiny.gguf" -n 1 --stats -p x 2>&1 >/dev/null | sed -n 's/^device: cpu: .* SIMD \([a-z0-9]*\).*/\1/p')
[ -n "$best" ] || hard_error "no SIMD level in qwen-run --stats"
for simd in scalar "$best"; do
    agree "tiny-$simd" "$tmp/tiny.gguf" "$simd" 0 0 1
    agree "q4km-$simd" "$tmp/q4km.gguf" "$simd" 512 0 2
    agree "q4km-par-$simd" "$tmp/q4km.gguf" "$simd" 300 3 2
    agree "q8-$simd" "$tmp/q8.gguf" "$simd" 1000 2 1
    agree "q40-$simd" "$tmp/q40.gguf" "$simd" 256 0 3
    agree "qwen3-$simd" "$tmp/qwen3.gguf" "$simd" 777 4 2
done

# The settings the document reports, resolved as qwen-run resolves them.
run 0 defaults "$DUMP" --estimate --json -t 1 "$tmp/q4km.gguf"
ctx_train=$("$DUMP" -k qwen2.context_length "$tmp/q4km.gguf")
want_ctx=$((ctx_train < 4096 ? ctx_train : 4096))
check "default context: 4096 or the model's" [ "$(field "$tmp/defaults.out" context)" -eq "$want_ctx" ]
check "default: one conversation" [ "$(field "$tmp/defaults.out" parallel)" -eq 1 ]
check "batch: at most 512" [ "$(field "$tmp/defaults.out" batch)" -eq 512 ]
run 0 small-ctx "$DUMP" --estimate --json -t 1 -c 100 --parallel 2 "$tmp/q4km.gguf"
check "batch: at most context x conversations" [ "$(field "$tmp/small-ctx.out" batch)" -eq 200 ]
check "outputs: one per conversation" [ "$(field "$tmp/small-ctx.out" outputs)" -eq 2 ]
# KV cache: 2 (K, V) x layers x positions x conversations x KV width x 2 bytes
layers=$("$DUMP" -k qwen2.block_count "$tmp/q4km.gguf")
kvh=$("$DUMP" -k qwen2.attention.head_count_kv "$tmp/q4km.gguf")
heads=$("$DUMP" -k qwen2.attention.head_count "$tmp/q4km.gguf")
embd=$("$DUMP" -k qwen2.embedding_length "$tmp/q4km.gguf")
check "KV cache from the hyperparameters" \
    [ "$(field "$tmp/small-ctx.out" kv_cache)" -eq $((2 * layers * 100 * 2 * kvh * (embd / heads) * 2)) ]

# --- llama.cpp's key/value cache: sizes llama.cpp 0253fb21f printed
# (llama_kv_cache: size = ...) with llama-batched-bench -c C -npl N on
# this small model (2 layers, KV rows 2 x 128): -c 512 -npl 1: 512 cells,
# 0.50 MiB; -c 1000 -npl 3: 1536 cells (512 a sequence), 1.50 MiB; -c 512
# -ctk q8_0 -ctv q8_0 -fa on: 0.27 MiB (34 bytes a 32 elements).
run 0 ll1 "$DUMP" --estimate --json -t 1 -c 512 "$tmp/q4km.gguf"
check "llama.cpp F16 cache, one sequence" [ "$(field "$tmp/ll1.out" llama_cpp.kv_cache)" -eq 524288 ]
check "llama.cpp cells" [ "$(field "$tmp/ll1.out" llama_cpp.cells)" -eq 512 ]
run 0 ll3 "$DUMP" --estimate --json -t 1 -c 334 --parallel 3 "$tmp/q4km.gguf"
check "llama.cpp -c 1002 -np 3: 1536 cells" [ "$(field "$tmp/ll3.out" llama_cpp.cells)" -eq 1536 ]
check "llama.cpp -c 1002 -np 3: 512 a sequence" [ "$(field "$tmp/ll3.out" llama_cpp.n_ctx_seq)" -eq 512 ]
check "llama.cpp -c 1002 -np 3: 1.50 MiB" [ "$(field "$tmp/ll3.out" llama_cpp.kv_cache)" -eq 1572864 ]
run 0 llq "$DUMP" --estimate --json -t 1 -c 512 --kv-type q8_0 "$tmp/q4km.gguf"
check "llama.cpp Q8_0 cache" [ "$(field "$tmp/llq.out" llama_cpp.kv_cache)" -eq 278528 ]
check "--kv-type leaves qwen-run's F16 cache" \
    [ "$(field "$tmp/llq.out" kv_cache)" -eq "$(field "$tmp/ll1.out" kv_cache)" ]
check "--kv-type named" [ "$(field "$tmp/llq.out" llama_cpp.kv_type)" = q8_0 ]
# The tiny model's KV rows (2 x 32) are whole Q8_0 blocks; a width of 48
# would not be: covered by the formula's null, shown in the text view.

if [ -n "${LLAMA_BATCHED_BENCH:-}" ] && [ -x "$LLAMA_BATCHED_BENCH" ]; then
    # llama_kv_cache: size = X MiB, side by side
    for s in "512 1 f16" "1000 3 f16" "512 1 q8_0" "4000 2 q8_0"; do
        set -- $s
        extra=
        [ "$3" = q8_0 ] && extra="-ctk q8_0 -ctv q8_0 -fa on"
        # shellcheck disable=SC2086
        "$LLAMA_BATCHED_BENCH" -m "$tmp/q4km.gguf" -c "$1" -npl "$2" -npp 8 -ntg 1 -v $extra \
            >"$tmp/peer.out" 2>&1 || hard_error "llama-batched-bench failed: $(tail -c 400 "$tmp/peer.out")"
        peer=$(sed -n 's/.*llama_kv_cache: size = *\([0-9.]*\) MiB.*/\1/p' "$tmp/peer.out" | head -n 1)
        per=$(( ($1 + $2 - 1) / $2 ))
        # llama.cpp's -c C -np N is qwen-run's -c C/N: C a multiple of N here or rounded as llama.cpp does
        run 0 peer "$DUMP" --estimate --json -t 1 -c "$per" --parallel "$2" --kv-type "$3" "$tmp/q4km.gguf"
        ours=$(python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["llama_cpp"]["kv_cache"] / 1048576))' "$tmp/peer.out")
        check "llama.cpp -c $1 -np $2 $3: $peer MiB, ours $ours MiB" [ -n "$peer" ] && [ "$peer" = "$ours" ]
    done
fi

# --- the text view: every figure, in MiB and bytes ---
run 0 text "$DUMP" --estimate -t 2 -c 512 --parallel 3 "$tmp/q4km.gguf"
check "text: header" grep -Eq "^.*q4km.gguf: qwen2, $layers layers; qwen-run -c 512 on the CPU, 2 threads, SIMD [a-z0-9]+\$" "$tmp/text.out"
check "text: conversations" has "$tmp/text.out" "(3 sequences at once: qwen-run --each-line --parallel 3)"
for label in weights "KV cache" compute logits total "llama.cpp KV"; do
    check "text: $label line" grep -Eq "^  $label +[0-9]+\\.[0-9]{2} MiB +[0-9]+ bytes" "$tmp/text.out"
done
check "text: llama.cpp settings" has "$tmp/text.out" "F16, -c 1536 -np 3: 1536 cells"
run 0 textq "$DUMP" --estimate -t 2 -c 512 --kv-type q8_0 "$tmp/q4km.gguf"
check "text: Q8_0 settings" has "$tmp/textq.out" "Q8_0, -c 512 -np 1 -ctk q8_0 -ctv q8_0 -fa on: 512 cells"
check "text: qwen-run keeps F16" has "$tmp/textq.out" "(qwen-run keeps its key/value cache in F16)"

# --- an architecture qwen-run lacks: the weights alone ---
run 0 rename "$EDIT" --set general.architecture=str:llama "$tmp/q4km.gguf" "$tmp/llama.gguf"
run 0 other "$DUMP" --estimate --json "$tmp/llama.gguf"
sizes=$("$DUMP" --json "$tmp/q4km.gguf" | python3 -c 'import json,sys; print(sum(t["bytes"] for t in json.load(sys.stdin)["tensors"]))')
check "other architecture: known_architecture false" [ "$(field "$tmp/other.out" known_architecture)" = False ]
check "other architecture: the weights are the tensor data" [ "$(field "$tmp/other.out" weights)" -eq "$sizes" ]
check "other architecture: total is the weights" [ "$(field "$tmp/other.out" total)" -eq "$sizes" ]
run 0 other-text "$DUMP" --estimate "$tmp/llama.gguf"
check "other architecture: text says so" has "$tmp/other-text.out" "architecture llama: not one qwen-run runs (qwen2, qwen3); the weights alone"
check "the weights of a model equal the tensor data" [ "$(field "$tmp/ll1.out" weights)" -eq "$sizes" ]

# --- split sets and streams give the same figures ---
run 0 split "$REQUANT" --split-max-tensors 7 "$tmp/q4km.gguf" "$tmp/set.gguf"
run 0 set "$DUMP" --estimate --json -t 1 -c 512 "$tmp/set-00001-of-00004.gguf"
for k in weights kv_cache compute logits; do
    check "split set: $k as the single file" [ "$(field "$tmp/set.out" $k)" = "$(field "$tmp/ll1.out" $k)" ]
done
run 0 stream sh -c "cat '$tmp/q4km.gguf' | '$DUMP' --estimate --json -t 1 -c 512 -"
for k in weights kv_cache compute logits; do
    check "stream: $k as the file" [ "$(field "$tmp/stream.out" $k)" = "$(field "$tmp/ll1.out" $k)" ]
done
run 0 two "$DUMP" --estimate --json -t 1 -c 512 "$tmp/q4km.gguf" "$tmp/llama.gguf"
check "two files: a JSON array of two" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d) == 2 and d[1]["known_architecture"] is False' "$tmp/two.out"

# --- errors ---
run 2 too-long "$DUMP" --estimate -c $((ctx_train + 1)) "$tmp/q4km.gguf"
check "context past the model's: named" has "$tmp/too-long.err" "context of $((ctx_train + 1)) positions: expected 1 .. $ctx_train"
run 2 missing-json "$DUMP" --estimate --json "$tmp/q4km.gguf" "$tmp/nope.gguf"
check "a missing file: an error entry, still JSON" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "error" in d[1] and d[0]["known_architecture"]' "$tmp/missing-json.out"
run 2 no-est "$DUMP" -c 512 "$tmp/q4km.gguf"
check "-c without --estimate: usage error" has "$tmp/no-est.err" "go with --estimate"
run 2 bad-kv "$DUMP" --estimate --kv-type q4_0 "$tmp/q4km.gguf"
check "--kv-type q4_0 refused" has "$tmp/bad-kv.err" "--kv-type: f16 or q8_0"
run 2 bad-par "$DUMP" --estimate --parallel 0 "$tmp/q4km.gguf"
check "--parallel 0 refused" has "$tmp/bad-par.err" "--parallel: not a number"
run 2 bad-c "$DUMP" --estimate -c 12x "$tmp/q4km.gguf"
check "-c 12x refused" has "$tmp/bad-c.err" "-c: not a number"
run 2 est-keys "$DUMP" --estimate -k general.name "$tmp/q4km.gguf"
check "--estimate with -k refused" has "$tmp/est-keys.err" "--estimate takes"

finish
