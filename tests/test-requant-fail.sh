#!/bin/sh
# test-requant-fail.sh -- gguf-requant's failure paths.  Each one must exit
# with status 2 (or die of the signal it was sent), name the file, leave no
# OUT (an OUT that existed before keeps its old contents), leave no
# temporary file, and leave IN unchanged:
#   OUT in a directory that cannot be written (a path under a regular file,
#   a missing directory, a directory as OUT); a file size limit (EFBIG with
#   SIGXFSZ ignored, and death by SIGXFSZ otherwise); /dev/full as OUT; a
#   truncated input (mapped and streamed); SIGINT and SIGTERM while the
#   output is being written.
# Full and read-only file systems: test-requant-fs.sh.

. "${top_srcdir:-.}/tests/test-requant-common.sh"
need_tools

m=$tmp/small.gguf
synth "$m" --size small --type f16 --seed 2
m_sum=$(sum "$m")
size=$(wc -c <"$m" | tr -d ' ')

# signum NAME: the number of signal NAME (Linux numbering; `kill -l NAME`
# is not portable across shells).
signum() {
    case $1 in
    HUP) echo 1 ;; INT) echo 2 ;; TERM) echo 15 ;; XFSZ) echo 25 ;;
    *) hard_error "signum: $1" ;;
    esac
}

# outcome NAME DIR ENTRY...: after a failure, DIR holds exactly ENTRY...
# (no OUT unless listed, no temporary file), an existing OUT keeps its
# old contents, and IN is unchanged.
outcome() {
    _name=$1
    _dir=$2
    shift 2
    check "$_name: nothing left behind in $_dir" only "$_dir" "$@"
    if [ -e "$_dir/out.gguf" ]; then
        check "$_name: the old OUT is untouched" [ "$(cat "$_dir/out.gguf")" = old ]
    fi
    check "$_name: input unchanged" [ "$(sum "$m")" = "$m_sum" ]
}

# --- OUT that cannot be created -----------------------------------------------
mkdir "$tmp/w" && echo "not a directory" >"$tmp/w/plain" || hard_error "setup"
run 2 notdir "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/w/plain/out.gguf"
check "under a regular file: message" has "$tmp/notdir.err" \
    "gguf-requant: $tmp/w/plain/out.gguf: cannot create a temporary file in '$tmp/w/plain/': Not a directory"
outcome "under a regular file" "$tmp/w" plain
run 2 nodir "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/w/missing/out.gguf"
check "missing directory: message" has "$tmp/nodir.err" "No such file or directory"
outcome "missing directory" "$tmp/w" plain
mkdir "$tmp/w/dir.gguf" || hard_error "mkdir"
run 2 isdir "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/w/dir.gguf"
check "OUT a directory: message" has "$tmp/isdir.err" "gguf-requant: $tmp/w/dir.gguf: cannot open for writing: Is a directory"
outcome "OUT a directory" "$tmp/w" plain dir.gguf

# --- a file size limit ---------------------------------------------------------
# The output (about 1.6 MB) is far over the limit (100 blocks of 512 or 1024
# bytes); the header (35 kB) fits, so the failure comes while writing data.
mkdir "$tmp/fs" && echo old >"$tmp/fs/out.gguf" || hard_error "setup"
sh -c 'trap "" XFSZ; ulimit -f 100 && exec "$@"' sh \
    "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/fs/out.gguf" 2>"$tmp/efbig.err"
st=$?
check "EFBIG (SIGXFSZ ignored): exit 2" [ "$st" -eq 2 ]
check "EFBIG: message" has "$tmp/efbig.err" "gguf-requant: $tmp/fs/out.gguf: write failed at byte"
check "EFBIG: reason" has "$tmp/efbig.err" "File too large"
outcome "EFBIG" "$tmp/fs" out.gguf
# (the status comes from an inner shell, whose report of the death goes nowhere)
st=$(ERR=$tmp/xfsz.err sh -c 'ulimit -f 100 && { "$@" 2>"$ERR"; echo $?; }' sh \
    "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/fs/out.gguf" 2>/dev/null)
check "SIGXFSZ: killed by the signal (status $st)" [ "$st" -eq $((128 + $(signum XFSZ))) ]
outcome "SIGXFSZ" "$tmp/fs" out.gguf

# --- /dev/full as OUT (not a regular file: written in place) --------------------
if [ -w /dev/full ]; then
    run 2 devfull "$REQUANT" --from f16 --to q8_0 "$m" /dev/full
    check "/dev/full: message" has "$tmp/devfull.err" "gguf-requant: /dev/full: write failed at byte 0"
    check "/dev/full: reason" has "$tmp/devfull.err" "No space left on device"
    check "/dev/full: input unchanged" [ "$(sum "$m")" = "$m_sum" ]
