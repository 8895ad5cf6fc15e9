#!/bin/sh
# gen-corpus.sh DIR -- writes the seed corpus of each harness of tests/fuzz
# into DIR/NAME (read, stream, manifest, tokenizer, write), from the
# project's own generators: gguf-synth models of several types, versions
# and byte orders, gguf-hostile's malformed files (mutated headers), their
# manifests from gguf-verify -w (with escaped names), and texts.  Nothing
# is taken from outside the tree.  Needs top_srcdir and top_builddir (the
# defaults are .) and the built tests/gguf-synth, tests/gguf-hostile and
# gguf-verify.  Exit 0, or 2 when a generator fails.

set -u
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
out=${1:?usage: gen-corpus.sh DIR}
# Absolute, as the manifests are written from inside DIR.
top_srcdir=$(cd "$top_srcdir" && pwd) && top_builddir=$(cd "$top_builddir" && pwd) || exit 2
synth=$top_builddir/tests/gguf-synth
hostile=$top_builddir/tests/gguf-hostile
verify=$top_builddir/gguf-verify
die() { echo "gen-corpus.sh: $*" >&2; exit 2; }
for t in "$synth" "$hostile" "$verify"; do
    [ -x "$t" ] || die "$t is not built"
done

rm -rf "$out"
mkdir -p "$out/read" "$out/stream" "$out/manifest" "$out/tokenizer" "$out/write" "$out/tmp" ||
    die "cannot create $out"
tmp=$out/tmp

# --- GGUF files -----------------------------------------------------------------
"$hostile" -o "$tmp/hostile" >/dev/null || die "gguf-hostile failed"
for f in "$tmp/hostile"/*.gguf; do
    name=$(basename "$f" .gguf)
    cp "$f" "$out/read/hostile-$name" && cp "$f" "$out/stream/hostile-$name" || die "copy $f"
done
# Models: every type family, every version, both byte orders.
model() {
    _name=$1
    shift
    "$synth" -j 1 "$@" -o "$tmp/$_name.gguf" 2>"$tmp/synth.err" || die "gguf-synth $*: $(cat "$tmp/synth.err")"
    cp "$tmp/$_name.gguf" "$out/read/synth-$_name" || die "copy"
}
model f16 --type f16
model q8_0 --type q8_0 --seed 1
model q4_0-v2 --type q4_0 --gguf-version 2 --seed 2
model q5_1 --type q5_1 --seed 3
model bf16-be --type bf16 --big-endian --seed 4
model f16-v1 --type f16 --gguf-version 1 --seed 5
# The stream harness runs each input five ways: its seeds are the smaller
# models, a model cut after its header (data past the end), and gzip data.
cp "$tmp/q4_0-v2.gguf" "$out/stream/synth-q4_0-v2" || die "copy"
head -c 60000 "$tmp/q8_0.gguf" >"$out/stream/synth-q8_0-cut" || die "cut"
if command -v gzip >/dev/null 2>&1; then
    for f in "$tmp/hostile/kv-count-2e63.gguf" "$tmp/hostile/v1-valid.gguf" "$tmp/q4_0-v2.gguf"; do
        [ -f "$f" ] || continue
        gzip -c "$f" >"$out/stream/gzip-$(basename "$f" .gguf)" || die "gzip $f"
    done
fi
# The writer harness copies any valid GGUF input besides following its
# recipe: the valid controls of gguf-hostile (nested arrays, alignments,
# version 1, big-endian); and recipes of a few operations each.
cp "$tmp/q4_0-v2.gguf" "$out/write/synth-q4_0-v2" || die "copy"
for name in $(awk -F '\t' '$2 == "OK" { sub(/\.gguf$/, "", $1); print $1 }' "$tmp/hostile/MANIFEST"); do
    cp "$tmp/hostile/$name.gguf" "$out/write/hostile-$name" || die "copy $name"
done
printf '\002\000\005key.a\001\012\013\014\015\016\017\020\021\022\006\004blk0\000\001\100' \
    >"$out/write/recipe-scalar-tensor"
printf '\006\002\004name\005hello\004\003arr\004\005\001\002\003\004\005\005\003str\002\001a\002bc' \
    >"$out/write/recipe-be-str-arrays"
printf '\001\007\000\001\005\006\001t\010\001\040\002' >"$out/write/recipe-v1-alignment"

# --- manifests --------------------------------------------------------------------
(
    cd "$tmp" || exit 2
    cp q4_0-v2.gguf 'm.gguf' && cp q4_0-v2.gguf 'my model.gguf' &&
        cp q4_0-v2.gguf "$(printf 'odd\nname\\x.gguf')" || exit 2
    "$verify" -w m.gguf >m.xxh && "$verify" -w -a xxh128 'my model.gguf' >space.xxh &&
        "$verify" -w -a crc32 "$(printf 'odd\nname\\x.gguf')" >odd.xxh &&
        "$verify" -w -a xxh64 m.gguf >xxh64.xxh || exit 2
) || die "gguf-verify -w failed"
cp "$tmp/m.xxh" "$tmp/space.xxh" "$tmp/odd.xxh" "$tmp/xxh64.xxh" "$out/manifest/" || die "copy"
sed 's/$/\r/' "$tmp/m.xxh" >"$out/manifest/crlf.xxh"
sed 's/^\(xxh3  [0-9a-f]*\) /\1*/' "$tmp/m.xxh" >"$out/manifest/star.xxh"
{
    head -n 3 "$tmp/m.xxh"
    echo "# a comment"
    echo ""
    echo "garbage"
    echo "xxh3  zz  m.gguf"
    printf 'xxh3  0123456789abcdef  a\\qb\n'
    printf '\\xxh3  0123456789ABCDEF  tab\\0nul\\\\back\n'
    printf 'XXH128\t\t0123456789abcdef0123456789abcdef  m.gguf:(metadata)\n'
    printf 'xxh3  0123456789abcdef  no-newline-at-end'
} >"$out/manifest/mixed.xxh"
{ head -n 2 "$tmp/m.xxh"; head -c 9000 /dev/zero | tr '\0' a; echo; } >"$out/manifest/long-line.xxh"

# --- texts for the tokenizer --------------------------------------------------------
# One choice byte (see fuzz-tokenizer.c), then the text.
i=0
while IFS= read -r line || [ -n "$line" ]; do
    [ "$line" = "__ggml_vocab_test__" ] && continue
    i=$((i + 1))
    [ $((i % 2)) -eq 0 ] && sel='\000' || sel='\005'
    { printf "$sel"; printf '%s' "$line"; } >"$out/tokenizer/case-$i"
done <"$top_srcdir/tests/data/tokenizer/qwen2.inp"
for f in "$top_srcdir"/tests/data/qwen-ref/prompts/*.txt; do
    name=$(basename "$f" .txt)
    { printf '\006'; cat "$f"; } >"$out/tokenizer/prompt-$name"
    { printf '\014\003\001\000\002\000\003\000\004\000\005\000\006\000'; cat "$f"; } \
        >"$out/tokenizer/merges-$name"
done
printf '\004<|im_start|>system\nYou are<|im_end|>\n<|im_start|>user\n<tool_call>hi<|endoftext|>' \
    >"$out/tokenizer/specials"
printf '\000\377\376\300\200 \355\240\200 \360\237\230\200\200 caf\303' >"$out/tokenizer/bad-utf8"

rm -rf "$tmp"
exit 0
