#!/bin/sh
# test-verify-interop.sh -- gguf-verify and the checksum tools people
# already use: lines sha256sum, sha1sum and xxhsum write (GNU style, the
# algorithm told by the length, and --tag BSD style; escaped names; a
# split set's shards) are checked by gguf-verify -c, and whole-file lines
# gguf-verify -w writes with --format gnu, --tag and --files-only are
# accepted by sha256sum -c and xxhsum -c (a manifest with tensor lines too,
# which they skip with a warning); SHA-256 equals sha256sum's; manifests in
# llama.cpp's llama-gguf-hash format, whose FILE line is the digest of the
# tensor data rather than of the file, are checked as FILE:(tensor data)
# with a note that says so (against llama-gguf-hash itself when
# LLAMA_GGUF_HASH names it).

. "${top_srcdir:-.}/tests/test-verify-common.sh"
test_name=test-verify-interop
need_python
cd "$tmp" || hard_error "cd $tmp"

synth m.gguf --size tiny --type q8_0 --seed 11
have() { command -v "$1" > /dev/null 2>&1; }

# --- SHA-256 ---------------------------------------------------------------------------
want=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' m.gguf)
run 0 w-sha "$VERIFY" -w -a sha256 --files-only m.gguf
check "SHA-256 of the file: hashlib's" is "$tmp/w-sha.out" "sha256  $want  m.gguf"
printf '%s  m.gguf\n' "$want" > hf.sha
run 0 c-gnu "$VERIFY" -c hf.sha
check "a sha256sum line (a published SHA-256): OK" is "$tmp/c-gnu.out" "m.gguf: OK"
printf '%s *m.gguf\n' "$want" > bin.sha
run 0 c-bin "$VERIFY" -c bin.sha
check "sha256sum's binary marker: OK" is "$tmp/c-bin.out" "m.gguf: OK"
printf 'SHA256 (m.gguf) = %s\n' "$want" > tag.sha
run 0 c-tag "$VERIFY" -c tag.sha
check "a sha256sum --tag line: OK" is "$tmp/c-tag.out" "m.gguf: OK"
printf '%s  m.gguf\n' "$(echo "$want" | tr 0-9a-f 1-9a-f0)" > bad.sha
run 1 c-bad "$VERIFY" -c bad.sha
check "a wrong SHA-256: FAILED" is "$tmp/c-bad.out" "m.gguf: FAILED"
run 0 tag-w "$VERIFY" -w --tag --files-only -a sha256 m.gguf
check "-w --tag -a sha256" is "$tmp/tag-w.out" "SHA256 (m.gguf) = $want"
run 0 gnu-w "$VERIFY" -w --format gnu --files-only -a sha1 m.gguf
sha1=$(python3 -c 'import hashlib,sys; print(hashlib.sha1(open(sys.argv[1],"rb").read()).hexdigest())' m.gguf)
check "-w --format gnu -a sha1: sha1sum's line" is "$tmp/gnu-w.out" "$sha1  m.gguf"
if have sha256sum; then
    sha256sum m.gguf > s1
    run 0 c-sha256sum "$VERIFY" -c s1
    check "sha256sum's own output: OK" is "$tmp/c-sha256sum.out" "m.gguf: OK"
    "$VERIFY" -w -a sha256 --tag m.gguf > v.sha || fail "-w --tag"
    run 0 sha256sum-c sha256sum -c v.sha
    check "sha256sum -c reads gguf-verify's line (tensor lines skipped)" is "$tmp/sha256sum-c.out" "m.gguf: OK"
    "$VERIFY" -w -a sha256 --format gnu --files-only m.gguf > g.sha || fail "-w --format gnu"
    run 0 sha256sum-c2 sha256sum --strict -c g.sha
    check "sha256sum --strict -c: --files-only is all properly formatted" is "$tmp/sha256sum-c2.out" "m.gguf: OK"
fi

