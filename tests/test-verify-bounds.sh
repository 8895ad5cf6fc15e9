#!/bin/sh
# test-verify-bounds.sh -- gguf-verify on inputs without end: a manifest
# line longer than any valid entry (/dev/zero, an endless `yes`) stops the
# reading of the manifest at once, naming the manifest, the line and its
# offset, with bounded memory; a name too long to open is named by its
# manifest line; a model followed by endless bytes fails at once without
# --allow-trailing (the first trailing byte decides), and is read on with
# it.  Every run is limited in memory (see limit_memory) and in time.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
command -v timeout >/dev/null 2>&1 || { echo "SKIP: timeout(1) is not installed" >&2; exit 77; }
command -v gzip >/dev/null 2>&1 || { echo "SKIP: gzip is not installed" >&2; exit 77; }

synth "$tmp/m.gguf" --size tiny --type q8_0 --seed 3
cd "$tmp" || hard_error "cd $tmp"
"$VERIFY" -w m.gguf >m.xxh || hard_error "gguf-verify -w"
n_lines=$(wc -l <m.xxh)
size=$(wc -c <m.gguf)
limit_memory "$HOSTILE"

# bounded STATUS NAME COMMAND...: as run, with the memory limit and 20 s;
# a run that times out (124) fails whatever STATUS says.
bounded() {
    _want=$1
    _name=$2
    shift 2
    (limit; exec timeout 20 "$@") >"$tmp/$_name.out" 2>"$tmp/$_name.err"
    _got=$?
    checks=$((checks + 1))
    if [ "$_got" -ne "$_want" ]; then
        fail "$_name: exit status $_got, expected $_want; stderr: $(head -c 600 "$tmp/$_name.err")"
    fi
}

# The longest line a valid entry can take (tools/manifest.h).
path_max=$(getconf PATH_MAX / 2>/dev/null) || path_max=
case $path_max in ''|*[!0-9]*) path_max= ;; esac
line_max=
[ -n "$path_max" ] && line_max=$((1 + 15 + 8 + 64 + 2 + 2 * (path_max + 64) + 1))

# --- manifests without end ------------------------------------------------------
bounded 1 zero "$VERIFY" -c /dev/zero
check "/dev/zero: the line named, with its offset" \
    has "$tmp/zero.err" "gguf-verify: /dev/zero: 1: line longer than "
check "/dev/zero: improperly formatted, not read further" \
    has "$tmp/zero.err" "bytes, improperly formatted; the manifest is not read further (at byte 0)"
check "/dev/zero: no entry" has "$tmp/zero.err" "/dev/zero: no properly formatted checksum lines found"
if [ -n "$line_max" ]; then
    check "/dev/zero: the limit is the longest valid line" \
        has "$tmp/zero.err" "line longer than $line_max bytes"
fi
yes | tr -d '\n' | (limit; exec timeout 20 "$VERIFY" -c -) >"$tmp/yes-line.out" 2>"$tmp/yes-line.err"
check "one endless line of 'y': exit 1" [ $? -eq 1 ]
check "one endless line of 'y': named" has "$tmp/yes-line.err" "standard input: 1: line longer than"
long=$(head -c 9000 /dev/zero | tr '\0' x)
yes "$long" | (limit; exec timeout 20 "$VERIFY" -c -) >"$tmp/yes-long.out" 2>"$tmp/yes-long.err"
check "endless long lines: exit 1" [ $? -eq 1 ]
check "endless long lines: the first named" has "$tmp/yes-long.err" "standard input: 1: line longer than"
# Endless short lines are each malformed and forgotten: memory stays
# bounded while the manifest goes on, so only the timeout ends the run.
yes | (limit; exec timeout 3 "$VERIFY" -c -) >"$tmp/yes.out" 2>"$tmp/yes.err"
check "endless short lines: still reading after 3 s, within the memory limit" [ $? -eq 124 ]
check "endless short lines: no complaint about memory" empty "$tmp/yes.err"