fi

# --- a truncated input -----------------------------------------------------------
mkdir "$tmp/tr" && echo old >"$tmp/tr/out.gguf" || hard_error "setup"
head -c $((size - 3000)) "$m" >"$tmp/trunc.gguf" || hard_error "head"
tr_sum=$(sum "$tmp/trunc.gguf")
run 2 trunc "$REQUANT" --from f16 --to q8_0 "$tmp/trunc.gguf" "$tmp/tr/out.gguf"
check "truncated file: message names the tensor" has "$tmp/trunc.err" \
    "'blk.1.ffn_down.weight': data ends at byte"
check "truncated file: message gives the file size" has "$tmp/trunc.err" "file has $((size - 3000)) bytes"
outcome "truncated file" "$tmp/tr" out.gguf
check "truncated file: unchanged" [ "$(sum "$tmp/trunc.gguf")" = "$tr_sum" ]
cat "$tmp/trunc.gguf" | "$REQUANT" --from f16 --to q8_0 - "$tmp/tr/out.gguf" 2>"$tmp/trunc-stream.err"
check "truncated stream: exit 2" [ $? -eq 2 ]
check "truncated stream: message" has "$tmp/trunc-stream.err" \
    "gguf-requant: -: tensor 24 'blk.1.ffn_down.weight': data ends at byte"
outcome "truncated stream" "$tmp/tr" out.gguf
head -c 1000 "$m" >"$tmp/trunc-head.gguf" || hard_error "head"
cat "$tmp/trunc-head.gguf" | "$REQUANT" --from f16 --to q8_0 - "$tmp/tr/out.gguf" 2>"$tmp/trunc-head.err"
check "stream cut in the header: exit 2" [ $? -eq 2 ]
check "stream cut in the header: message" has "$tmp/trunc-head.err" "gguf-requant: -: "
outcome "stream cut in the header" "$tmp/tr" out.gguf

# --- signals while the output is being written --------------------------------------
# IN is a named pipe fed by this shell: the header and some data (more than
# the reader's first 256 KiB block), then nothing, so that gguf-requant is
# caught with its temporary file open.  That file has no name where the
# system gives O_TMPFILE (else a hidden one): the test waits for the tool
# to hold a descriptor on a file in the directory other than the pipe.
# Background commands start with SIGINT ignored, and a test run under nohup
# has SIGHUP ignored too (the tool keeps an ignored signal ignored, as it
# should); both are reset for the tool, as for a command run in the
# foreground of a terminal.
if env --default-signal=INT,HUP,TERM true 2>/dev/null; then
    dflt_sig="env --default-signal=INT,HUP,TERM"
else
    dflt_sig="python3 -c 'import os,signal,sys; [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)]; os.execvp(sys.argv[1], sys.argv[1:])'"
    command -v python3 >/dev/null 2>&1 || hard_error "neither env --default-signal nor python3"
fi

# output_open PID DIR: process PID has a file in DIR open besides in.fifo
# (through /proc; without it, a hidden temporary file is in DIR).
output_open() {
    if [ -d "/proc/$1/fd" ]; then
        ls -l "/proc/$1/fd" 2>/dev/null | grep -F -e "$(cd "$2" && pwd -P)/" | grep -v -F in.fifo \
            >/dev/null
    else
        ls -A "$2" | grep '^\.out\.gguf\.' >/dev/null
    fi
}

signal_test() {
    _sig=$1
    _d=$tmp/sig-$_sig
    mkdir "$_d" && echo old >"$_d/out.gguf" && mkfifo "$_d/in.fifo" || hard_error "setup"
    eval "$dflt_sig" '"$REQUANT" --from f16 --to q8_0 "$_d/in.fifo" "$_d/out.gguf" 2>"$_d/err" &'
    _pid=$!
    exec 3<>"$_d/in.fifo"
    head -c 400000 "$m" >&3
    _i=0
    while [ $_i -lt 200 ] && ! output_open "$_pid" "$_d"; do
        sleep 0.05
        _i=$((_i + 1))
    done
    check "$_sig: the output is open while writing" output_open "$_pid" "$_d"
    kill -s "$_sig" "$_pid"
    wait "$_pid"
    _st=$?
    exec 3>&-
    check "$_sig: died of the signal (status $_st)" [ "$_st" -eq $((128 + $(signum "$_sig"))) ]
    rm -f "$_d/in.fifo" "$_d/err"
    outcome "$_sig" "$_d" out.gguf
}
signal_test TERM
signal_test INT
signal_test HUP

check "no temporary files in $tmp" [ -z "$(ls -A "$tmp" | grep '^\.')" ]
finish
