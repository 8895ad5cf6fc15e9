#!/bin/sh
# test-write-gguf-py.sh -- files from our writer, read by llama.cpp's own
# Python reader (gguf.GGUFReader from PyPI's `gguf`), must show exactly what
# our reader shows: every KV (type, value; arrays by element digest), every
# tensor (type, dims, absolute offset, size, data digest).  Checked on
# gguf-synth output in f32/f16/bf16, versions 2 and 3, both byte orders.
# Also checks the generator's content through the independent reader: the
# vocabulary is a valid BPE vocabulary (unique tokens, every merge "L R"
# joins two tokens into a third), specials and ids are where Qwen2.5 has
# them, and F16/BF16 weights are the F32 weights rounded to nearest even.
# The qwen2 and qwen3 models' tensor names and hyperparameter keys are
# those the gguf package (llama.cpp's own tables) lists for the
# architecture, and each layer has every tensor it lists but rope_freqs.
# Skips (77) when python3 or the gguf package is missing.

: "${top_builddir:=.}"
SYNTH=$top_builddir/tests/gguf-synth
LIST=$top_builddir/tests/test-write

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found" >&2; exit 77; }
python3 -c 'import gguf, numpy' 2>/dev/null || {
    echo "SKIP: the Python package gguf (llama.cpp's reader) is not installed" >&2
    exit 77
}
[ -x "$SYNTH" ] && [ -x "$LIST" ] || { echo "ERROR: $SYNTH or $LIST not built" >&2; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-write-py.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

failures=0
checks=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

cat >"$tmp/view.py" <<'EOF'
# Prints gguf.GGUFReader's view of a file in the format of test-write --list.
import sys
import numpy as np
from gguf import GGUFReader, GGUFValueType as VT

FNV0 = 0xcbf29ce484222325


def fnv(h, data):
    for c in data:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def le_bytes(part):
    a = np.asarray(part)
    return a.astype(a.dtype.newbyteorder('<')).tobytes()


r = GGUFReader(sys.argv[1])
raw = open(sys.argv[1], 'rb').read()
out = []
kvs = [f for k, f in r.fields.items() if not k.startswith('GGUF.')]
out.append('version %d' % int(r.fields['GGUF.version'].parts[-1][0]))
out.append('kv_count %d' % len(kvs))
out.append('tensor_count %d' % len(r.tensors))
for f in kvs:
    t = f.types[0]
    line = 'kv %s %s' % (f.name, t.name)
    if t == VT.STRING:
        line += ' ' + bytes(f.parts[f.data[0]]).hex()
    elif t == VT.ARRAY:
        et = f.types[1] if len(f.types) > 1 else VT.UINT8
        if len(f.types) > 2:
            raise SystemExit('nested arrays are not compared here')
        h = FNV0
        for i in f.data:
            p = f.parts[i]
            if et == VT.STRING:
                b = bytes(p)
                h = fnv(fnv(h, len(b).to_bytes(8, 'little')), b)
            else:
                h = fnv(h, le_bytes(p))
        line += ' %s %d %016x' % (et.name, len(f.data), h)
    else:
        p = np.asarray(f.parts[f.data[0]])
        if t == VT.FLOAT32:
            line += ' %08x' % int(p.astype('<f4').view('<u4')[0])
        elif t == VT.FLOAT64:
            line += ' %016x' % int(p.astype('<f8').view('<u8')[0])
        else:
            line += ' %d' % int(p[0])
    out.append(line)
for t in r.tensors:
    dims = ','.join(str(int(d)) for d in t.shape)
    off, n = int(t.data_offset), int(t.n_bytes)
    h = fnv(FNV0, raw[off:off + n])
    out.append('tensor %s %s %s %d %d %016x' % (t.name, t.tensor_type.name, dims, off, n, h))
print('\n'.join(out))
EOF

cat >"$tmp/content.py" <<'EOF'
# Checks a tiny gguf-synth model's content with GGUFReader.
# argv: f32 file, f16 file, bf16 file, big-endian f16 file (same seed).
import sys
import numpy as np
from gguf import GGUFReader

f32, f16, bf16, be16 = (GGUFReader(p) for p in sys.argv[1:5])
bad = []


def strs(r, key):
    f = r.fields[key]
    return [bytes(f.parts[i]).decode('utf-8') for i in f.data]


def scalar(r, key):
    f = r.fields[key]
    return f.parts[f.data[0]][0]


toks = strs(f16, 'tokenizer.ggml.tokens')
merges = strs(f16, 'tokenizer.ggml.merges')
tf = f16.fields['tokenizer.ggml.token_type']
types = [int(tf.parts[i][0]) for i in tf.data]
vocab = set(toks)
if len(toks) != 1024 or len(vocab) != 1024:
    bad.append('tokens: %d, %d unique' % (len(toks), len(vocab)))
if len(merges) != 1024 - 256 - 3:
    bad.append('merges: %d' % len(merges))
for i, m in enumerate(merges):
    left, right = m.split(' ')
    if left not in vocab or right not in vocab or toks[256 + i] != left + right:
        bad.append('merge %d %r does not make token %d' % (i, m, 256 + i))
        break
    if len((left + right).encode()) > 16:
        bad.append('merge %d makes a token over 16 bytes' % i)
        break
# GPT-2 byte tokens: '!' first, 'Ġ' (space) at 220, 'Ċ' (newline) at 198.
if toks[0] != '!' or toks[220] != '\u0120' or toks[198] != '\u010a' or toks[187] != '\u00ff':
    bad.append('byte tokens out of place: %r %r %r %r' % (toks[0], toks[198], toks[220], toks[187]))
if toks[1021:] != ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] or types[1021:] != [3, 3, 3]:
    bad.append('specials: %r %r' % (toks[1021:], types[1021:]))
