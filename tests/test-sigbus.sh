#!/bin/sh
# test-sigbus.sh -- a mapped input that another process truncates while a
# tool reads it.  The fault shim (tests/fault.c) cuts a copy of a
# generated model right after the tool maps it (to 0 bytes: the parser
# meets the hole; to a size that keeps the header: the tensor data does)
# or right before the tool's first write of its output (gguf-requant and
# gguf-verify --embed then hand the hole to write(2), which fails with
# EFAULT instead).  Each tool must exit 2 with
# "prog: FILE: file shrank while being read (truncated by another
# process?)", leave no OUT (an OUT that existed keeps its contents) and no
# temporary file, with the unnamed temporary file (O_TMPFILE) and with the
# named one that the shim forces (FAULT_TMPFILE=EOPNOTSUPP).  A SIGBUS
# that does not come from a mapping (kill -BUS) keeps its default action.

test_name=test-sigbus
. "${top_srcdir:-.}/tests/test-fault-common.sh"

# The medium model: header 145472 bytes, then token_embd (4 MiB of F16),
# then the layers' tensors.  Cut to $mid, the header and token_embd stay
# and the layers go: the faults then come from the matrix products and
# conversions on worker threads.
m=$tmp/m.gguf
"$SYNTH" --size medium --seed 3 -o "$m" 2>"$tmp/synth.err" || hard_error "gguf-synth: $(cat "$tmp/synth.err")"
m_sum=$(sum "$m")
mid=4400000
in=$tmp/in.gguf
msg='file shrank while being read (truncated by another process?)'
mkdir "$tmp/o" || hard_error "mkdir"

# shrink NAME OP SIZE PROG COMMAND...: runs COMMAND with the shim cutting
# a fresh copy $in of the model to SIZE bytes at its first OP call (mmap
# or write); checks that the cut happened, exit status 2 and the message.
shrink() {
    _name=$1 _op=$2 _size=$3 _prog=$4
    shift 4
    cp "${src:-$m}" "$in" || hard_error "cp"
    faulty $scheme FAULT_OP="$_op" FAULT_ACTION=truncate FAULT_TRUNCATE="$in" \
        FAULT_TRUNCATE_SIZE="$_size" -- "$@" >"$tmp/$_name.out" 2>"$tmp/$_name.err"
    _st=$?
    check "$_name: the input was cut" injected truncated
    check "$_name: exit 2 (got $_st; $(head -c 300 "$tmp/$_name.err"))" [ "$_st" -eq 2 ]
    check "$_name: the message names the file" has "$tmp/$_name.err" "$_prog: $in: $msg"
    check "$_name: one message" [ "$(count "$tmp/$_name.err" "$msg")" -eq 1 ]
}

# no_output NAME [old]: $tmp/o holds nothing but, with "old", the OUT that
# was there before, unchanged.
no_output() {
    if [ "${2:-}" = old ]; then
        check "$1: only the old OUT is left" only "$tmp/o" out.gguf
        check "$1: the old OUT is untouched" [ "$(cat "$tmp/o/out.gguf")" = old ]
    else
        check "$1: no OUT, no temporary file" only "$tmp/o"
    fi
}

