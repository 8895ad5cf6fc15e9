#!/bin/sh
# test-verify-kat.sh -- gguf-verify's checksums against known values from
# other programs on the same bytes: whole files against xxhsum -H1 (XXH64),
# -H2 (XXH128) and -H3 (XXH3-64), and CRC-32 against Python's zlib.crc32
# and the CRC gzip stores; every tensor and the metadata section likewise,
# their bytes cut out of the file by an independent reader written here in
# Python.  Files: a small Q4_K_M model, a big-endian one, gguf-hostile's
# base file (tensors of odd sizes with padding between them), an empty
# tensor, a file with trailing bytes; from a path, a pipe and gzip.
# Skips (77) without xxhsum or python3.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python
command -v xxhsum >/dev/null 2>&1 || { echo "SKIP: xxhsum not found (install xxhash)" >&2; exit 77; }

cd "$tmp" || hard_error "cd $tmp"
synth q.gguf --size small --type q4_k_m --seed 11
synth be.gguf --size tiny --type f16 --seed 12 --big-endian
"$HOSTILE" -o corpus >/dev/null 2>&1 || hard_error "gguf-hostile failed"
cp corpus/valid.gguf odd.gguf
cp corpus/zero-dim.gguf empty-tensor.gguf
{ cat odd.gguf; printf 'trailing bytes'; } >tail.gguf
files="q.gguf be.gguf odd.gguf empty-tensor.gguf tail.gguf"

# xxh ALGO FILE: the value xxhsum prints for FILE's bytes (read from
# standard input, so that no name is in the way of the digits).
xxh() {
    case $1 in
    xxh64) xxhsum -H1 <"$2" | grep -Eo '[0-9a-f]{16}' | head -n 1 ;;
    xxh128) xxhsum -H2 <"$2" | grep -Eo '[0-9a-f]{32}' | head -n 1 ;;
    xxh3) xxhsum -H3 <"$2" | grep -Eo '[0-9a-f]{16}' | head -n 1 ;;
    crc32) python3 -c 'import sys, zlib; print("%08x" % zlib.crc32(open(sys.argv[1], "rb").read()))' "$2" ;;
    esac
}

# A reader independent of libgguf: cuts FILE into the metadata section
# and each tensor's bytes, written as DIR/meta and DIR/t.INDEX, and prints
# their names in directory order.
cat >split.py <<'EOF'
import os, struct, sys
path, out = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
o = "<"
if struct.unpack_from("<I", data, 4)[0] & 0xffff == 0:
    o = ">"
version = struct.unpack_from(o + "I", data, 4)[0]
pos = 8
def u(fmt):
    global pos
    v = struct.unpack_from(o + fmt, data, pos)[0]
    pos += struct.calcsize(fmt)
    return v
cnt = (lambda: u("I")) if version == 1 else (lambda: u("Q"))
n_tensors, n_kv = cnt(), cnt()
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip_value(t):
    global pos
    if t == 8:
        n = cnt()
        pos += n
    elif t == 9:
        et, n = u("I"), cnt()
        for _ in range(n):
            skip_value(et)
    else:
        pos += SIZES[t]
align = 32
for _ in range(n_kv):
    klen = cnt(); key = data[pos:pos + klen]; pos += klen
    t = u("I")
    if key == b"general.alignment":
        align = struct.unpack_from(o + "I", data, pos)[0]
    skip_value(t)
# bytes per block and elements per block of the types the files here use
TYPES = {0: (4, 1), 1: (2, 1), 8: (34, 32), 12: (144, 256), 13: (176, 256), 14: (210, 256),
         6: (22, 32), 7: (24, 32), 24: (1, 1), 30: (2, 1)}
tensors = []
for _ in range(n_tensors):
    nlen = cnt(); name = data[pos:pos + nlen]; pos += nlen
    nd = u("I"); ne = [cnt() for _ in range(nd)]
    ty = u("I"); off = u("Q")
    bs, be = TYPES[ty]
    size = ne[0] // be * bs
    for d in ne[1:]:
        size *= d
    tensors.append((name, off, size))
header = pos
start = (header + align - 1) // align * align
open(os.path.join(out, "meta"), "wb").write(data[:header])
for i, (name, off, size) in enumerate(tensors):
    open(os.path.join(out, "t.%d" % i), "wb").write(data[start + off:start + off + size])
    print(name.decode())
EOF

for f in $files; do
    mkdir "$f.d" || hard_error "mkdir"
    python3 split.py "$f" "$f.d" >"$f.d/names" || hard_error "split.py $f"
    n=$(wc -l <"$f.d/names")
    for algo in xxh3 xxh128 xxh64 crc32; do
        run 0 "$f-$algo" "$VERIFY" -w --allow-trailing -a $algo "$f"
        m=$tmp/$f-$algo.out
        check "$f $algo: a line per tensor" [ "$(wc -l <"$m")" -eq $((n + 2)) ]
        got=$(sed -n '1s/^[a-z0-9]*  \([0-9a-f]*\)  .*/\1/p' "$m")
        check "$f $algo: the whole file" [ "$got" = "$(xxh $algo "$f")" ]
        got=$(sed -n '2s/^[a-z0-9]*  \([0-9a-f]*\)  .*/\1/p' "$m")
        check "$f $algo: the metadata" [ "$got" = "$(xxh $algo "$f.d/meta")" ]
        i=0
        while read -r name; do
            got=$(grep -F "  $f:$name" "$m" | sed 's/^[a-z0-9]*  \([0-9a-f]*\)  .*/\1/')
            check "$f $algo: tensor $i $name" [ "$got" = "$(xxh $algo "$f.d/t.$i")" ]
            i=$((i + 1))
        done <"$f.d/names"
        # The same values from a pipe.
        cat "$f" | "$VERIFY" -w --allow-trailing -a $algo | sed "s/  -/  $f/" >"$tmp/pipe.out"
        check "$f $algo: the same from a pipe" cmp -s "$tmp/pipe.out" "$m"
    done
done

# Known constants: digests of no bytes at all, for the empty tensor.
check "the empty tensor: XXH3 of no bytes" has "$tmp/empty-tensor.gguf-xxh3.out" "xxh3  2d06800538d394c2  empty-tensor.gguf:"
check "the empty tensor: XXH64 of no bytes" has "$tmp/empty-tensor.gguf-xxh64.out" "xxh64  ef46db3751d8e999  empty-tensor.gguf:"
check "the empty tensor: CRC-32 of no bytes" has "$tmp/empty-tensor.gguf-crc32.out" "crc32  00000000  empty-tensor.gguf:"

# CRC-32 as gzip stores it (little-endian, before the size at the end).
if command -v gzip >/dev/null 2>&1 && command -v od >/dev/null 2>&1; then
    gz=$(gzip -c q.gguf | tail -c 8 | head -c 4 | od -An -tx1 | tr -d ' \n' |
        sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')
    got=$(sed -n '1s/^crc32  \([0-9a-f]*\)  .*/\1/p' "$tmp/q.gguf-crc32.out")
    check "crc32: the value gzip stores" [ "$got" = "$gz" ]
    # gzip input: the digests of the decompressed bytes.
    gzip -c q.gguf >q.gguf.gz
    "$VERIFY" -w q.gguf.gz | sed 's/  q\.gguf\.gz/  q.gguf/' >"$tmp/gz.out"
    check "gzip input: the values of the GGUF bytes" cmp -s "$tmp/gz.out" "$tmp/q.gguf-xxh3.out"
fi
finish