if set(types[:1021]) != {1}:
    bad.append('regular token types: %r' % set(types[:1021]))
for key, want in [('tokenizer.ggml.bos_token_id', 1021), ('tokenizer.ggml.eos_token_id', 1023),
                  ('tokenizer.ggml.padding_token_id', 1021), ('qwen2.block_count', 2),
                  ('qwen2.embedding_length', 64), ('qwen2.attention.head_count', 4),
                  ('qwen2.attention.head_count_kv', 2), ('qwen2.feed_forward_length', 128),
                  ('general.file_type', 1)]:
    if int(scalar(f16, key)) != want:
        bad.append('%s = %s, expected %s' % (key, scalar(f16, key), want))
if 'output.weight' in [t.name for t in f16.tensors]:
    bad.append('output.weight present (embeddings are tied)')

# Same seed: F16/BF16 weights are the F32 ones rounded to nearest even,
# 1-D tensors identical, the big-endian file the same values.
for a, b, c, d in zip(f32.tensors, f16.tensors, bf16.tensors, be16.tensors):
    x = np.asarray(a.data, dtype=np.float32).ravel()
    if len(a.shape) == 1:
        for o in (b, c):
            if o.tensor_type.name != 'F32' or not np.array_equal(np.asarray(o.data).ravel().view(np.uint32), x.view(np.uint32)):
                bad.append('%s: 1-D tensor differs between types' % a.name)
        continue
    h = np.asarray(b.data).ravel().view(np.uint16)
    if b.tensor_type.name != 'F16' or not np.array_equal(x.astype(np.float16).view(np.uint16), h):
        bad.append('%s: F16 is not F32 rounded to nearest even' % a.name)
    u = x.view(np.uint32).astype(np.uint64)
    want = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    if c.tensor_type.name != 'BF16' or not np.array_equal(np.asarray(c.data).ravel().view(np.uint16), want):
        bad.append('%s: BF16 is not F32 rounded to nearest even' % a.name)
    be = np.asarray(d.data).ravel()
    if not np.array_equal(be.astype('<f2').view('<u2'), h):
        bad.append('%s: big-endian values differ' % a.name)
    sd = float(x.std())
    if not 0.017 < sd < 0.023 or abs(float(x.mean())) > 0.005:
        bad.append('%s: weights not ~N(0, 0.02): mean %g std %g' % (a.name, x.mean(), sd))