# --- readers: gguf-dump, gguf-verify, qwen-run ---------------------------------------
scheme=
shrink dump-stats mmap "$mid" gguf-dump "$DUMP" --stats "$in"
shrink dump-parse mmap 0 gguf-dump "$DUMP" "$in"
shrink dump-json mmap 0 gguf-dump "$DUMP" --json "$in"
# Several files: the good one is shown, the cut one named.
shrink dump-second mmap "$mid" gguf-dump "$DUMP" --stats "$m" "$in"
check "dump-second: the first file was shown" has "$tmp/dump-second.out" "token_embd.weight"
shrink verify-w mmap "$mid" gguf-verify "$VERIFY" -w "$in"
shrink verify-w-parse mmap 0 gguf-verify "$VERIFY" -w "$in"
# Without -w a file is hashed only when it has embedded checksums.
"$VERIFY" --embed "$m" "$tmp/e.gguf" || hard_error "gguf-verify --embed"
src=$tmp/e.gguf shrink verify mmap "$mid" gguf-verify "$VERIFY" "$in"
shrink verify-second mmap "$mid" gguf-verify "$VERIFY" -w "$m" "$in"
check "verify-second: the first manifest was written" has "$tmp/verify-second.out" "$m:token_embd.weight"
shrink qwen-run mmap "$mid" qwen-run "$RUN" -m "$in" --temp 0 -n 4 -p "hello world"
shrink qwen-run-parse mmap 0 qwen-run "$RUN" -m "$in" --temp 0 -n 4 -p "hello world"
shrink qwen-run-t1 mmap "$mid" qwen-run "$RUN" -m "$in" -t 1 --temp 0 -n 4 -p "hello world"

# --- writers, with each kind of temporary file ------------------------------------------
for scheme in "" FAULT_TMPFILE=EOPNOTSUPP; do
    s=${scheme:+-named}
    # The conversion reads the hole (on worker threads).
    shrink "requant$s" mmap "$mid" gguf-requant "$REQUANT" --from f16 --to q8_0 "$in" "$tmp/o/out.gguf"
    no_output "requant$s"
    shrink "requant-parse$s" mmap 0 gguf-requant "$REQUANT" --from f16 --to q8_0 "$in" "$tmp/o/out.gguf"
    no_output "requant-parse$s"
    echo old >"$tmp/o/out.gguf" || hard_error "setup"
    shrink "requant-old$s" mmap "$mid" gguf-requant "$REQUANT" --from f16 --to q8_0 "$in" "$tmp/o/out.gguf"
    no_output "requant-old$s" old
    rm -f "$tmp/o/out.gguf"
    # Copying hands mapped data to write(2): EFAULT.
    shrink "requant-copy$s" write 2000000 gguf-requant "$REQUANT" --file-type 1 "$in" "$tmp/o/out.gguf"
    no_output "requant-copy$s"
    # --embed: the hole met while hashing, and while writing.
    shrink "embed$s" mmap "$mid" gguf-verify "$VERIFY" --embed "$in" "$tmp/o/out.gguf"
    no_output "embed$s"
    shrink "embed-write$s" write 2000000 gguf-verify "$VERIFY" --embed "$in" "$tmp/o/out.gguf"
    no_output "embed-write$s"
    echo old >"$tmp/o/out.gguf" || hard_error "setup"
    shrink "embed-write-old$s" write 2000000 gguf-verify "$VERIFY" --embed "$in" "$tmp/o/out.gguf"
    no_output "embed-write-old$s" old
    rm -f "$tmp/o/out.gguf"
done
scheme=

# --- a SIGBUS that is no fault of a mapping ---------------------------------------------
# gguf-dump waits on a named pipe that this shell holds open; kill -BUS
# must kill it as ever (status 128 + 7), not pass for a shrunk file.
mkfifo "$tmp/fifo" || hard_error "mkfifo"
(ulimit -c 0; exec "$DUMP" "$tmp/fifo") >/dev/null 2>"$tmp/kill.err" &
pid=$!
exec 3<>"$tmp/fifo"
reading_pipe() { ls -l "/proc/$pid/fd" 2>/dev/null | grep -F fifo >/dev/null; }
i=0
while [ $i -lt 200 ] && ! reading_pipe; do
    sleep 0.05
    i=$((i + 1))
done
check "kill -BUS: gguf-dump is reading the pipe" reading_pipe
kill -s BUS "$pid"
wait "$pid"
st=$?
exec 3>&-
check "kill -BUS: default action (status $st)" [ "$st" -eq 135 ]
check "kill -BUS: no message" lacks "$tmp/kill.err" "$msg"

check "the model is unchanged" [ "$(sum "$m")" = "$m_sum" ]
finish
