#!/bin/sh
# test-dump-tty.sh -- gguf-dump on a terminal (a pseudo-terminal made by
# script(1)): -k escapes strings there as the text view does (a backslash
# as \\) instead of writing raw bytes, and with no FILE a terminal on
# standard input is refused.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
EDIT=$top_builddir/tests/verify-edit
need_tools "$FIXTURE" "$EDIT"
command -v script >/dev/null 2>&1 || { echo "SKIP: script(1) not found"; exit 77; }
script -qec true /dev/null >/dev/null 2>&1 </dev/null || {
    echo "SKIP: script(1) cannot make a pseudo-terminal here"
    exit 77
}

f=$tmp/model.gguf
"$FIXTURE" "$f" || hard_error "test-dump-fixture failed"
dump=$(cd "$top_builddir" && pwd)/gguf-dump

# on_tty NAME COMMAND: runs the shell COMMAND on a pseudo-terminal; its
# output (with the terminal's \r\n turned into \n) goes to $tmp/NAME.out
# and its exit status to $tmp/NAME.st.
on_tty() {
    script -qec "$2; echo \"status=\$?\"" /dev/null </dev/null 2>&1 | tr -d '\r' >"$tmp/$1.out"
}

on_tty k "'$dump' -k general.name -k testarch.strs '$f'"
# As in the text view, without the quotes (so '"' is as it is): a
# backslash is \\, so that the value's own backslash and the escape \n
# for a newline cannot be confused.
printf '%s\n' 'a\n\t\x01\x7f"\\ é \xff \xc0\x80 \xed\xa0\x80 \xc2\x9b 😀 z' plain 'tab\there' 'nl\n' \
    '\xff' 'é' '' status=0 >"$tmp/want"
check "-k on a terminal: strings escaped" same "$tmp/k.out" "$tmp/want"
check "-k on a terminal: no raw ESC or 0xff" lacks "$tmp/k.out" "$(printf '\377')"
"$EDIT" --set 'testarch.path=str:C:\new' "$f" "$tmp/bs.gguf" 2>"$tmp/bs.err" ||
    hard_error "verify-edit: $(cat "$tmp/bs.err")"
on_tty k-bs "'$dump' -k testarch.path '$tmp/bs.gguf'"
printf '%s\n' 'C:\\new' status=0 >"$tmp/want"
check "-k on a terminal: a backslash is \\" same "$tmp/k-bs.out" "$tmp/want"
on_tty text-bs "'$dump' --no-tensors '$tmp/bs.gguf'"
check "text view on a terminal: the same \\" has "$tmp/text-bs.out" ' testarch.path = "C:\\new"'
"$dump" -k testarch.path "$tmp/bs.gguf" >"$tmp/k-bs-pipe.out" || fail "-k into a pipe"
printf '%s\n' 'C:\new' >"$tmp/want"
check "-k into a pipe: the raw bytes" same "$tmp/k-bs-pipe.out" "$tmp/want"

"$DUMP" "$f" >"$tmp/file.out" || fail "dump to a file"
echo status=0 >>"$tmp/file.out"
on_tty text "'$dump' '$f'"
check "text view: the same on a terminal" same "$tmp/file.out" "$tmp/text.out"

on_tty noarg "'$dump'"
check "no FILE, terminal on stdin: usage error" has "$tmp/noarg.out" "gguf-dump: no FILE given and standard input is a terminal"
check "no FILE, terminal on stdin: exit 2" has "$tmp/noarg.out" "status=2"

finish
