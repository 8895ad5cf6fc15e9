#!/bin/sh
# test-requant-kat.sh -- known answers from llama.cpp's llama-quantize for
# whole models: gguf-requant --from q6_k --to q4_k on gguf-synth's small
# Q4_K_M model must write every tensor exactly as llama-quantize does, and
# gguf-synth's quantized models must hold exactly the bytes llama-quantize
# makes from gguf-synth's f32 model.
#
# tests/data/requant-kat/small.kat holds the SHA-256 of every tensor's bytes
# (see README.md there for how it was made).  Its sections:
#   f32      gguf-synth --type f32: the float weights the reference quantized
#   q4_k_m   gguf-synth --type q4_k_m (= llama-quantize f32 -> Q4_K_M)
#   q8_0 ... gguf-synth --type TYPE   (= llama-quantize --pure f32 -> TYPE)
#   requant  llama-quantize's Q6_K -> Q4_K requantization of the q4_k_m model
# The weights come from the generator's discretized normal, which goes
# through libm: on a system whose libm rounds differently the generated
# floats, and so every answer, may differ.  A quantized model is therefore
# judged only when the f32 model matches the record (else its check is
# skipped), and the requantization only when its input matches; when the
# requantization could not be judged the test exits 77 and says why.
# Tensor names and types never depend on libm: a difference there always
# fails.

: "${top_srcdir:=.}"
: "${top_builddir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
. "$top_srcdir/tests/tool.sh"
REQUANT=$(tool gguf-requant)
DUMP=$(tool gguf-dump)
KAT=$top_srcdir/tests/data/requant-kat/small.kat

for t in "$SYNTH" "$REQUANT" "$DUMP"; do
    [ -x "$t" ] || { echo "ERROR: $t not built" >&2; exit 99; }
done
[ -r "$KAT" ] || { echo "ERROR: $KAT: cannot read" >&2; exit 99; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found (needed to read gguf-dump --json)" >&2; exit 77; }
for c in sha256sum dd; do
    command -v $c >/dev/null 2>&1 || { echo "SKIP: $c not found" >&2; exit 77; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-requant-kat.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

checks=0
failures=0
judged=0
skipped=
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# digests FILE: prints "name type sha256" for each tensor in file order;
# the byte ranges are gguf-dump --json's absolute offsets and sizes.
digests() {
    "$DUMP" --json "$1" >"$tmp/dump.json" || return 1
    python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tensors"]:
    print(t["name"], t["type"], t["offset"], t["bytes"])
' "$tmp/dump.json" >"$tmp/ranges" || return 1
    # (sh has no local variables: these names are used nowhere else)
    while read -r d_name d_type d_off d_len; do
        d_h=$(dd if="$1" bs=65536 iflag=skip_bytes,count_bytes skip="$d_off" count="$d_len" \
            status=none | sha256sum) || return 1
        echo "$d_name $d_type ${d_h%% *}"
    done <"$tmp/ranges"
}

# expected SECTION: the section's lines of the known answers, without the label.
expected() {
    awk -v s="$1" '$1 == s { print $2, $3, $4 }' "$KAT"
}

# compare SECTION FILE WHAT: compares FILE's tensor digests with SECTION,
# tensor by tensor by name (the order of tensors is not compared).  Returns 0 when all match; 1 when only bytes differ (the first such tensor
# is in $first); fails the test (returning 2) when names or types differ.
compare() {
    expected "$1" | LC_ALL=C sort >"$tmp/want" || return 2
    digests "$2" >"$tmp/got.raw" || { fail "$3: $2: cannot read its tensors"; return 2; }
    LC_ALL=C sort "$tmp/got.raw" >"$tmp/got" || return 2
    checks=$((checks + 1))
    if [ ! -s "$tmp/want" ]; then
        fail "$KAT has no section '$1'"
        return 2
    fi
    cut -d' ' -f1,2 "$tmp/want" >"$tmp/want.nt"
    cut -d' ' -f1,2 "$tmp/got" >"$tmp/got.nt"
    if ! cmp -s "$tmp/want.nt" "$tmp/got.nt"; then
        fail "$3: tensor names or types differ from the reference's: $(diff "$tmp/want.nt" "$tmp/got.nt" | grep '^[<>]' | head -n 4 | tr '\n' ' ')"
        return 2
    fi
    first=$(paste -d' ' "$tmp/want" "$tmp/got" | awk '$3 != $6 { print $1 " (" $2 ")"; exit }')
    [ -z "$first" ] || return 1
    return 0
}

synth_args=$(awk '$1 == "synth" { $1 = ""; print; exit }' "$KAT")
[ -n "$synth_args" ] || { echo "ERROR: $KAT: no 'synth' line" >&2; exit 99; }

# The anchor: the float weights.
# shellcheck disable=SC2086 # synth_args is a list of options
"$SYNTH" $synth_args --type f32 -o "$tmp/f32.gguf" 2>"$tmp/err" ||
    { echo "ERROR: gguf-synth $synth_args --type f32: $(cat "$tmp/err")" >&2; exit 99; }
compare f32 "$tmp/f32.gguf" "gguf-synth --type f32"
case $? in
    0) f32_ok=1 ;;
    1) f32_ok=0
       skipped="$skipped; gguf-synth's f32 weights differ from those the reference quantized (first: $first; a libm that rounds differently?)" ;;
    *) f32_ok=0 ;;
