#!/bin/sh
# test-dump-output.sh -- gguf-dump notices when standard output fails: a full
# device, a closed pipe (with SIGPIPE ignored) and a closed descriptor all
# give "gguf-dump: write error: REASON" and exit status 2.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
need_tools "$FIXTURE"
[ -w /dev/full ] || { echo "SKIP: /dev/full not available"; exit 77; }

f=$tmp/model.gguf
"$FIXTURE" "$f" || hard_error "test-dump-fixture failed"

# full_device NAME ARGS...: gguf-dump ARGS >/dev/full must fail cleanly.
full_device() {
    _name=$1
    shift
    "$DUMP" "$@" >/dev/full 2>"$tmp/$_name.err"
    _st=$?
    check "$_name: exit 2 (got $_st)" test "$_st" -eq 2
    check "$_name: one message" test "$(wc -l <"$tmp/$_name.err")" -eq 1
    check "$_name: message" grep -q '^gguf-dump: write error: No space left on device$' "$tmp/$_name.err"
}
full_device full-text "$f"
full_device full-json --json "$f" "$f"
full_device full-k -k general.name "$f"
full_device full-help --help
full_device full-version --version

# A key that is absent and a write error: trouble (2) wins over 1.
"$DUMP" -k general.name -k no.such.key "$f" >/dev/full 2>"$tmp/full-k1.err"
st=$?
check "write error beats a missing key (got $st)" test "$st" -eq 2

# A reader that goes away: 200 files of JSON (several MiB) into head.
set --
i=0
while [ $i -lt 200 ]; do
    set -- "$@" "$f"
    i=$((i + 1))
done
STATUS_FILE=$tmp/pipe.st sh -c 'trap "" PIPE; "$@"; echo $? >"$STATUS_FILE"' sh \
    "$DUMP" --json "$@" 2>"$tmp/pipe.err" | head -c 100 >/dev/null
st=$(cat "$tmp/pipe.st")
check "closed pipe: exit 2 (got $st)" test "$st" -eq 2
check "closed pipe: message" grep -q '^gguf-dump: write error: Broken pipe$' "$tmp/pipe.err"
check "closed pipe: no further messages" test "$(wc -l <"$tmp/pipe.err")" -eq 1

# Standard output closed.  The program itself, never the memcheck wrapper
# of tests/tool.sh: memcheck's report file would take the free descriptor.
"$top_builddir/gguf-dump" "$f" >&- 2>"$tmp/closed.err"
st=$?
check "closed stdout: exit 2 (got $st)" test "$st" -eq 2
check "closed stdout: message" grep -q '^gguf-dump: write error: Bad file descriptor$' "$tmp/closed.err"

finish
