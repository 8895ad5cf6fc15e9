#!/bin/sh
# test-requant-imatrix.sh -- gguf-requant --imatrix against known answers
# from llama.cpp's llama-quantize (tests/data/preset-kat/imatrix.kat): the
# importance matrices llama-imatrix wrote for gguf-synth's small models, in
# its GGUF format and in the older .dat format, give every tensor
# llama-quantize's bytes under every quantized file type, also with
# --include-weights and --exclude-weights and with an output matrix in the
# matrix; the quantize.imatrix.* keys llama-quantize writes; the tensors the
# matrix lacks listed; and hostile matrices (cut short, counts that do not
# fit, values that are not finite, an entry twice, sums without counts, a
# model given as a matrix, an entry of the wrong size) refused with a
# message naming the file, the entry and the byte, and no output.

test_name=test-requant-imatrix
. "${top_srcdir:-.}/tests/common.sh"
SYNTH=$top_builddir/tests/gguf-synth
REQUANT=$(tool gguf-requant)
DUMP=$(tool gguf-dump)
DATA=$top_srcdir/tests/data/preset-kat
KAT=$DATA/imatrix.kat
need_exec "$SYNTH" "$top_builddir/gguf-requant" "$top_builddir/gguf-dump"
need_python
[ -r "$KAT" ] || hard_error "$KAT: cannot read"

digests() { tensor_digests "$DUMP" "$1"; }
section() { sed -n "s/^$1 //p" "$KAT" | sort; }

# the float models the records were made from (as in small.kat)
f=$tmp/small-f32.gguf
u=$tmp/untied-f16.gguf
"$SYNTH" --size small --seed 1 --type f32 -o "$f" || hard_error "gguf-synth failed"
"$SYNTH" --size small --seed 1 --type f16 --untied -o "$u" || hard_error "gguf-synth --untied failed"
same_input=1
if ! sed -n 's/^input //p' "$DATA/small.kat" | sort | cmp -s - "$(digests "$f" > "$tmp/in"; echo "$tmp/in")"; then
    same_input=0
    echo "note: the float model differs from the record (another libm?): tensor bytes not judged" >&2
fi
# judge NAME OUT SECTION: OUT's tensors are the section's (its types only
# when the float model is not the record's)
judge() {
    digests "$2" > "$tmp/got"
    section "$3" > "$tmp/want"
    [ -s "$tmp/want" ] || hard_error "no section $3 in $KAT"
    if [ "$same_input" = 1 ]; then
        check "$1: llama-quantize's tensors" same "$tmp/want" "$tmp/got"
    else
        cut -d' ' -f1,2 "$tmp/want" > "$tmp/w2"
        cut -d' ' -f1,2 "$tmp/got" > "$tmp/g2"
        check "$1: llama-quantize's types" same "$tmp/w2" "$tmp/g2"
    fi
}

im=$DATA/small.imatrix.gguf
for p in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K; do
    run 0 "gguf-$p" "$REQUANT" --preset "$p" --imatrix "$im" "$f" "$tmp/$p.gguf"
    judge "--preset $p --imatrix (GGUF)" "$tmp/$p.gguf" "$p"
done
check "the tensors without an entry: listed" has "$tmp/gguf-Q4_K_M.err" "1 tensors quantized without the importance matrix"
check "the tensors without an entry: named" has "$tmp/gguf-Q4_K_M.err" "'token_embd.weight'"
check "Q8_0 takes no matrix: nothing listed" [ ! -s "$tmp/gguf-Q8_0.err" ]
for p in Q4_0 Q3_K_M Q4_K_M; do
    run 0 "dat-$p" "$REQUANT" -q --preset "$p" --imatrix "$DATA/small.imatrix.dat" "$f" "$tmp/d$p.gguf"
    judge "--preset $p --imatrix (.dat)" "$tmp/d$p.gguf" "dat-$p"
done
run 0 include "$REQUANT" -q --preset Q4_K_M --imatrix "$im" --include-weights ffn_ "$f" "$tmp/inc.gguf"
judge "--include-weights" "$tmp/inc.gguf" include-Q4_K_M
run 0 exclude "$REQUANT" -q --preset Q5_K_S --imatrix "$im" --exclude-weights attn_v \
    --exclude-weights blk.1. "$f" "$tmp/exc.gguf"
