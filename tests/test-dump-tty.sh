#!/bin/sh
# test-dump-tty.sh -- gguf-dump on a terminal (a pseudo-terminal made by
# script(1)): -k escapes strings there instead of writing raw bytes, and
# with no FILE a terminal on standard input is refused.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
need_tools "$FIXTURE"
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
printf '%s\n' 'a\n\t\x01\x7f"\ é \xff \xc0\x80 \xed\xa0\x80 \xc2\x9b 😀 z' plain 'tab\there' 'nl\n' \
    '\xff' 'é' '' status=0 >"$tmp/want"
check "-k on a terminal: strings escaped" same "$tmp/k.out" "$tmp/want"
check "-k on a terminal: no raw ESC or 0xff" lacks "$tmp/k.out" "$(printf '\377')"

"$DUMP" "$f" >"$tmp/file.out" || fail "dump to a file"
echo status=0 >>"$tmp/file.out"
on_tty text "'$dump' '$f'"
check "text view: the same on a terminal" same "$tmp/file.out" "$tmp/text.out"

on_tty noarg "'$dump'"
check "no FILE, terminal on stdin: usage error" has "$tmp/noarg.out" "gguf-dump: no FILE given and standard input is a terminal"
check "no FILE, terminal on stdin: exit 2" has "$tmp/noarg.out" "status=2"

finish