# --- xxhsum ----------------------------------------------------------------------------
if have xxhsum; then
    for h in 0 1 2 3; do
        xxhsum -H$h m.gguf > x$h.gnu 2>/dev/null || hard_error "xxhsum -H$h"
        xxhsum -H$h --tag m.gguf > x$h.bsd 2>/dev/null || hard_error "xxhsum -H$h --tag"
        run 0 "x$h-gnu" "$VERIFY" -c x$h.gnu
        check "xxhsum -H$h: OK" is "$tmp/x$h-gnu.out" "m.gguf: OK"
        run 0 "x$h-bsd" "$VERIFY" -c x$h.bsd
        check "xxhsum -H$h --tag: OK" is "$tmp/x$h-bsd.out" "m.gguf: OK"
    done
    for a in xxh3 xxh128 xxh64 xxh32; do
        "$VERIFY" -w --tag -a "$a" m.gguf > t.$a || fail "-w --tag -a $a"
        run 0 "xxhsum-c-$a" xxhsum -c t.$a
        check "xxhsum -c reads gguf-verify -w --tag -a $a" has "$tmp/xxhsum-c-$a.out" "m.gguf: OK"
    done
    for a in xxh128 xxh64 xxh32; do
        "$VERIFY" -w --format gnu --files-only -a "$a" m.gguf > g.$a || fail "-w --format gnu -a $a"
        run 0 "xxhsum-g-$a" xxhsum --strict -c g.$a
        check "xxhsum --strict -c reads gguf-verify --format gnu -a $a" is "$tmp/xxhsum-g-$a.out" "m.gguf: OK"
    done
fi
x3=$("$VERIFY" -w --files-only m.gguf | cut -d' ' -f3)
printf 'XXH3_%s  m.gguf\n' "$x3" > x3.new
run 0 xxh3-prefix "$VERIFY" -c x3.new
check "XXH3_HEX  FILE (xxhsum 0.8.2): OK" is "$tmp/xxh3-prefix.out" "m.gguf: OK"
run 0 w-gnu-xxh3 "$VERIFY" -w --format gnu --files-only m.gguf
check "-w --format gnu: XXH3 with its prefix" is "$tmp/w-gnu-xxh3.out" "XXH3_$x3  m.gguf"
printf '%s  m.gguf\n' "$x3" > x3.gnu
run 1 x3-as-64 "$VERIFY" -c x3.gnu
check "16 digits without a prefix are XXH64, as for xxhsum" is "$tmp/x3-as-64.out" "m.gguf: FAILED"
run 2 crc-gnu "$VERIFY" -w --format gnu -a crc32 m.gguf
check "--format gnu -a crc32: refused" has "$tmp/crc-gnu.err" "--format gnu has no form for crc32 checksums"
run 2 tag-c "$VERIFY" --tag -c hf.sha
check "--tag with -c: usage" has "$tmp/tag-c.err" "are for -w"

# --- names that need escaping ------------------------------------------------------------
nl='a
b\c.gguf'
cp m.gguf "$nl"
run 0 w-esc "$VERIFY" -w --tag --files-only -a sha256 "$nl"
check "-w --tag: an escaped name" is "$tmp/w-esc.out" "\\SHA256 (a\\nb\\\\c.gguf) = $want"
if have sha256sum; then
    sha256sum "$nl" > esc.gnu
    sha256sum --tag "$nl" > esc.bsd
    run 0 c-esc-gnu "$VERIFY" -c esc.gnu
    check "sha256sum's escaped line: OK" has "$tmp/c-esc-gnu.out" "OK"
    run 0 c-esc-bsd "$VERIFY" -c esc.bsd
    check "sha256sum --tag's escaped line: OK" has "$tmp/c-esc-bsd.out" "OK"
    run 0 sha-esc sha256sum -c "$tmp/w-esc.out"
    check "sha256sum -c reads gguf-verify's escaped line" has "$tmp/sha-esc.out" "OK"
fi
rm -f "$nl"

