#!/bin/sh
# test-verify-manifest.sh -- gguf-verify -w and -c: the manifest format,
# the sha256sum -c conventions (FILE: OK / FILE: FAILED, FAILED open or
# read, --quiet, --status, --strict, --ignore-missing, the WARNING
# summaries), names with spaces, backslashes and line breaks escaped as
# sha256sum escapes them, ./m.gguf and m.gguf as one file, FILE operands,
# the manifest on standard input, several algorithms in one manifest, a
# metadata change told apart from tensor damage.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
need_python

synth "$tmp/m.gguf" --size tiny --type f16 --seed 5
synth "$tmp/n.gguf" --size tiny --type q8_0 --seed 6
cd "$tmp" || hard_error "cd $tmp"
n_tensors=26

# --- -w: the format ------------------------------------------------------------
run 0 w "$VERIFY" -w m.gguf
cp "$tmp/w.out" m.xxh
check "-w: whole file, metadata, one line per tensor" [ "$(wc -l <m.xxh)" -eq $((n_tensors + 2)) ]
check "-w: the whole-file line first" \
    sh -c "head -n 1 m.xxh | grep -Eq '^xxh3  [0-9a-f]{16}  m\\.gguf\$'"
check "-w: the metadata line second" \
    sh -c "sed -n 2p m.xxh | grep -Eq '^xxh3  [0-9a-f]{16}  m\\.gguf:\\(metadata\\)\$'"
"$DUMP" --json m.gguf | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tensors"]:
    print("m.gguf:" + t["name"])
' >"$tmp/names.want"
sed -n '3,$s/^xxh3  [0-9a-f]\{16\}  //p' m.xxh >"$tmp/names.got"
check "-w: tensor lines in directory order" cmp -s "$tmp/names.want" "$tmp/names.got"
check "-w: nothing on stderr" empty "$tmp/w.err"
run 0 w-crc "$VERIFY" -w -a crc32 m.gguf
check "-w -a crc32: 8 hex digits" \
    sh -c "head -n 1 '$tmp/w-crc.out' | grep -Eq '^crc32  [0-9a-f]{8}  m\\.gguf\$'"
run 0 w-128 "$VERIFY" -w --algo=XXH128 m.gguf
check "-w --algo=XXH128: 32 hex digits" \
    sh -c "head -n 1 '$tmp/w-128.out' | grep -Eq '^xxh128  [0-9a-f]{32}  m\\.gguf\$'"