judge "--exclude-weights" "$tmp/exc.gguf" exclude-Q5_K_S
for p in Q4_K_M Q6_K Q5_1; do
    run 0 "untied-$p" "$REQUANT" -q --preset "$p" --imatrix "$DATA/untied.imatrix.gguf" "$u" "$tmp/u$p.gguf"
    judge "--preset $p --imatrix, an output matrix in it" "$tmp/u$p.gguf" "untied-$p"
done
# --type rules take the matrix too
run 0 rule "$REQUANT" -q --type 'blk.*=q4_k' --imatrix "$im" "$f" "$tmp/rule.gguf"
digests "$tmp/rule.gguf" | grep 'blk.0.attn_q.weight' > "$tmp/rule-q"
digests "$tmp/Q4_K_S.gguf" | grep 'blk.0.attn_q.weight' > "$tmp/s-q"
check "--type with --imatrix: the weighted bytes" same "$tmp/s-q" "$tmp/rule-q"

# the keys llama-quantize writes
key() { "$DUMP" -k "$2" "$1" 2>/dev/null; }
check "quantize.imatrix.file" [ "$(key "$tmp/Q4_K_M.gguf" quantize.imatrix.file)" = "$im" ]
check "quantize.imatrix.dataset" [ "$(key "$tmp/Q4_K_M.gguf" quantize.imatrix.dataset)" = text.txt ]
check "quantize.imatrix.entries_count" [ "$(key "$tmp/Q4_K_M.gguf" quantize.imatrix.entries_count)" = 14 ]
check "quantize.imatrix.chunks_count" [ "$(key "$tmp/Q4_K_M.gguf" quantize.imatrix.chunks_count)" = 116 ]
check "quantize.imatrix.chunks_count from .dat" [ "$(key "$tmp/dQ4_0.gguf" quantize.imatrix.chunks_count)" = 116 ]
check "entries_count after --include-weights" [ "$(key "$tmp/inc.gguf" quantize.imatrix.entries_count)" = 6 ]
run 0 again "$REQUANT" -q --preset Q4_K_M --imatrix "$DATA/small.imatrix.dat" "$tmp/Q8_0.gguf" "$tmp/again.gguf"
check "requantized: one set of quantize.imatrix keys" \
    [ "$("$DUMP" --json --no-tensors --no-summary "$tmp/again.gguf" | grep -c '"quantize.imatrix.file"')" -eq 1 ]

