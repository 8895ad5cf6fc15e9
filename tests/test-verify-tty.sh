#!/bin/sh
# test-verify-tty.sh -- gguf-verify on a terminal (a pseudo-terminal made
# by script(1)): standard input that is a terminal is refused, so is
# binary output to one; files over 1 GB show progress on standard error
# while they are hashed, smaller ones and -q do not.  The large file is
# sparse: a header and 1.1 GB of zeros that take no disk space.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python
command -v script >/dev/null 2>&1 || { echo "SKIP: script(1) not found"; exit 77; }
script -qec true /dev/null >/dev/null 2>&1 </dev/null || {
    echo "SKIP: script(1) cannot make a pseudo-terminal here"
    exit 77
}

# on_tty NAME COMMAND: runs the shell COMMAND on a pseudo-terminal; its
# output (with the terminal's \r\n turned into \n) goes to $tmp/NAME.out.
on_tty() {
    (cd "$tmp" && script -qec "$2; echo \"status=\$?\"" /dev/null </dev/null 2>&1) |
        tr -d '\r' >"$tmp/$1.out"
}

synth "$tmp/m.gguf" --size tiny --type f16 --seed 1
on_tty noarg "'$VERIFY'"
check "no FILE, a terminal: refused" has "$tmp/noarg.out" "no FILE given and standard input is a terminal"
check "no FILE, a terminal: exit 2" has "$tmp/noarg.out" "status=2"
on_tty dash "'$VERIFY' -"
check "- on a terminal: refused" has "$tmp/dash.out" "gguf-verify: -: standard input is a terminal"
check "- on a terminal: exit 2" has "$tmp/dash.out" "status=2"
on_tty embed "'$VERIFY' --embed m.gguf -"
check "--embed to a terminal: refused" has "$tmp/embed.out" "refusing to write binary data to a terminal"
check "--embed to a terminal: no GGUF bytes" lacks "$tmp/embed.out" "GGUF"

# A 1.1 GB model: one F32 tensor of 275,000,000 zeros.
python3 - "$tmp/big.gguf" <<'EOF' || hard_error "cannot write big.gguf"
import struct, sys
name = b"zeros"
n = 275000000
h = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
h += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, n, 0, 0)
start = (len(h) + 31) // 32 * 32
with open(sys.argv[1], "wb") as f:
    f.write(h + b"\0" * (start - len(h)))
    f.truncate(start + 4 * n)
EOF
on_tty big "'$VERIFY' -w big.gguf >big.xxh"
check "big: exit 0" has "$tmp/big.out" "status=0"
check "big: progress shown" has "$tmp/big.out" "gguf-verify: big.gguf: "
check "big: a percentage" has "$tmp/big.out" "100%"
check "big: the line cleared at the end" has "$tmp/big.out" "$(printf '\033[K')status=0"
check "big: the manifest written" [ "$(wc -l <"$tmp/big.xxh")" -eq 3 ]
on_tty quiet "'$VERIFY' -q -w big.gguf >quiet.xxh"
check "-q: no progress" [ "$(cat "$tmp/quiet.out")" = "status=0" ]
check "-q: the same manifest" cmp -s "$tmp/big.xxh" "$tmp/quiet.xxh"
rm -f "$tmp/big.gguf"
on_tty small "'$VERIFY' -w m.gguf >small.xxh"
check "a small file: no progress" [ "$(cat "$tmp/small.out")" = "status=0" ]
finish