# --- -c: the round trip -----------------------------------------------------------
run 0 c "$VERIFY" -c m.xxh
check "-c: one OK line for the file" is "$tmp/c.out" "m.gguf: OK"
check "-c: nothing on stderr" empty "$tmp/c.err"
"$VERIFY" -w m.gguf n.gguf >both.xxh 2>/dev/null
run 0 c2 "$VERIFY" -c both.xxh
check "-c two files: two OK lines" [ "$(cat "$tmp/c2.out")" = "m.gguf: OK
n.gguf: OK" ]
run 0 c-stdin "$VERIFY" -c - <both.xxh
check "-c -: the manifest from standard input" [ "$(wc -l <"$tmp/c-stdin.out")" -eq 2 ]
awk 'BEGIN { OFS = "  " } { $2 = toupper($2); print }' m.xxh >upper.xxh
check "upper-case hex made" has upper.xxh "$(head -n 1 m.xxh | awk '{ print toupper($2) }')" 
run 0 upper "$VERIFY" -c upper.xxh
check "upper-case hex is accepted" is "$tmp/upper.out" "m.gguf: OK"
sed 's/$/\r/' m.xxh >crlf.xxh
run 0 crlf "$VERIFY" -c crlf.xxh
check "CRLF line ends are accepted" is "$tmp/crlf.out" "m.gguf: OK"
sed 's/^\(xxh3  [0-9a-f]*\)  /\1 */' m.xxh >star.xxh
run 0 star "$VERIFY" -c star.xxh
check "sha256sum's ' *' binary marker is accepted" is "$tmp/star.out" "m.gguf: OK"
{ head -n 1 m.xxh; sed -n '3p' m.xxh; } >part.xxh
run 0 part "$VERIFY" -c part.xxh
check "a partial manifest: OK" is "$tmp/part.out" "m.gguf: OK"
sed -n '3,$p' m.xxh >tensors-only.xxh
run 0 tonly "$VERIFY" -c tensors-only.xxh
check "tensor lines only: one OK line named after the file" is "$tmp/tonly.out" "m.gguf: OK"
{ "$VERIFY" -w -a xxh64 m.gguf; "$VERIFY" -w -a crc32 m.gguf | head -n 1; "$VERIFY" -w -a xxh128 m.gguf | sed -n 5p; } >algos.xxh
run 0 algos "$VERIFY" -c algos.xxh
check "xxh64, crc32 and xxh128 in one manifest: one OK line" is "$tmp/algos.out" "m.gguf: OK"
sed '1s/  [0-9a-f]*  /  0000000000000000  /' algos.xxh >algos-bad.xxh
run 1 algos-bad "$VERIFY" -c algos-bad.xxh
check "several algorithms: the bad one failed" is "$tmp/algos-bad.out" "m.gguf: FAILED"
# Standard input checked against the one file a manifest lists.
cat m.gguf | "$VERIFY" -c m.xxh - >"$tmp/one-pipe.out" 2>"$tmp/one-pipe.err"
check "- against a one-file manifest: exit 0" [ $? -eq 0 ]
check "- against a one-file manifest: OK" is "$tmp/one-pipe.out" "-: OK"
cat m.gguf | "$VERIFY" -c algos.xxh - >"$tmp/algos-pipe.out" 2>"$tmp/algos-pipe.err"
check "a stream against several algorithms: exit 2" [ $? -eq 2 ]
check "a stream against several algorithms: why" has "$tmp/algos-pipe.err" "a stream can be hashed with one algorithm only"
cat n.gguf | "$VERIFY" -c m.xxh - >"$tmp/n-pipe.out" 2>"$tmp/n-pipe.err"
check "- against a one-file manifest, another file: exit 1" [ $? -eq 1 ]
check "- against a one-file manifest, another file: FAILED" has "$tmp/n-pipe.out" "-: FAILED"
cat m.gguf | "$VERIFY" -c both.xxh - >"$tmp/both-pipe.out" 2>"$tmp/both-pipe.err"
check "- against a two-file manifest: not listed" has "$tmp/both-pipe.err" "-: not listed in both.xxh"

# --- missing files -------------------------------------------------------------------
{ cat m.xxh; echo "xxh3  0123456789abcdef  missing.gguf"; } >miss.xxh
run 2 miss "$VERIFY" -c miss.xxh
check "missing: FAILED open or read" has "$tmp/miss.out" "missing.gguf: FAILED open or read"
check "missing: the others still checked" has "$tmp/miss.out" "m.gguf: OK"
check "missing: the reason" has "$tmp/miss.err" "gguf-verify: missing.gguf: No such file or directory"
check "missing: the summary" has "$tmp/miss.err" "WARNING: 1 listed file could not be read"
run 0 ignore "$VERIFY" -c miss.xxh --ignore-missing
check "--ignore-missing: skipped silently" is "$tmp/ignore.out" "m.gguf: OK"
check "--ignore-missing: nothing on stderr" empty "$tmp/ignore.err"
echo "xxh3  0123456789abcdef  missing.gguf" >only-missing.xxh
run 1 none "$VERIFY" -c only-missing.xxh --ignore-missing
check "--ignore-missing, nothing left: said" has "$tmp/none.err" "only-missing.xxh: no file was verified"
run 2 nomanifest "$VERIFY" -c nosuch.xxh
check "an unreadable manifest: trouble" has "$tmp/nomanifest.err" "nosuch.xxh: No such file or directory"
# Tensor lines of a missing file count as that file.
sed 's/  m\.gguf/  gone.gguf/' m.xxh >gone.xxh
run 2 gone "$VERIFY" -c gone.xxh
check "a missing file with tensor lines: one FAILED line" is "$tmp/gone.out" "gone.gguf: FAILED open or read"

# --- malformed lines ----------------------------------------------------------------
{
    cat m.xxh
    echo "garbage"
    echo "xxh3  zz  m.gguf"
    echo "md5  d41d8cd98f00b204e9800998ecf8427e  m.gguf"
    echo "xxh3  0123  m.gguf"
    echo "xxh3  0123456789abcdef m.gguf"
    echo ""
    echo "# a comment"
} >mal.xxh
run 0 mal "$VERIFY" -c mal.xxh
check "malformed lines: the file still OK" is "$tmp/mal.out" "m.gguf: OK"
check "malformed lines: counted" has "$tmp/mal.err" "WARNING: 5 lines are improperly formatted"
run 1 mal-strict "$VERIFY" --strict -c mal.xxh
check "--strict: exit 1, file still checked" is "$tmp/mal-strict.out" "m.gguf: OK"
check "--strict: each line named" has "$tmp/mal-strict.err" "mal.xxh: $((n_tensors + 3)): improperly formatted checksum line"
check "--strict: the last one too" has "$tmp/mal-strict.err" "mal.xxh: $((n_tensors + 7)): improperly formatted checksum line"
check "--strict: blank and comment lines are fine" lacks "$tmp/mal-strict.err" "$((n_tensors + 9)):"
run 1 nothing "$VERIFY" -c m.gguf
check "a manifest without lines: said" has "$tmp/nothing.err" "m.gguf: no properly formatted checksum lines found"
run 0 mal-status "$VERIFY" --status -c mal.xxh
check "--status: nothing on stdout" empty "$tmp/mal-status.out"
check "--status: no warnings" empty "$tmp/mal-status.err"
run 1 mal-status2 "$VERIFY" --status --strict -c mal.xxh

# --- failures, --quiet, --status ----------------------------------------------------------
set -- $(tensor_at m.gguf blk.0.attn_v.weight)
cp m.gguf bad.gguf
flip bad.gguf $(($1 + 3))
sed 's/  m\.gguf/  bad.gguf/' m.xxh >bad.xxh
cat bad.xxh m.xxh >mix.xxh
run 1 quiet "$VERIFY" -q -c mix.xxh
check "--quiet: no OK line" lacks "$tmp/quiet.out" ": OK"
check "--quiet: the failures" [ "$(cat "$tmp/quiet.out")" = "bad.gguf: FAILED
bad.gguf:blk.0.attn_v.weight: FAILED" ]
run 1 status "$VERIFY" --status -c mix.xxh
check "--status: nothing on stdout" empty "$tmp/status.out"
check "--status: nothing on stderr" empty "$tmp/status.err"
run 2 status-missing "$VERIFY" --status -c miss.xxh
check "--status: a missing file still said on stderr" has "$tmp/status-missing.err" "No such file or directory"
check "--status: but no FAILED line" empty "$tmp/status-missing.out"
echo "xxh3  0123456789abcdef  m.gguf:no.such.tensor" >notensor.xxh
run 1 notensor "$VERIFY" -c notensor.xxh
check "an unknown tensor: FAILED" is "$tmp/notensor.out" "m.gguf:no.such.tensor: FAILED"
check "an unknown tensor: said" has "$tmp/notensor.err" "m.gguf: no tensor 'no.such.tensor' in the file"

# A metadata change: every tensor matches, the metadata line does not.
"$EDIT" --set general.file_type=7 m.gguf meta.gguf || hard_error "verify-edit"
sed 's/  m\.gguf/  meta.gguf/' m.xxh >meta.xxh
run 1 meta "$VERIFY" -c meta.xxh
check "metadata changed: the metadata line" has "$tmp/meta.out" "meta.gguf:(metadata): FAILED"
check "metadata changed: the file" has "$tmp/meta.out" "meta.gguf: FAILED"
check "metadata changed: no tensor named" [ "$(count "$tmp/meta.out" FAILED)" -eq 2 ]
check "metadata changed: said" has "$tmp/meta.err" "the difference is in the metadata"

# --- names: spaces, backslashes, line breaks --------------------------------------------
cp m.gguf "my model.gguf"
run 0 space-w "$VERIFY" -w "my model.gguf"
check "a space: not escaped" has "$tmp/space-w.out" "  my model.gguf:token_embd.weight"
cp "$tmp/space-w.out" space.xxh
run 0 space-c "$VERIFY" -c space.xxh
check "a space: round trip" is "$tmp/space-c.out" "my model.gguf: OK"
odd=$(printf 'odd\nname\\x.gguf')
cp m.gguf "$odd"
run 0 odd-w "$VERIFY" -w "$odd"
check "odd name: one line per entry" [ "$(wc -l <"$tmp/odd-w.out")" -eq $((n_tensors + 2)) ]
check "odd name: escaped, marked" has "$tmp/odd-w.out" '\xxh3  '
check "odd name: \\n and \\\\" has "$tmp/odd-w.out" '  odd\nname\\x.gguf:token_embd.weight'
if command -v sha256sum >/dev/null 2>&1; then
    want=$(sha256sum "$odd" | sed 's/^\\[0-9a-f]*  //')
    got=$(head -n 1 "$tmp/odd-w.out" | sed 's/^\\xxh3  [0-9a-f]*  //')
    check "odd name: escaped as sha256sum escapes it" [ "$want" = "$got" ]
fi
cp "$tmp/odd-w.out" odd.xxh
run 0 odd-c "$VERIFY" -c odd.xxh
check "odd name: round trip, the OK line escaped" is "$tmp/odd-c.out" '\odd\nname\\x.gguf: OK'
cp bad.gguf "$odd"
run 1 odd-bad "$VERIFY" -c odd.xxh
check "odd name: the tensor line escaped" has "$tmp/odd-bad.out" '\odd\nname\\x.gguf:blk.0.attn_v.weight: FAILED'
printf 'xxh3  0123456789abcdef  a\\qb\n' >badesc.xxh
printf '\\xxh3  0123456789abcdef  a\\qb\n' >>badesc.xxh
run 1 badesc "$VERIFY" -c badesc.xxh --ignore-missing
check "an unknown escape is malformed" has "$tmp/badesc.err" "WARNING: 1 line is improperly formatted"

# --- one file under two names -------------------------------------------------------------
run 0 dot-w "$VERIFY" -w ./m.gguf
cp "$tmp/dot-w.out" dot.xxh
check "-w ./m.gguf: the name as given" has dot.xxh "  ./m.gguf:token_embd.weight"
run 0 dot-op "$VERIFY" -c dot.xxh m.gguf
check "m.gguf matches the ./m.gguf entries" is "$tmp/dot-op.out" "./m.gguf: OK"
run 0 op-dot "$VERIFY" -c m.xxh ./m.gguf
check "./m.gguf matches the m.gguf entries" is "$tmp/op-dot.out" "m.gguf: OK"
{ head -n 1 m.xxh; sed -n '2,$p' dot.xxh; } >mixed-names.xxh
run 0 mixed-names "$VERIFY" -c mixed-names.xxh
check "m.gguf and ./m.gguf entries: one file, one line" is "$tmp/mixed-names.out" "m.gguf: OK"
run 0 select "$VERIFY" -c both.xxh n.gguf
check "a FILE operand selects its entries" is "$tmp/select.out" "n.gguf: OK"
run 1 notlisted "$VERIFY" -c m.xxh n.gguf
check "an operand not in the manifest: said" has "$tmp/notlisted.err" "n.gguf: not listed in m.xxh"
run 2 stdin-both "$VERIFY" -c - -
check "standard input twice: refused" has "$tmp/stdin-both.err" "both the manifest and a file"

# A manifest of standard input, checked from a pipe.
cat m.gguf | "$VERIFY" -w >stdin.xxh 2>/dev/null
check "-w from a pipe: the name is -" has stdin.xxh "  -:token_embd.weight"
sed 's/  -/  m.gguf/' stdin.xxh >fromstdin.xxh
check "-w from a pipe: the same values as from the file" cmp -s fromstdin.xxh m.xxh
cat m.gguf | "$VERIFY" -c stdin.xxh >"$tmp/pipe-c.out" 2>&1
check "-c for a pipe: OK" is "$tmp/pipe-c.out" "-: OK"
finish