# --- a split set: a line per shard --------------------------------------------------------
"$top_builddir/tests/split-file" m.gguf sp 3 || hard_error "split-file"
run 0 set-w "$VERIFY" -w --tag --files-only -a sha256 sp-00002-of-00003.gguf
check "-w on a set: a line per shard" [ "$(grep -c '^SHA256 (sp-0000[123]-of-00003.gguf) = ' "$tmp/set-w.out")" -eq 3 ]
grep 'sp-00002' "$tmp/set-w.out" > shard.sha
run 0 set-c "$VERIFY" -c shard.sha
check "the line of one shard: that shard OK" is "$tmp/set-c.out" "sp-00002-of-00003.gguf: OK"
if have sha256sum; then
    run 0 set-sha sha256sum --strict -c "$tmp/set-w.out"
    check "sha256sum -c: every shard" [ "$(grep -c ': OK$' "$tmp/set-sha.out")" -eq 3 ]
fi

# --- llama-gguf-hash's manifests ----------------------------------------------------------
# its format, made here: per tensor and for the tensor data, ALGO padded to 8
python3 - "$DUMP" m.gguf > llama.txt <<'EOF'
import hashlib, json, subprocess, sys
dump, path = sys.argv[1], sys.argv[2]
d = json.loads(subprocess.check_output([dump, "--json", "--no-kv", "--no-summary", path]))
data = open(path, "rb").read()
whole = hashlib.sha256()
for t in d["tensors"]:
    b = data[t["offset"]:t["offset"] + t["bytes"]]
    whole.update(b)
    print("%-8s  %s  %s:%s" % ("sha256", hashlib.sha256(b).hexdigest(), path, t["name"]))
print("%-8s  %s  %s" % ("sha256", whole.hexdigest(), path))
EOF
run 0 llama "$VERIFY" -c llama.txt
check "llama-gguf-hash's format: OK" is "$tmp/llama.out" "m.gguf: OK"
check "llama-gguf-hash's format: the note" has "$tmp/llama.err" \
    "llama.txt: note: 27 lines in llama-gguf-hash's format: a FILE line there is the digest of the tensor data, not of the whole file, and is checked as FILE:(tensor data)"
sed '$s/  [0-9a-f]\([0-9a-f]*\)  m.gguf$/  0\1  m.gguf/' llama.txt > llama-bad.txt
cmp -s llama.txt llama-bad.txt && sed -i '$s/  0\([0-9a-f]*\)  m.gguf$/  1\1  m.gguf/' llama-bad.txt
run 1 llama-bad "$VERIFY" -c llama-bad.txt
check "llama-gguf-hash's FILE line wrong: named as the tensor data" is "$tmp/llama-bad.out" "m.gguf:(tensor data): FAILED"
# the whole-file digest under the same words is not taken for the tensor data
printf '%-8s  %s  m.gguf\n' sha256 "$want" > llama-whole.txt
run 1 llama-whole "$VERIFY" -c llama-whole.txt
check "a whole-file digest in llama-gguf-hash's format: FAILED" is "$tmp/llama-whole.out" "m.gguf:(tensor data): FAILED"
# gguf-verify's own FILE:(tensor data) lines
tail -n 1 llama.txt | sed 's/^sha256 *\([0-9a-f]*\)  m.gguf$/sha256  \1  m.gguf:(tensor data)/' > data.txt
run 0 data-part "$VERIFY" -c data.txt
check "FILE:(tensor data): OK" is "$tmp/data-part.out" "m.gguf: OK"
if [ -n "${LLAMA_GGUF_HASH:-}" ]; then
    "$LLAMA_GGUF_HASH" --all m.gguf > peer.txt 2>/dev/null || hard_error "llama-gguf-hash"
    run 0 peer "$VERIFY" -c peer.txt
    check "llama-gguf-hash --all's manifest: OK" is "$tmp/peer.out" "m.gguf: OK"
fi

finish