for msg in bad:
    print('FAIL:', msg, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# The tensor count compare() expects: the tiny qwen2's.
want_tensors=26

# name SYNTH-OPTIONS...: writes $tmp/name.gguf and compares both views.
compare() {
    name=$1
    shift
    checks=$((checks + 1))
    if ! "$SYNTH" "$@" -o "$tmp/$name.gguf" 2>"$tmp/$name.err"; then
        fail "$name: gguf-synth $*: $(cat "$tmp/$name.err")"
        return
    fi
    if ! "$LIST" --list "$tmp/$name.gguf" >"$tmp/$name.ours" 2>"$tmp/$name.err"; then
        fail "$name: our reader: $(cat "$tmp/$name.err")"
        return
    fi
    if ! python3 "$tmp/view.py" "$tmp/$name.gguf" >"$tmp/$name.py" 2>"$tmp/$name.err"; then
        fail "$name: GGUFReader rejects the file: $(tail -n 3 "$tmp/$name.err")"
        return
    fi
    if ! cmp -s "$tmp/$name.ours" "$tmp/$name.py"; then
        fail "$name: GGUFReader and our reader disagree:"
        diff "$tmp/$name.ours" "$tmp/$name.py" | cut -c1-200 | head -n 20 >&2
    fi
    # The views are not vacuous: every KV and tensor is there.
    checks=$((checks + 1))
    n_kv=$(grep -c '^kv ' "$tmp/$name.py")
    n_t=$(grep -c '^tensor ' "$tmp/$name.py")
    [ "$n_kv" -ge 22 ] && [ "$n_t" -eq "$want_tensors" ] || fail "$name: $n_kv KVs and $n_t tensors seen"
}

compare f16 --seed 3
compare f32 --seed 3 --type f32
compare bf16 --seed 3 --type bf16
compare be16 --seed 3 --big-endian
compare v2 --seed 3 --gguf-version 2 --type bf16
compare be32 --seed 9 --type f32 --gguf-version 2 --big-endian

checks=$((checks + 1))
python3 "$tmp/content.py" "$tmp/f32.gguf" "$tmp/f16.gguf" "$tmp/bf16.gguf" "$tmp/be16.gguf" ||
    fail "gguf-synth content, as GGUFReader sees it"

# qwen3 (tiny: 2 + 2 x 11 tensors; untied: one more).
want_tensors=24
compare q3 --arch qwen3 --seed 3
compare q3be --arch qwen3 --seed 3 --type f32 --big-endian
want_tensors=25
compare q3u --arch qwen3 --seed 3 --type q8_0 --untied

cat >"$tmp/names.py" <<'EOF'
# argv: ARCH FILE.  The file's tensor names and hyperparameter keys are the
# gguf package's for ARCH.
import sys
from gguf import GGUFReader
from gguf.constants import MODEL_ARCH_NAMES, MODEL_TENSOR, MODEL_TENSORS, TENSOR_NAMES, Keys

arch_name, path = sys.argv[1:3]
arch = next(a for a, n in MODEL_ARCH_NAMES.items() if n == arch_name)
r = GGUFReader(path)
bad = []
f = r.fields['general.architecture']
if bytes(f.parts[f.data[0]]).decode() != arch_name:
    bad.append('general.architecture is not ' + arch_name)
if Keys.LLM.BLOCK_COUNT.format(arch=arch_name) not in r.fields:
    sys.exit('FAIL: %s: no %s' % (path, Keys.LLM.BLOCK_COUNT.format(arch=arch_name)))
n_layer = int(r.fields[Keys.LLM.BLOCK_COUNT.format(arch=arch_name)].parts[-1][0])
allowed = set()
per_layer = []
for t in MODEL_TENSORS[arch]:
    name = TENSOR_NAMES[t]
    if '{bid}' in name:
        per_layer.append(name)
        for b in range(n_layer):
            allowed.add(name.format(bid=b) + '.weight')
            allowed.add(name.format(bid=b) + '.bias')
    elif t != MODEL_TENSOR.ROPE_FREQS:
        allowed.add(name + '.weight')
names = [t.name for t in r.tensors]
for n in names:
    if n not in allowed:
        bad.append('tensor %s is not a %s tensor' % (n, arch_name))
for b in range(n_layer):
    for name in per_layer:
        if name.format(bid=b) + '.weight' not in names:
            bad.append('no %s.weight' % name.format(bid=b))
keys = [Keys.LLM.CONTEXT_LENGTH, Keys.LLM.EMBEDDING_LENGTH, Keys.LLM.FEED_FORWARD_LENGTH,
        Keys.Attention.HEAD_COUNT, Keys.Attention.HEAD_COUNT_KV, Keys.Rope.FREQ_BASE,
        Keys.Attention.LAYERNORM_RMS_EPS]
if arch_name == 'qwen3':
    keys += [Keys.Attention.KEY_LENGTH, Keys.Attention.VALUE_LENGTH]
for key in keys:
    if key.format(arch=arch_name) not in r.fields:
        bad.append('no key ' + key.format(arch=arch_name))
for msg in bad:
    print('FAIL:', path, msg, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
for am in qwen2:f16 qwen3:q3 qwen3:q3u; do
    checks=$((checks + 1))
    python3 "$tmp/names.py" "${am%%:*}" "$tmp/${am#*:}.gguf" || fail "${am#*:}: names against the gguf package's ${am%%:*}"
done

echo "$checks checks, $failures failed" >&2
[ "$failures" -eq 0 ]
