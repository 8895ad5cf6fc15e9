#!/usr/bin/env python3
"""gguflite.py -- a small GGUF reader and writer in plain Python (standard
library only), independent of libgguf, for the tests of gguf-synth and
gguf-dump.

  gguflite.py stats FILE DUMP_JSON
      Computes min, max, mean and RMS of every F32, F16 and BF16 tensor of
      FILE (finite values only; NaN and infinities counted) and compares
      them with the "stats" of DUMP_JSON (gguf-dump --stats --json FILE):
      min and max exactly, mean and RMS to a relative 1e-12.  Exit 0 when
      all agree, 1 otherwise.

  gguflite.py values FILE TENSOR N VALUES_TEXT
      The first N values of F32 tensor TENSOR, read from the file's bytes,
      equal the values of VALUES_TEXT (gguf-dump --values, one a line) as
      floats, bit for bit.  Exit 0 or 1.

  gguflite.py f16-chunks F32FILE F16FILE TENSOR
      Checks that gguf-synth's F16 weights are its F32 weights rounded to
      half (see write_tensor in tests/gguf-synth.c), over the tensor's first
      524288 values: two F32 chunks of the generator, four F16 chunks of the
      writer.  The files may be cut short after those values.  Exit 0 or 1.

  gguflite.py fixture FILE [big]
      Writes a small GGUF v3 file (big-endian with "big") with tensors whose
      statistics are known: see FIXTURE below.
"""
import json
import math
import struct
import sys

F32, F16, Q8_0, IQ2_XXS, I32, BF16 = 0, 1, 8, 16, 26, 30
# bytes per block, elements per block
TYPES = {F32: (4, 1), F16: (2, 1), Q8_0: (34, 32), IQ2_XXS: (66, 256), I32: (4, 1),
         BF16: (2, 1)}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
          12: "d"}