esac

# Each quantized model gguf-synth makes, against llama-quantize's bytes
# from the same float weights.
q4_k_m_ok=0
for label in $(awk '$1 !~ /^#/ && $1 != "synth" && $1 != "f32" && $1 != "requant" { print $1 }' "$KAT" | uniq); do
    # shellcheck disable=SC2086
    "$SYNTH" $synth_args --type "$label" -o "$tmp/$label.gguf" 2>"$tmp/err" ||
        { fail "gguf-synth $synth_args --type $label: $(cat "$tmp/err")"; continue; }
    compare "$label" "$tmp/$label.gguf" "gguf-synth --type $label"
    case $? in
        0) judged=$((judged + 1))
           [ "$label" != q4_k_m ] || q4_k_m_ok=1 ;;
        1) if [ "$f32_ok" = 1 ]; then
               judged=$((judged + 1))
               fail "gguf-synth --type $label: tensor $first: bytes differ from llama-quantize's quantization of the same f32 weights"
           fi ;;
    esac
done

# The requantization, when its input is the one the reference converted.
if [ "$q4_k_m_ok" = 1 ]; then
    "$REQUANT" -q --from q6_k --to q4_k -t 2 "$tmp/q4_k_m.gguf" "$tmp/requant.gguf" 2>"$tmp/err"
    st=$?
    checks=$((checks + 1))
    if [ "$st" -ne 0 ]; then
        fail "gguf-requant --from q6_k --to q4_k: exit $st: $(head -c 300 "$tmp/err")"
    else
        compare requant "$tmp/requant.gguf" "gguf-requant --from q6_k --to q4_k"
        case $? in
            0) judged=$((judged + 1)) ;;
            1) judged=$((judged + 1))
               fail "gguf-requant --from q6_k --to q4_k: tensor $first: bytes differ from llama-quantize's" ;;
        esac
    fi
else
    skipped="$skipped; the Q4_K_M input differs from the one the reference requantized, so the requantization was not judged"
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures of $checks checks failed" >&2
    exit 1
fi
# The requantization is what this test is for: unjudged, the test is skipped.
if [ "$q4_k_m_ok" != 1 ]; then
    echo "SKIP: not compared with the reference${skipped}" >&2
    exit 77
fi
[ -z "$skipped" ] || echo "note: some answers were not judged${skipped}" >&2
echo "$checks checks passed ($judged models compared with llama-quantize's bytes)"
exit 0
