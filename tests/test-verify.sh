#!/bin/sh
# test-verify.sh -- gguf-verify's verdicts on intact and damaged files:
# an intact model is OK from a path, standard input, a pipe and gzip; one
# flipped byte inside one tensor is found and that tensor named (through a
# manifest and through embedded checksums, from a file and from a pipe);
# a truncated file names the tensor cut short; bytes after the data
# section fail unless --allow-trailing; exit statuses 0, 1 and 2; usage.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python

m=$tmp/m.gguf
synth "$m" --size tiny --type f16 --seed 3
cd "$tmp" || hard_error "cd $tmp"

# --- an intact file -------------------------------------------------------
run 0 ok "$VERIFY" m.gguf
check "intact: one OK line" is "$tmp/ok.out" "m.gguf: OK"
check "intact: nothing on stderr" empty "$tmp/ok.err"
run 0 ok-stdin "$VERIFY" - <m.gguf
check "standard input: OK" is "$tmp/ok-stdin.out" "-: OK"
cat m.gguf | "$VERIFY" >"$tmp/ok-pipe.out" 2>"$tmp/ok-pipe.err"
check "pipe, no FILE: exit 0" [ $? -eq 0 ]
check "pipe: OK" is "$tmp/ok-pipe.out" "-: OK"
if command -v gzip >/dev/null 2>&1; then
    gzip -c m.gguf >m.gguf.gz
    run 0 ok-gz "$VERIFY" m.gguf.gz
    check "gzip file: OK" is "$tmp/ok-gz.out" "m.gguf.gz: OK"