# Valid entries, then a line without end: the entries are checked.
{ cat m.xxh; cat /dev/zero; } | (limit; exec timeout 20 "$VERIFY" -c -) >"$tmp/tail.out" 2>"$tmp/tail.err"
check "entries, then /dev/zero: exit 1" [ $? -eq 1 ]
check "entries, then /dev/zero: the file checked" is "$tmp/tail.out" "m.gguf: OK"
check "entries, then /dev/zero: the line and offset" \
    has "$tmp/tail.err" "standard input: $((n_lines + 1)): line longer than"
check "entries, then /dev/zero: at the offset of the line" \
    has "$tmp/tail.err" "(at byte $(wc -c <m.xxh))"
check "entries, then /dev/zero: counted as improperly formatted" \
    has "$tmp/tail.err" "WARNING: 1 line is improperly formatted"

# A 1 MB file name: its line is longer than any valid entry.
{ cat m.xxh; printf 'xxh3  0123456789abcdef  '; head -c 1048576 /dev/zero | tr '\0' a; echo; } >big.xxh
bounded 1 big "$VERIFY" -c big.xxh
check "a 1 MB name: the file before it checked" is "$tmp/big.out" "m.gguf: OK"
check "a 1 MB name: its line named" has "$tmp/big.err" "big.xxh: $((n_lines + 1)): line longer than"
check "a 1 MB name: no unnamed 'File name too long'" lacks "$tmp/big.err" "File name too long"

# --- names too long to open ----------------------------------------------------------
name6k=$(head -c 6000 /dev/zero | tr '\0' a)
{ cat m.xxh; printf 'xxh3  0123456789abcdef  %s\n' "$name6k"; } >long.xxh
bounded 2 long "$VERIFY" -c long.xxh
check "a 6000-byte name: the others checked" has "$tmp/long.out" "m.gguf: OK"
check "a 6000-byte name: FAILED open or read" has "$tmp/long.out" "$name6k: FAILED open or read"
check "a 6000-byte name: the entry named, the name shortened" \
    sh -c "grep -Eq '^gguf-verify: long\\.xxh: $((n_lines + 1)): a{100,}\\.\\.\\.a+ \\(6000 bytes\\): File name too long\$' '$tmp/long.err'"
check "a 6000-byte name: the message is short" [ "$(head -n 1 "$tmp/long.err" | wc -c)" -lt 300 ]
if [ -n "$line_max" ]; then
    # The longest valid line is read (and its file is missing); one byte
    # more stops the reading.
    name_max=$(head -c $((line_max - 24)) /dev/zero | tr '\0' b)
    printf 'xxh3  0123456789abcdef  %s\n' "$name_max" >max.xxh
    cat m.xxh >>max.xxh
    bounded 2 max "$VERIFY" -c max.xxh
    check "a line of $line_max bytes: read, the file after it checked" has "$tmp/max.out" "m.gguf: OK"
    check "a line of $line_max bytes: its file named by the line" \
        has "$tmp/max.err" "max.xxh: 1: bbbb"
    printf 'xxh3  0123456789abcdef  %sb\n' "$name_max" >over.xxh
    cat m.xxh >>over.xxh
    bounded 1 over "$VERIFY" -c over.xxh
    check "a line of $((line_max + 1)) bytes: too long" \
        has "$tmp/over.err" "over.xxh: 1: line longer than $line_max bytes"
    check "a line of $((line_max + 1)) bytes: nothing after it read" empty "$tmp/over.out"
fi
# A component longer than NAME_MAX in a short path.
comp=$(head -c 300 /dev/zero | tr '\0' c)
printf 'xxh3  0123456789abcdef  %s\n' "$comp" >comp.xxh
bounded 2 comp "$VERIFY" -c comp.xxh
check "a 300-byte component: the entry named, the name shortened" \
    sh -c "grep -Eq '^gguf-verify: comp\\.xxh: 1: c+\\.\\.\\.c+ \\(300 bytes\\): File name too long\$' '$tmp/comp.err'"

