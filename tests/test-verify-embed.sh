#!/bin/sh
# test-verify-embed.sh -- checksums embedded in the metadata: gguf-verify
# --embed writes them (the tensor bytes and every other KV pair unchanged,
# the output atomic, a damaged input refused), gguf-verify finds them and
# says so, a corrupted embedded value or tensor is named; malformed
# embedded keys fail; big-endian and version 2 files; gguf-requant
# --checksums writes checksums that verify.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python

synth "$tmp/m.gguf" --size tiny --type f16 --seed 7
cd "$tmp" || hard_error "cd $tmp"
key=gguf_tools.checksum.tensor_xxh3

# values FILE: the embedded checksums of FILE as hex, one a line.
values() {
    "$DUMP" --json --full "$1" | python3 -c '
import json, sys
for kv in json.load(sys.stdin)["kv"]:
    if kv["key"] == sys.argv[1]:
        for v in kv["value"]:
            print("%016x" % v)
' "$key"
}

# --- the round trip -------------------------------------------------------------
run 0 embed "$VERIFY" --embed m.gguf e.gguf
check "--embed: silent" empty "$tmp/embed.out"
check "--embed: nothing on stderr" empty "$tmp/embed.err"
run 0 verify "$VERIFY" e.gguf
check "embedded checksums: found and said" is "$tmp/verify.out" "e.gguf: OK (26 embedded tensor checksums match)"
run 0 plain "$VERIFY" m.gguf
check "no embedded checksums: plain OK" is "$tmp/plain.out" "m.gguf: OK"
"$VERIFY" -w m.gguf | sed -n '3,$s/^xxh3  \([0-9a-f]*\)  .*/\1/p' >"$tmp/m.sums"
values e.gguf >"$tmp/e.sums"
check "embedded values: 26" [ "$(wc -l <"$tmp/e.sums")" -eq 26 ]
check "embedded values: each tensor's XXH3 as -w prints it" cmp -s "$tmp/m.sums" "$tmp/e.sums"
"$VERIFY" -w e.gguf | sed -n '3,$s/^xxh3  \([0-9a-f]*\)  .*/\1/p' >"$tmp/e.tensors"
check "--embed: the tensor bytes unchanged" cmp -s "$tmp/m.sums" "$tmp/e.tensors"
"$DUMP" --json --full m.gguf | python3 -c '
import json, sys
print(json.dumps(json.load(sys.stdin)["kv"]))' >"$tmp/m.kv"
"$DUMP" --json --full e.gguf | python3 -c '
import json, sys
kv = json.load(sys.stdin)["kv"]
assert kv[-1]["key"] == sys.argv[1] and kv[-1]["type"] == "ARRAY", kv[-1]["key"]
print(json.dumps(kv[:-1]))' "$key" >"$tmp/e.kv"
check "--embed: the other KV pairs unchanged, the key appended" cmp -s "$tmp/m.kv" "$tmp/e.kv"
run 0 again "$VERIFY" --embed e.gguf e2.gguf
check "--embed of an embedded file: the same bytes" cmp -s e.gguf e2.gguf
run 0 stdout "$VERIFY" --embed m.gguf -
check "--embed to standard output: the same bytes" cmp -s "$tmp/stdout.out" e.gguf
cat e.gguf | "$VERIFY" >"$tmp/pipe.out" 2>&1
check "embedded, from a pipe: checked" is "$tmp/pipe.out" "-: OK (26 embedded tensor checksums match)"

