#!/bin/sh
# test-dump-input.sh -- gguf-dump's inputs, errors and exit statuses: paths,
# standard input, pipes and gzip giving the same output; several files;
# invalid and missing files; usage errors; --help and --version.

. "${top_srcdir:-.}/tests/test-dump-common.sh"
need_tools "$FIXTURE"
command -v gzip >/dev/null 2>&1 || { echo "SKIP: gzip not found"; exit 77; }

f=$tmp/model.gguf
"$FIXTURE" "$f" || hard_error "test-dump-fixture failed"
gzip -c "$f" >"$tmp/model.gguf.gz" || hard_error "gzip failed"

# Output of the path, with its file name replaced by NAME, as the reference.
run 0 path "$DUMP" "$f"
run 0 path-json "$DUMP" --json "$f"

# normalize NAME OUT: the dump in OUT with the file name NAME made generic.
normalize() {
    sed -e "s|^$1: GGUF|FILE: GGUF|" -e "s|^  \"file\": .*|  \"file\": FILE,|" "$2"
}
normalize "$f" "$tmp/path.out" >"$tmp/ref.txt"
normalize "$f" "$tmp/path-json.out" >"$tmp/ref.json"

# same_as_path NAME SHOWN_NAME: the outputs NAME.out and NAME-json.out match
# the reference apart from the file name, which is SHOWN_NAME.
same_as_path() {
    normalize "$2" "$tmp/$1.out" >"$tmp/$1.txt"
    check "$1: text view as for the path" same "$tmp/ref.txt" "$tmp/$1.txt"
    check "$1: file name shown" has "$tmp/$1.out" "$2: GGUF v3"
    normalize "$2" "$tmp/$1-json.out" >"$tmp/$1.json"
    check "$1: JSON as for the path" same "$tmp/ref.json" "$tmp/$1.json"
}

# --- standard input, pipes, gzip ----------------------------------------
run 0 stdin "$DUMP" - <"$f"
run 0 stdin-json "$DUMP" --json - <"$f"
same_as_path stdin -

run 0 noarg sh -c '"$1" <"$2"' sh "$DUMP" "$f"
run 0 noarg-json sh -c '"$1" --json <"$2"' sh "$DUMP" "$f"
same_as_path noarg -

run 0 pipe sh -c 'cat "$2" | "$1" -' sh "$DUMP" "$f"
run 0 pipe-json sh -c 'cat "$2" | "$1" --json -' sh "$DUMP" "$f"
same_as_path pipe -

run 0 gz "$DUMP" "$tmp/model.gguf.gz"
run 0 gz-json "$DUMP" --json "$tmp/model.gguf.gz"
same_as_path gz "$tmp/model.gguf.gz"

run 0 gzpipe sh -c 'gzip -c "$2" | "$1" -' sh "$DUMP" "$f"
run 0 gzpipe-json sh -c 'gzip -c "$2" | "$1" --json -' sh "$DUMP" "$f"
same_as_path gzpipe -

run 0 k-pipe sh -c 'cat "$2" | "$1" -k general.architecture -' sh "$DUMP" "$f"
check "-k from a pipe" test "$(cat "$tmp/k-pipe.out")" = testarch
run 0 k-gz "$DUMP" -k testarch.u32 "$tmp/model.gguf.gz"
check "-k from gzip" test "$(cat "$tmp/k-gz.out")" = 4294967295

# a file name that looks like an option, after --
cp "$f" "$tmp/-k" || hard_error "cp failed"
run 0 dashdash sh -c 'cd "$2" && "$1" --no-kv --no-tensors --no-summary -- -k' sh "$(cd "$top_builddir" && pwd)/gguf-dump" "$tmp"
check "-- ends the options" has "$tmp/dashdash.out" "-k: GGUF v3, little-endian"

# --- several files ---------------------------------------------------------
printf 'this is not a GGUF file, just text\n' >"$tmp/text.txt"
: >"$tmp/empty.gguf"
run 0 two "$DUMP" "$f" "$tmp/model.gguf.gz"
check "two files: both shown" test "$(grep -c ': GGUF v3, little-endian' "$tmp/two.out")" -eq 2
cat "$tmp/path.out" >"$tmp/want"
echo >>"$tmp/want"
cat "$tmp/gz.out" >>"$tmp/want"
check "two files: the two views, a blank line between" same "$tmp/two.out" "$tmp/want"

run 2 mixed "$DUMP" "$f" "$tmp/text.txt" "$tmp/missing.gguf" "$tmp/model.gguf.gz"
check "mixed: good files still shown" test "$(grep -c ': GGUF v3, little-endian' "$tmp/mixed.out")" -eq 2
check "mixed: invalid file named" has "$tmp/mixed.err" "gguf-dump: $tmp/text.txt: "
check "mixed: missing file named" has "$tmp/mixed.err" "gguf-dump: $tmp/missing.gguf: "
check "mixed: two messages" test "$(wc -l <"$tmp/mixed.err")" -eq 2