fi
run 0 quiet "$VERIFY" -q m.gguf
check "-q: no OK line" empty "$tmp/quiet.out"
run 0 status "$VERIFY" --status m.gguf
check "--status: nothing" empty "$tmp/status.out"
run 0 two "$VERIFY" m.gguf ./m.gguf
check "two files: two lines" [ "$(cat "$tmp/two.out")" = "m.gguf: OK
./m.gguf: OK" ]

# --- one flipped byte inside one tensor --------------------------------------
run 0 manifest "$VERIFY" -w m.gguf
cp "$tmp/manifest.out" m.xxh
set -- $(tensor_at m.gguf blk.1.attn_q.weight)
[ -n "${1:-}" ] || hard_error "no tensor blk.1.attn_q.weight"
cp m.gguf bad.gguf
flip bad.gguf $(($1 + $2 / 2))
sed 's/  m\.gguf/  bad.gguf/' m.xxh >bad.xxh
run 1 flip "$VERIFY" -c bad.xxh
check "flipped byte: the tensor named" has "$tmp/flip.out" "bad.gguf:blk.1.attn_q.weight: FAILED"
check "flipped byte: the file failed" has "$tmp/flip.out" "bad.gguf: FAILED"
check "flipped byte: no other tensor named" [ "$(count "$tmp/flip.out" FAILED)" -eq 2 ]
check "flipped byte: metadata not named" lacks "$tmp/flip.out" "(metadata)"
check "flipped byte: the summary" has "$tmp/flip.err" "WARNING: 2 computed checksums did NOT match"
# Through a pipe: a manifest written for standard input names "-".
sed 's/  m\.gguf/  -/' m.xxh >stdin.xxh
cat bad.gguf | "$VERIFY" -c stdin.xxh >"$tmp/flip-stdin.out" 2>"$tmp/flip-stdin.err"
check "flipped byte, stdin: exit 1" [ $? -eq 1 ]
check "flipped byte, stdin: the tensor named" has "$tmp/flip-stdin.out" "-:blk.1.attn_q.weight: FAILED"
check "flipped byte, stdin: only that tensor" [ "$(count "$tmp/flip-stdin.out" FAILED)" -eq 2 ]

# The same through embedded checksums.
run 0 embed "$VERIFY" --embed m.gguf e.gguf
set -- $(tensor_at e.gguf blk.0.ffn_down.weight)
cp e.gguf e-bad.gguf
flip e-bad.gguf $(($1 + 1))
run 1 eflip "$VERIFY" e-bad.gguf
check "embedded: the tensor named" has "$tmp/eflip.out" "e-bad.gguf:blk.0.ffn_down.weight: FAILED"
check "embedded: the file failed" has "$tmp/eflip.out" \
    "e-bad.gguf: FAILED: 1 of 26 tensors differ from their embedded checksums"
check "embedded: two lines" [ "$(wc -l <"$tmp/eflip.out")" -eq 2 ]
cat e-bad.gguf | "$VERIFY" - >"$tmp/eflip-pipe.out" 2>"$tmp/eflip-pipe.err"
check "embedded, pipe: exit 1" [ $? -eq 1 ]
check "embedded, pipe: the tensor named" has "$tmp/eflip-pipe.out" "-:blk.0.ffn_down.weight: FAILED"

# A byte flipped in the padding between two tensors: every tensor still
# matches, the whole file does not.  (The tiny model's tensors need no
# padding; gguf-hostile's valid base file has some, after an odd size.)
"$HOSTILE" -o corpus >/dev/null || hard_error "gguf-hostile failed"
v=corpus/valid.gguf
run 0 v-manifest "$VERIFY" -w $v
set -- $(tensor_at $v blk.0.q8_)
check "the base file has padding after blk.0.q8_" [ $(($2 % 32)) -ne 0 ]
cp $v pad.gguf
flip pad.gguf $(($1 + $2))
sed "s|  $v|  pad.gguf|" "$tmp/v-manifest.out" >pad.xxh
run 1 pad "$VERIFY" -c pad.xxh
check "padding: the file failed" is "$tmp/pad.out" "pad.gguf: FAILED"
check "padding: said where" has "$tmp/pad.err" \
    "the 4 listed tensors match: the difference is outside the metadata and tensors"
# The padding after the last tensor is not trailing.
set -- $(tensor_at $v blk.0.i8x)
check "the base file ends with padding" [ $(($1 + $2)) -lt "$(wc -c <$v)" ]
run 0 v-ok "$VERIFY" $v
check "padding at the end: OK" is "$tmp/v-ok.out" "$v: OK"

# --- a truncated file -------------------------------------------------------
set -- $(tensor_at m.gguf blk.1.ffn_gate.weight)
head -c $(($1 + 100)) m.gguf >cut.gguf
run 1 cut "$VERIFY" cut.gguf
check "truncated: the tensor cut short named" has "$tmp/cut.out" "'blk.1.ffn_gate.weight': data ends at byte"
check "truncated: one FAILED line" [ "$(count "$tmp/cut.out" "cut.gguf: FAILED: ")" -eq 1 ]
check "truncated: the size given" has "$tmp/cut.out" "file has $(($1 + 100)) bytes"
cat cut.gguf | "$VERIFY" >"$tmp/cut-pipe.out" 2>&1
check "truncated, pipe: exit 1" [ $? -eq 1 ]
check "truncated, pipe: the tensor named" has "$tmp/cut-pipe.out" "'blk.1.ffn_gate.weight': data ends at byte"
sed 's/  m\.gguf/  cut.gguf/' m.xxh >cut.xxh
run 1 cut-c "$VERIFY" -c cut.xxh
check "truncated, -c: the reason" has "$tmp/cut-c.out" "'blk.1.ffn_gate.weight': data ends"
head -c 20 m.gguf >stub.gguf
run 1 stub "$VERIFY" stub.gguf
check "cut in the header: a reason" has "$tmp/stub.out" "stub.gguf: FAILED: header: key-value count of 8 bytes runs past the end"

# --- trailing bytes ------------------------------------------------------------
{ cat m.gguf; printf 'junk'; } >tail.gguf
size=$(wc -c <m.gguf)
run 1 tail "$VERIFY" tail.gguf
check "trailing: reason" is "$tmp/tail.out" \
    "tail.gguf: FAILED: 4 bytes after the end of the data section at byte $size (--allow-trailing accepts them)"
run 0 tail-ok "$VERIFY" --allow-trailing tail.gguf
check "--allow-trailing: OK" is "$tmp/tail-ok.out" "tail.gguf: OK"
cat tail.gguf | "$VERIFY" >"$tmp/tail-pipe.out" 2>&1
check "trailing, pipe: exit 1" [ $? -eq 1 ]
check "trailing, pipe: reason" has "$tmp/tail-pipe.out" "4 bytes after the end of the data section"

# --- streams: a named pipe; tensor data out of directory order ------------------
mkfifo fifo || hard_error "mkfifo"
cat m.gguf >fifo &
run 0 fifo "$VERIFY" fifo
check "a named pipe: OK" is "$tmp/fifo.out" "fifo: OK"
wait
cat m.gguf >fifo &
"$VERIFY" -w fifo | sed 's/  fifo/  m.gguf/' >"$tmp/fifo-w.out"
wait
check "a named pipe: the same manifest as the file" cmp -s "$tmp/fifo-w.out" m.xxh
# Swap the data offsets of two tensors of the same size: a stream reads
# their data in the other order, and must still hash each one right.
cp m.gguf swap.gguf
python3 - swap.gguf <<'EOF2' || hard_error "cannot patch swap.gguf"
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
def offset_field(name):
    # name, then n_dims (1), one dimension, the type, the offset
    p = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    assert struct.unpack_from("<I", data, p)[0] == 1
    return p + 4 + 8 + 4
a, b = offset_field(b"blk.0.attn_norm.weight"), offset_field(b"blk.1.ffn_norm.weight")
va, vb = data[a:a + 8], data[b:b + 8]
data[a:a + 8], data[b:b + 8] = vb, va
open(sys.argv[1], "wb").write(data)
EOF2
run 0 swap-w "$VERIFY" -w swap.gguf
check "out of order: warned" has "$tmp/swap-w.err" "data at offset"
cat swap.gguf | "$VERIFY" -w 2>/dev/null | sed 's/  -/  swap.gguf/' >"$tmp/swap-pipe.out"
check "out of order: a pipe hashes like the file" cmp -s "$tmp/swap-pipe.out" "$tmp/swap-w.out"
norm=$(grep -F "  m.gguf:blk.1.ffn_norm.weight" m.xxh | cut -d' ' -f3)
check "out of order: each tensor's own bytes hashed" \
    has "$tmp/swap-w.out" "xxh3  $norm  swap.gguf:blk.0.attn_norm.weight"

# --- statuses: a good, a bad and a missing file ---------------------------------
run 1 mixed "$VERIFY" m.gguf bad.gguf tail.gguf
check "mixed: OK line" has "$tmp/mixed.out" "m.gguf: OK"
run 2 missing "$VERIFY" m.gguf nothere.gguf bad.gguf
check "missing: FAILED open or read" has "$tmp/missing.out" "nothere.gguf: FAILED open or read"
check "missing: the reason on stderr" has "$tmp/missing.err" "gguf-verify: nothere.gguf: No such file or directory"
run 2 dir "$VERIFY" "$tmp"
check "a directory: trouble" has "$tmp/dir.err" "Is a directory"
printf 'not a model' >text.gguf
run 1 text "$VERIFY" text.gguf
check "not GGUF: reason" has "$tmp/text.out" "text.gguf: FAILED: header: not a GGUF file: magic is 'not '"

# --- usage -----------------------------------------------------------------------
run 0 help "$VERIFY" --help
check "--help: usage on stdout" has "$tmp/help.out" "Usage: gguf-verify"
check "--help: exit statuses" has "$tmp/help.out" "Exit status"
run 0 version "$VERIFY" --version
check "--version" has "$tmp/version.out" "gguf-verify (gguf-tools)"
run 2 badopt "$VERIFY" --frobnicate m.gguf
check "bad option: named" has "$tmp/badopt.err" "unrecognized option '--frobnicate'"
run 2 badalgo "$VERIFY" -w --algo md5 m.gguf
check "bad algorithm: named" has "$tmp/badalgo.err" "unknown algorithm 'md5'"
run 2 twomodes "$VERIFY" -w -c m.xxh m.gguf
check "two modes: refused" has "$tmp/twomodes.err" "cannot be combined"
run 2 badmodel "$VERIFY" --model llama m.gguf
check "--model llama: unsupported, the supported named" has "$tmp/badmodel.err" "unsupported architecture 'llama' (supported: qwen2, qwen3)"
run 2 embed1 "$VERIFY" --embed m.gguf
check "--embed without OUT" has "$tmp/embed1.err" "--embed needs IN and OUT"
if [ -w /dev/full ]; then
    "$VERIFY" -w m.gguf >/dev/full 2>"$tmp/full.err"
    check "write error: exit 2" [ $? -eq 2 ]
    check "write error: reported" has "$tmp/full.err" "write error"
fi
finish