# --- damage ---------------------------------------------------------------------------
# A corrupted embedded value: the key is in the file once; element 3 of its
# array starts 4 + 4 + 8 + 3 * 8 bytes after the key's last byte.
at=$(grep -obaF "$key" e.gguf | head -n 1 | cut -d: -f1)
[ -n "$at" ] || hard_error "no $key in e.gguf"
cp e.gguf val.gguf
flip val.gguf $((at + ${#key} + 16 + 3 * 8 + 5))
run 1 val "$VERIFY" val.gguf
name3=$("$DUMP" --json m.gguf | python3 -c 'import json,sys; print(json.load(sys.stdin)["tensors"][3]["name"])')
check "a corrupted embedded value: that tensor named" has "$tmp/val.out" "val.gguf:$name3: FAILED"
check "a corrupted embedded value: only that one" [ "$(count "$tmp/val.out" FAILED)" -eq 2 ]
check "a corrupted embedded value: the summary" has "$tmp/val.out" "val.gguf: FAILED: 1 of 26 tensors differ"
run 1 embed-bad "$VERIFY" --embed val.gguf out.gguf
check "--embed of a damaged file: refused" has "$tmp/embed-bad.err" "val.gguf: not copied: the input failed its checks"
check "--embed of a damaged file: no output" [ ! -e out.gguf ]
run 1 wrong-algo "$VERIFY" -w -a crc32 val.gguf
check "-w -a crc32: embedded checksums checked too" has "$tmp/wrong-algo.err" "differs from its embedded checksum"
check "-w of a damaged file: no manifest" empty "$tmp/wrong-algo.out"
cat e.gguf | "$VERIFY" -w -a crc32 >"$tmp/note.out" 2>"$tmp/note.err"
check "-w -a crc32 from a pipe: a note" has "$tmp/note.err" "note: embedded XXH3 checksums not checked"

"$EDIT" --drop output_norm.weight e.gguf drop.gguf || hard_error "verify-edit --drop"
run 1 drop "$VERIFY" drop.gguf
check "a count that does not match" has "$tmp/drop.out" "$key holds 26 checksums for 25 tensors"
"$EDIT" --set $key=5 e.gguf type.gguf || hard_error "verify-edit --set"
run 1 type "$VERIFY" type.gguf
check "not an array: failed" has "$tmp/type.out" "$key is not an array of UINT64"

# --- atomic output, refusals -------------------------------------------------------------
mkdir ro && cp m.gguf ro/ && chmod a-w ro
if [ ! -w ro ]; then
    run 2 ro "$VERIFY" --embed m.gguf ro/out.gguf
    check "read-only directory: nothing left behind" [ "$(ls -A ro)" = "m.gguf" ]
fi
chmod u+w ro
run 2 same "$VERIFY" --embed m.gguf ./m.gguf
check "OUT is IN: refused" has "$tmp/same.err" "is the input file"
cat m.gguf | "$VERIFY" --embed - pipe.gguf >"$tmp/epipe.out" 2>"$tmp/epipe.err"
check "--embed from a pipe: exit 2" [ $? -eq 2 ]
check "--embed from a pipe: why" has "$tmp/epipe.err" "--embed needs a file"
check "--embed from a pipe: no output" [ ! -e pipe.gguf ]

# --- other versions and byte orders ----------------------------------------------------------
synth be.gguf --size tiny --type f16 --seed 7 --big-endian
run 0 be "$VERIFY" --embed be.gguf be-e.gguf
run 0 be-v "$VERIFY" be-e.gguf
check "big-endian: embedded checksums match" has "$tmp/be-v.out" "be-e.gguf: OK (26 embedded tensor checksums match)"
synth v2.gguf --size tiny --type f16 --seed 7 --gguf-version 2
run 0 v2 "$VERIFY" --embed v2.gguf v2-e.gguf
run 0 v2-v "$VERIFY" v2-e.gguf
check "version 2: embedded checksums match" has "$tmp/v2-v.out" "v2-e.gguf: OK (26 embedded tensor checksums match)"

# --- gguf-requant --checksums -------------------------------------------------------------------
if [ -x "$REQUANT" ]; then
    run 0 rq "$REQUANT" --from f16 --to q8_0 --checksums m.gguf q8.gguf
    run 0 rq-v "$VERIFY" q8.gguf
    check "requant --checksums: the output verifies" is "$tmp/rq-v.out" "q8.gguf: OK (26 embedded tensor checksums match)"
    "$VERIFY" -w q8.gguf | sed -n '3,$s/^xxh3  \([0-9a-f]*\)  .*/\1/p' >"$tmp/q8.tensors"
    values q8.gguf >"$tmp/q8.sums"
    check "requant --checksums: the values of the written tensors" cmp -s "$tmp/q8.tensors" "$tmp/q8.sums"
    run 0 rq-plain "$REQUANT" --from f16 --to q8_0 m.gguf q8-plain.gguf
    "$VERIFY" -w q8-plain.gguf | sed -n '3,$p' | sed 's/q8-plain/q8/' >"$tmp/plain.tensors"
    "$VERIFY" -w q8.gguf | sed -n '3,$p' >"$tmp/sums.tensors"
    check "requant --checksums: the same tensors as without" cmp -s "$tmp/plain.tensors" "$tmp/sums.tensors"
    run 0 rq-e "$REQUANT" --from q8_0 --to q4_0 q8.gguf q4.gguf
    run 0 rq-e-v "$VERIFY" q4.gguf
    check "requant of an embedded file without --checksums: stale values dropped" is "$tmp/rq-e-v.out" "q4.gguf: OK"
    run 0 rq-ft "$REQUANT" --file-type Q8_0 q8.gguf q8-ft.gguf
    run 0 rq-ft-v "$VERIFY" q8-ft.gguf
    check "requant copying every tensor: the values kept" is "$tmp/rq-ft-v.out" "q8-ft.gguf: OK (26 embedded tensor checksums match)"
    run 0 rq-again "$REQUANT" --from q8_0 --to q4_0 --checksums q8.gguf q4s.gguf
    run 0 rq-again-v "$VERIFY" q4s.gguf
    check "requant --checksums of an embedded file: new values" is "$tmp/rq-again-v.out" "q4s.gguf: OK (26 embedded tensor checksums match)"
    check "requant --checksums: the key once" [ "$("$DUMP" q4s.gguf | grep -c "$key")" -eq 1 ]
    cat m.gguf | "$REQUANT" --from f16 --to q8_0 --checksums - rqp.gguf >/dev/null 2>"$tmp/rqp.err"
    check "requant --checksums from a pipe: exit 2" [ $? -eq 2 ]
    check "requant --checksums from a pipe: why" has "$tmp/rqp.err" "--checksums needs IN to be a file"
    run 0 rq-stdout "$REQUANT" --from f16 --to q8_0 --checksums m.gguf -
    check "requant --checksums to standard output: the same bytes" cmp -s "$tmp/rq-stdout.out" q8.gguf
fi
finish