run 2 mixed-json "$DUMP" --json "$f" "$tmp/missing.gguf"
if command -v python3 >/dev/null 2>&1; then
    checks=$((checks + 1))
    python3 - "$tmp/mixed-json.out" "$f" "$tmp/missing.gguf" <<'EOF' || fail "JSON for several files"
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, list) and len(d) == 2, d
assert d[0]["file"] == sys.argv[2] and d[0]["kv_count"] == 31, d[0]
assert d[1]["file"] == sys.argv[3] and d[1]["error"].startswith(sys.argv[3] + ": "), d[1]
assert set(d[1]) == {"file", "error"}, d[1]
EOF
fi

# -k over several files: every value, the worst status
run 1 k-multi "$DUMP" -k testarch.u8 -k no.such.key "$f" "$tmp/model.gguf.gz"
printf '255\n255\n' >"$tmp/want"
check "-k several files: values in order" same "$tmp/k-multi.out" "$tmp/want"
check "-k absent key: message" has "$tmp/k-multi.err" "gguf-dump: $f: key 'no.such.key' not found"
check "-k absent key: one message per file" test "$(wc -l <"$tmp/k-multi.err")" -eq 2
run 2 k-worst "$DUMP" -k no.such.key "$f" "$tmp/text.txt"
run 1 k-absent "$DUMP" -k general.nope "$f"
check "-k absent key: nothing on stdout" empty "$tmp/k-absent.out"
printf "gguf-dump: %s: key 'general.nope' not found\n" "$f" >"$tmp/want"
check "-k absent key: exact message" same "$tmp/k-absent.err" "$tmp/want"

# --- invalid and missing files ---------------------------------------------
run 2 notgguf "$DUMP" "$tmp/text.txt"
check "not GGUF: nothing on stdout" empty "$tmp/notgguf.out"
check "not GGUF: one line" test "$(wc -l <"$tmp/notgguf.err")" -eq 1
check "not GGUF: prog: FILE: message" grep -q "^gguf-dump: $tmp/text.txt: ..*" "$tmp/notgguf.err"
run 2 emptyfile "$DUMP" "$tmp/empty.gguf"
check "empty file: prog: FILE: message" grep -q "^gguf-dump: $tmp/empty.gguf: ..*" "$tmp/emptyfile.err"
run 2 missing "$DUMP" "$tmp/missing.gguf"
check "missing: prog: FILE: message" grep -q "^gguf-dump: $tmp/missing.gguf: .*[Nn]o such file" "$tmp/missing.err"
run 2 notgguf-stdin "$DUMP" - <"$tmp/text.txt"
check "not GGUF on stdin: prog: -: message" grep -q "^gguf-dump: -: ..*" "$tmp/notgguf-stdin.err"
head -c 1000 "$f" >"$tmp/trunc.gguf"
run 2 trunc "$DUMP" "$tmp/trunc.gguf"
check "truncated: prog: FILE: message" grep -q "^gguf-dump: $tmp/trunc.gguf: ..*" "$tmp/trunc.err"
run 2 trunc-pipe sh -c 'cat "$2" | "$1" -' sh "$DUMP" "$tmp/trunc.gguf"
run 2 dir "$DUMP" "$tmp"

# --- usage -------------------------------------------------------------------
run 2 badopt "$DUMP" --no-such-option "$f"
check "unknown option: message" has "$tmp/badopt.err" "gguf-dump: unrecognized option '--no-such-option'"
check "unknown option: hint" has "$tmp/badopt.err" "Try 'gguf-dump --help' for more information."
check "unknown option: nothing on stdout" empty "$tmp/badopt.out"
run 2 badshort "$DUMP" -Z "$f"
check "unknown short option" has "$tmp/badshort.err" "gguf-dump: invalid option -- 'Z'"
run 2 noarg-k "$DUMP" "$f" -k
check "missing argument" has "$tmp/noarg-k.err" "gguf-dump: option requires an argument -- 'k'"
run 2 noarg-keys "$DUMP" "$f" --keys
check "missing argument (long)" has "$tmp/noarg-keys.err" "gguf-dump: option '--keys' requires an argument"

run 0 help "$DUMP" --help
check "--help: usage on stdout" has "$tmp/help.out" "Usage: gguf-dump [OPTION]... [FILE]..."
check "--help: nothing on stderr" empty "$tmp/help.err"
run 0 help-h "$DUMP" -h
check "-h as --help" same "$tmp/help.out" "$tmp/help-h.out"
# every long option of --help is documented in gguf-dump(1)
for opt in $(grep -o -e '--[a-z][a-z-]*' "$tmp/help.out" | sort -u); do
    check "gguf-dump(1) documents $opt" \
        grep -q -e "$(echo "$opt" | sed 's/-/\\\\-/g')" "$top_srcdir/man/gguf-dump.1"
done
run 0 version "$DUMP" --version
check "--version" grep -q '^gguf-dump (gguf-tools) [0-9][0-9.]*$' "$tmp/version.out"
check "--version names libgguf" grep -q '^libgguf [0-9][0-9.]*$' "$tmp/version.out"
run 0 version-V "$DUMP" -V
check "-V as --version" same "$tmp/version.out" "$tmp/version-V.out"

finish
