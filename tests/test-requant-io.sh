#!/bin/sh
# test-requant-io.sh -- gguf-requant's inputs and outputs: standard input,
# a named pipe, gzip input, standard output, an existing named pipe as
# OUT; each gives the same bytes as file to file.  A stream whose tensor
# data is not in directory order is refused (a mapped file is fine).
# Write errors on standard output are reported.

. "${top_srcdir:-.}/tests/test-requant-common.sh"
need_tools

m=$tmp/small.gguf
synth "$m" --size small --type q4_k_m --seed 9
m_sum=$(sum "$m")
ref=$tmp/ref.gguf
run 0 ref "$REQUANT" --from q6_k --to q4_k "$m" "$ref"
run 0 ref-check "$CHECKER" "$m" "$ref"
check "reference: 3 converted" [ "$(count "$tmp/ref-check.out" "Q6_K Q4_K")" -eq 3 ]

# IN from standard input (a pipe), OUT a file.
cat "$m" | "$REQUANT" --from q6_k --to q4_k - "$tmp/stdin.gguf" 2>"$tmp/stdin.err"
check "stdin: exit 0" [ $? -eq 0 ]
check "stdin: same bytes as from the file" same "$tmp/stdin.gguf" "$ref"
check "stdin: nothing on stderr" empty "$tmp/stdin.err"
# IN redirected from a file (seekable standard input).
run 0 stdin-file "$REQUANT" --from q6_k --to q4_k - "$tmp/stdin-file.gguf" <"$m"
check "stdin from a file: same bytes" same "$tmp/stdin-file.gguf" "$ref"

# OUT on standard output, IN a file or standard input.
run 0 stdout "$REQUANT" --from q6_k --to q4_k "$m" -
check "stdout: same bytes" same "$tmp/stdout.out" "$ref"
cat "$m" | "$REQUANT" --from q6_k --to q4_k - - >"$tmp/pipe.out" 2>"$tmp/pipe.err"
check "stdin to stdout: exit 0" [ $? -eq 0 ]
check "stdin to stdout: same bytes" same "$tmp/pipe.out" "$ref"
"$REQUANT" -q --from q6_k --to q4_k "$m" - | cat >"$tmp/pipe2.out"
check "stdout into a pipe: same bytes" same "$tmp/pipe2.out" "$ref"

# IN a named pipe.
mkfifo "$tmp/in.fifo" || hard_error "mkfifo"
cat "$m" >"$tmp/in.fifo" &
run 0 fifo-in "$REQUANT" --from q6_k --to q4_k "$tmp/in.fifo" "$tmp/fifo-in.gguf"
wait
check "named pipe IN: same bytes" same "$tmp/fifo-in.gguf" "$ref"

# OUT an existing named pipe: written in place.
mkfifo "$tmp/out.fifo" || hard_error "mkfifo"
cat "$tmp/out.fifo" >"$tmp/fifo-out.gguf" &
run 0 fifo-out "$REQUANT" --from q6_k --to q4_k "$m" "$tmp/out.fifo"
wait
check "named pipe OUT: same bytes" same "$tmp/fifo-out.gguf" "$ref"
check "named pipe OUT: still a pipe" [ -p "$tmp/out.fifo" ]

# gzip input, from a path and from a pipe.
if command -v gzip >/dev/null 2>&1; then
    gzip -c "$m" >"$tmp/m.gguf.gz" || hard_error "gzip"
    run 0 gz "$REQUANT" --from q6_k --to q4_k "$tmp/m.gguf.gz" "$tmp/gz.gguf"
    check "gzip IN: same bytes" same "$tmp/gz.gguf" "$ref"
    run 0 gz-stdin "$REQUANT" --from q6_k --to q4_k - "$tmp/gz-stdin.gguf" <"$tmp/m.gguf.gz"
    check "gzip stdin: same bytes" same "$tmp/gz-stdin.gguf" "$ref"
else
    echo "note: gzip not found; gzip input is covered by the reader's own tests"
fi

# --dry-run on a stream: the same plan as for the file.
run 0 dry-file "$REQUANT" -n --from q6_k --to q4_k "$m"
cat "$m" | "$REQUANT" -n --from q6_k --to q4_k - >"$tmp/dry-pipe.out" 2>"$tmp/dry-pipe.err"
check "dry run on a pipe: exit 0" [ $? -eq 0 ]
check "dry run on a pipe: the same plan and sizes" same "$tmp/dry-pipe.out" "$tmp/dry-file.out"

# Tensor data out of directory order: fine mapped, refused as a stream.
"$CHECKER" --swap 4 6 "$m" "$tmp/swapped.gguf" || hard_error "requant-check --swap"
run 0 swapped "$REQUANT" --type 'blk.0.attn_[kv].weight=q8_0' --from q6_k --to q4_k \
    "$tmp/swapped.gguf" "$tmp/swapped-out.gguf"
run 0 swapped-check "$CHECKER" "$tmp/swapped.gguf" "$tmp/swapped-out.gguf"
check "out of order, mapped: attn_k converted" has "$tmp/swapped-check.out" "converted blk.0.attn_k.weight Q4_K Q8_0"
check "out of order, mapped: attn_v converted" has "$tmp/swapped-check.out" "converted blk.0.attn_v.weight Q4_K Q8_0"
cat "$tmp/swapped.gguf" | "$REQUANT" --from q6_k --to q4_k - "$tmp/swapped-stream.gguf" \
    2>"$tmp/swapped-stream.err"
check "out of order, stream: exit 2" [ $? -eq 2 ]
check "out of order, stream: message" has "$tmp/swapped-stream.err" \
    "comes before that of tensor 4 'blk.0.attn_k.weight'; a stream can only be rewritten"
check "out of order, stream: message says what to do" has "$tmp/swapped-stream.err" "give a file instead"
check "out of order, stream: no output" absent "$tmp/swapped-stream.gguf"

# Write errors on standard output.
if [ -w /dev/full ]; then
    "$REQUANT" --from q6_k --to q4_k "$m" - >/dev/full 2>"$tmp/full.err"
    check "stdout full: exit 2" [ $? -eq 2 ]
    check "stdout full: message" has "$tmp/full.err" "gguf-requant: (stdout): write failed at byte"
    check "stdout full: reason" has "$tmp/full.err" "No space left on device"
    "$REQUANT" -n --from q6_k --to q4_k "$m" >/dev/full 2>"$tmp/full-plan.err"
    check "plan to a full stdout: exit 2" [ $? -eq 2 ]
    check "plan to a full stdout: message" has "$tmp/full-plan.err" "gguf-requant: write error: No space left on device"
else
    echo "note: /dev/full not writable; write errors are covered by test-requant-fail.sh"
fi

check "input unchanged" [ "$(sum "$m")" = "$m_sum" ]
check "no temporary files" [ -z "$(ls -A "$tmp" | grep '^\.')" ]
finish