# --- hostile matrices: a message, status 2, no output --------------------------------
# dat FILE NAME NCALL NVAL COUNT [EXTRA]: a .dat file of one entry with
# NVAL declared and COUNT floats of value 1 (EXTRA: python bytes after)
dat() {
    python3 - "$@" <<'EOF'
import struct, sys
path, name, ncall, nval, count = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
extra = eval(sys.argv[6]) if len(sys.argv) > 6 else b""
b = struct.pack("<i", 1) + struct.pack("<i", len(name)) + name + struct.pack("<ii", ncall, nval)
b += struct.pack("<%df" % count, *([1.0] * count)) + extra
open(path, "wb").write(b)
EOF
}
refused() {
    _name=$1 _msg=$2 _m=$3
    run 2 "$_name" "$REQUANT" -q --preset Q4_K_M --imatrix "$_m" "$f" "$tmp/x.gguf"
    check "$_name: message" has "$tmp/$_name.err" "$_msg"
    check "$_name: no output" [ ! -e "$tmp/x.gguf" ]
}
head -c 100 "$DATA/small.imatrix.dat" > "$tmp/short.dat"
refused short "$tmp/short.dat: 14 entries cannot fit in its 100 bytes" "$tmp/short.dat"
head -c 2000 "$DATA/small.imatrix.dat" > "$tmp/cut.dat"
refused cut "$tmp/cut.dat: entry 1 'blk.0.attn_output.weight': 256 values (at byte 1091), more than the file holds" "$tmp/cut.dat"
head -c 1070 "$DATA/small.imatrix.dat" > "$tmp/cut-name.dat"
refused cut-name "$tmp/cut-name.dat: entry 1: a name of 24 bytes (at byte 1059)" "$tmp/cut-name.dat"
printf '\000\000\000\000' > "$tmp/zero.dat"
refused zero "$tmp/zero.dat: not an importance matrix: 0 entries (at byte 0)" "$tmp/zero.dat"
dat "$tmp/big.dat" blk.0.attn_q.weight 1 1000000000 256
refused nval "$tmp/big.dat: entry 0 'blk.0.attn_q.weight': 1000000000 values (at byte 31), more than the file holds" "$tmp/big.dat"
dat "$tmp/neg.dat" blk.0.attn_q.weight 1 -5 0
refused nval-neg "entry 0 'blk.0.attn_q.weight': -5 values (at byte 31)" "$tmp/neg.dat"
dat "$tmp/nan.dat" blk.0.attn_q.weight 1 2 1 'struct.pack("<f", float("nan"))'
refused nan "$tmp/nan.dat: entry 'blk.0.attn_q.weight': value 1 is not finite" "$tmp/nan.dat"
dat "$tmp/tail.dat" blk.0.attn_q.weight 1 256 256 'b"xyz"'
refused tail "$tmp/tail.dat: 3 bytes after the importance matrix (at byte 1059)" "$tmp/tail.dat"
dat "$tmp/size.dat" blk.0.attn_q.weight 1 128 128
refused size "$tmp/size.dat: the entry for tensor 2 'blk.0.attn_q.weight' has 128 values; the tensor's rows need 256" "$tmp/size.dat"
dat "$tmp/embd.dat" token_embd.weight 1 4 4
run 0 embd-size "$REQUANT" --preset Q4_K_M --imatrix "$tmp/embd.dat" "$f" "$tmp/embd.gguf"
check "token_embd of another size: quantized without it" has "$tmp/embd-size.err" "'token_embd.weight'"
python3 - "$tmp/two.dat" <<'EOF'
import struct, sys
e = lambda n: struct.pack("<i", len(n)) + n + struct.pack("<ii", 1, 4) + struct.pack("<4f", 1, 1, 1, 1)
open(sys.argv[1], "wb").write(struct.pack("<i", 2) + e(b"a.weight") + e(b"a.weight"))
EOF
refused twice "$tmp/two.dat: two entries for 'a.weight'" "$tmp/two.dat"
refused model "$f: not an importance matrix: no key imatrix.datasets" "$f"
if python3 -c 'import gguf, numpy' 2>/dev/null; then
    python3 - "$tmp/nocounts.gguf" <<'EOF'
import sys, gguf, numpy as np
w = gguf.GGUFWriter(sys.argv[1], arch="imatrix")
w.add_array("imatrix.datasets", ["x"]); w.add_uint32("imatrix.chunk_count", 1); w.add_uint32("imatrix.chunk_size", 8)
w.add_tensor("blk.0.attn_q.weight.in_sum2", np.ones((1, 256), dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
EOF
    refused no-counts "no blk.0.attn_q.weight.counts beside it (at byte" "$tmp/nocounts.gguf"
    python3 - "$tmp/nosums.gguf" <<'EOF'
import sys, gguf, numpy as np
w = gguf.GGUFWriter(sys.argv[1], arch="imatrix")
w.add_array("imatrix.datasets", ["x"]); w.add_uint32("imatrix.chunk_count", 1); w.add_uint32("imatrix.chunk_size", 8)
w.add_tensor("blk.0.attn_q.weight.counts", np.ones((1, 1), dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
EOF
    refused no-sums "tensor 0 'blk.0.attn_q.weight.counts': no blk.0.attn_q.weight.in_sum2 beside it (at byte" \
        "$tmp/nosums.gguf"
fi
run 2 absent "$REQUANT" --preset Q4_K_M --imatrix "$tmp/absent.dat" "$f" "$tmp/x.gguf"
check "an absent matrix: message" has "$tmp/absent.err" "$tmp/absent.dat: cannot open: No such file or directory"
run 2 inc-alone "$REQUANT" --preset Q4_K_M --include-weights ffn "$f" "$tmp/x.gguf"
check "--include-weights without --imatrix: usage" has "$tmp/inc-alone.err" "go with --imatrix"
run 2 inc-exc "$REQUANT" --preset Q4_K_M --imatrix "$im" --include-weights a --exclude-weights b "$f" "$tmp/x.gguf"
check "--include-weights with --exclude-weights: usage" has "$tmp/inc-exc.err" "cannot be combined"
check "no output after refusals" [ ! -e "$tmp/x.gguf" ]

finish