# --- a model followed by bytes without end ----------------------------------------------
cat m.gguf /dev/zero | (limit; exec timeout 20 "$VERIFY" -) >"$tmp/z.out" 2>"$tmp/z.err"
check "model + /dev/zero: exit 1 at once" [ $? -eq 1 ]
check "model + /dev/zero: the trailing bytes said" is "$tmp/z.out" \
    "-: FAILED: more than 65536 bytes after the end of the data section at byte $size, not read further (--allow-trailing accepts them)"
cat m.gguf /dev/zero | gzip -1 | (limit; exec timeout 20 "$VERIFY" -) >"$tmp/zgz.out" 2>"$tmp/zgz.err"
check "model + /dev/zero, gzip: exit 1 at once" [ $? -eq 1 ]
check "model + /dev/zero, gzip: the trailing bytes said" has "$tmp/zgz.out" \
    "-: FAILED: more than 65536 bytes after the end of the data section at byte $size"
cat m.gguf /dev/zero | (limit; exec timeout 20 "$VERIFY" -c m.xxh -) >"$tmp/zc.out" 2>"$tmp/zc.err"
check "-c, model + /dev/zero: exit 1 at once" [ $? -eq 1 ]
check "-c, model + /dev/zero: one FAILED line, for the trailing bytes" is "$tmp/zc.out" \
    "-: FAILED: more than 65536 bytes after the end of the data section at byte $size, not read further (--allow-trailing accepts them)"
check "-c, model + /dev/zero: no checksum called wrong (the whole file was not read)" \
    lacks "$tmp/zc.err" "did NOT match"
cat m.gguf /dev/zero | (limit; exec timeout 20 "$VERIFY" -w -) >"$tmp/zw.out" 2>"$tmp/zw.err"
check "-w, model + /dev/zero: exit 1 at once" [ $? -eq 1 ]
check "-w, model + /dev/zero: no manifest" empty "$tmp/zw.out"
cat m.gguf /dev/zero | (limit; exec timeout 3 "$VERIFY" --allow-trailing -) >"$tmp/za.out" 2>"$tmp/za.err"
check "--allow-trailing, model + /dev/zero: read on to the end (timed out)" [ $? -eq 124 ]

# Tails that end: up to 65536 bytes counted exactly, longer ones not read.
head -c 65536 /dev/zero | cat m.gguf - | "$VERIFY" - >"$tmp/t64.out" 2>&1
check "a tail of 65536 bytes: exit 1" [ $? -eq 1 ]
check "a tail of 65536 bytes: counted" is "$tmp/t64.out" \
    "-: FAILED: 65536 bytes after the end of the data section at byte $size (--allow-trailing accepts them)"
head -c 65537 /dev/zero | cat m.gguf - | "$VERIFY" - >"$tmp/t65.out" 2>&1
check "a tail of 65537 bytes: more than 65536" has "$tmp/t65.out" "-: FAILED: more than 65536 bytes after"
head -c 100000 /dev/zero | cat m.gguf - | "$VERIFY" --allow-trailing - >"$tmp/ta.out" 2>&1
check "--allow-trailing, a tail of 100000 bytes: OK" is "$tmp/ta.out" "-: OK"
{ cat m.gguf; head -c 100000 /dev/zero; } >tail.gguf
"$VERIFY" --allow-trailing -w tail.gguf | sed 's/  tail\.gguf/  -/' >tail.xxh
head -c 100000 /dev/zero | cat m.gguf - | "$VERIFY" --allow-trailing -c tail.xxh - >"$tmp/tac.out" 2>&1
check "--allow-trailing -c: the whole file, its tail included, matches" is "$tmp/tac.out" "-: OK"
finish