class Reader:
    """Reads the header of a GGUF file (versions 2 and 3, either byte
    order): tensor names, types, dims and absolute data offsets."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        if self.data[:4] != b"GGUF":
            raise ValueError(path + ": not a GGUF file")
        version = struct.unpack_from("<I", self.data, 4)[0]
        self.e = "<" if version < 0x10000 else ">"
        self.pos = 8
        n_tensors = self.u("Q")
        n_kv = self.u("Q")
        self.alignment = 32
        for _ in range(n_kv):
            key = self.string()
            vtype = self.u("I")
            value = self.value(vtype)
            if key == b"general.alignment":
                self.alignment = value
        infos = []
        for _ in range(n_tensors):
            name = self.string().decode("utf-8", "replace")
            n_dims = self.u("I")
            dims = [self.u("Q") for _ in range(n_dims)]
            ttype = self.u("I")
            offset = self.u("Q")
            infos.append((name, ttype, dims, offset))
        a = self.alignment
        data_offset = (self.pos + a - 1) // a * a
        self.tensors = {}
        self.order = []
        for name, ttype, dims, offset in infos:
            self.tensors[name] = (ttype, dims, data_offset + offset)
            self.order.append(name)

    def u(self, fmt):
        v = struct.unpack_from(self.e + fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.u("Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype = self.u("I")
            count = self.u("Q")
            if etype in SCALAR:
                self.pos += count * struct.calcsize(SCALAR[etype])
                return None
            for _ in range(count):
                self.value(etype)
            return None
        return self.u(SCALAR[vtype])

    def floats(self, name, n=None):
        """The first n (default all) values of an F32, F16 or BF16 tensor,
        as Python floats (exact)."""
        ttype, dims, off = self.tensors[name]
        count = math.prod(dims)
        if n is None or n > count:
            n = count
        if ttype == F32:
            return list(struct.unpack_from("%s%df" % (self.e, n), self.data, off))
        if ttype == F16:
            return list(struct.unpack_from("%s%de" % (self.e, n), self.data, off))
        if ttype == BF16:
            hs = struct.unpack_from("%s%dH" % (self.e, n), self.data, off)
            return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in hs]
        raise ValueError("tensor %s: type %d is not F32, F16 or BF16" % (name, ttype))


def to_f32(x):
    """x (a float read from text) rounded to float32, as strtof reads it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same(a, b):
    """Equal, or both NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def compute_stats(values):
    fin = [v for v in values if math.isfinite(v)]
    s = {"nan": sum(1 for v in values if math.isnan(v)),
         "inf": sum(1 for v in values if math.isinf(v))}
    if fin:
        s["min"] = min(fin)
        s["max"] = max(fin)
        s["mean"] = math.fsum(fin) / len(fin)
        s["rms"] = math.sqrt(math.fsum(v * v for v in fin) / len(fin))
    else:
        s["min"] = s["max"] = s["mean"] = s["rms"] = None
    return s


def cmd_stats(path, dump_json):
    r = Reader(path)
    got = {t["name"]: t for t in json.load(open(dump_json))["stats"]}
    bad = 0
    checked = 0
    for name in r.order:
        ttype = r.tensors[name][0]
        if ttype not in (F32, F16, BF16):
            continue
        if name not in got:
            print("%s: tensor %s missing from gguf-dump's stats" % (path, name))
            bad += 1
            continue
        want = compute_stats(r.floats(name))
        g = got[name]
        checked += 1
        for k in ("nan", "inf"):
            if g[k] != want[k]:
                print("%s: %s: %s is %r, expected %r" % (path, name, k, g[k], want[k]))
                bad += 1
        for k in ("min", "max", "mean", "rms"):
            w, v = want[k], g[k]
            if w is None or v is None:
                ok = w is None and v is None
            elif k in ("min", "max"):
                ok = to_f32(float(v)) == w
            else:
                ok = abs(float(v) - w) <= 1e-12 * max(abs(w), 1e-30)
            if not ok:
                print("%s: %s: %s is %r, expected %r" % (path, name, k, v, w))
                bad += 1
    if checked == 0:
        print("%s: no F32, F16 or BF16 tensor to check" % path)
        bad += 1
    return 1 if bad else 0


def cmd_values(path, name, n, text):
    want = Reader(path).floats(name, int(n))
    got = [to_f32(float(line)) for line in open(text) if line.strip()]
    if len(got) != len(want):
        print("%s: %d values, expected %d" % (text, len(got), len(want)))
        return 1
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            print("%s: value %d is %r, the file has %r" % (text, i, g, w))
            return 1
    return 0


def cmd_f16_chunks(f32_path, f16_path, name):
    per = 262144
    a = Reader(f32_path).floats(name, 2 * per)
    h = Reader(f16_path).floats(name, 2 * per)
    if len(a) < 2 * per or len(h) < 2 * per:
        print("%s: tensor %s has fewer than %d values" % (f32_path, name, 2 * per))
        return 1

    def half(x):
        return struct.unpack("<e", struct.pack("<e", x))[0]

    for j in range(2 * per):
        if half(a[j]) != h[j]:
            print("value %d: F16 %r is not F32 %r rounded" % (j, h[j], a[j]))
            return 1
    return 0


# The fixture: name, type, dims, values (floats for F32/F16/BF16, raw bytes
# otherwise).  "mixed" has 5 finite values (min -2.5, max 3.25, mean 0.35,
# RMS sqrt(3.5625)), 1 NaN and 2 infinities; "q8" holds -8, -7.5 ... 7.5.
NAN, INF = float("nan"), float("inf")
FIXTURE = [
    ("mixed", F32, [8], [1.0, -2.5, NAN, INF, -INF, 3.25, 0.0, -0.0]),
    ("all_nan", F32, [2, 2], [NAN, NAN, NAN, NAN]),
    ("half", F16, [8], [65504.0, -INF, NAN, 2.0 ** -24, -0.5, 1.5, 0.0, -65504.0]),
    ("brain", BF16, [4, 2], [1.0, -3.0, INF, 2.0 ** 100, -(2.0 ** -100), 0.25, NAN, 7.0]),
    ("q8", Q8_0, [32], struct.pack("<H", 0x3800) + bytes((i - 16) & 0xff for i in range(32))),
    ("ints", I32, [4], struct.pack("<4i", 1, -2, 3, -4)),
    ("iq", IQ2_XXS, [256], bytes(66)),
]


def cmd_fixture(path, big=False):
    e = ">" if big else "<"
    align = 32
    out = bytearray()
    out += b"GGUF" + struct.pack(e + "IQQ", 3, len(FIXTURE), 1)
    key = b"general.architecture"
    out += struct.pack(e + "Q", len(key)) + key + struct.pack(e + "IQ", 8, 4) + b"test"
    blobs = []
    offset = 0
    for name, ttype, dims, vals in FIXTURE:
        if ttype == F32:
            blob = struct.pack("%s%df" % (e, len(vals)), *vals)
        elif ttype == F16:
            blob = struct.pack("%s%de" % (e, len(vals)), *vals)
        elif ttype == BF16:
            hs = [struct.unpack("<I", struct.pack("<f", v))[0] >> 16 for v in vals]
            blob = struct.pack("%s%dH" % (e, len(hs)), *hs)
        else:
            blob = vals
        nb = name.encode()
        out += struct.pack(e + "Q", len(nb)) + nb + struct.pack(e + "I", len(dims))
        out += struct.pack(e + "%dQ" % len(dims), *dims) + struct.pack(e + "IQ", ttype, offset)
        blobs.append(blob)
        offset += (len(blob) + align - 1) // align * align
    out += bytes(-len(out) % align)
    for blob in blobs:
        out += blob + bytes(-len(blob) % align)
    with open(path, "wb") as f:
        f.write(out)
    return 0


def main(argv):
    cmds = {"stats": (cmd_stats, 2), "values": (cmd_values, 4),
            "f16-chunks": (cmd_f16_chunks, 3), "fixture": (cmd_fixture, 1)}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__)
        return 99
    fn, n = cmds[argv[1]]
    args = argv[2:]
    if argv[1] == "fixture" and len(args) == 2 and args[1] == "big":
        return cmd_fixture(args[0], True)
    if len(args) != n:
        print(__doc__)
        return 99
    return fn(*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
