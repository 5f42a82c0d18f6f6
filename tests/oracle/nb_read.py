"""A small, independent reader of Paddle-Lite .nb models (meta_version 2) for the int8 oracle:
the ops of block 0 (type, input/output slots, attributes, kernel record) and the parameters
as numpy arrays. Written from the file format (docs/nb-format.md §1.3, §3), not from
cldiff's C reader, so the oracle does not share its bugs. No validation beyond what Python's
slicing gives: use it on trusted test models only."""
import struct

import numpy as np

# VarType_.Type element types -> numpy
_DT = {0: np.bool_, 1: np.int16, 2: np.int32, 3: np.int64, 4: np.float16, 5: np.float32, 6: np.float64,
       20: np.uint8, 21: np.int8}


class NotMeta2(ValueError):
    pass


class _FB:
    """Generic FlatBuffers table access over one buffer."""

    def __init__(self, buf):
        self.b = buf

    def u32(self, p):
        return struct.unpack_from("<I", self.b, p)[0]

    def root(self):
        return self.u32(0)

    def field(self, t, slot):
        vt = t - struct.unpack_from("<i", self.b, t)[0]
        vsize = struct.unpack_from("<H", self.b, vt)[0]
        e = 4 + 2 * slot
        if e + 2 > vsize:
            return None
        o = struct.unpack_from("<H", self.b, vt + e)[0]
        return t + o if o else None

    def scalar(self, t, slot, fmt, dflt):
        p = self.field(t, slot)
        return struct.unpack_from("<" + fmt, self.b, p)[0] if p is not None else dflt

    def ref(self, t, slot):
        p = self.field(t, slot)
        return p + self.u32(p) if p is not None else None

    def string(self, t, slot):
        p = self.ref(t, slot)
        if p is None:
            return None
        n = self.u32(p)
        return self.b[p + 4:p + 4 + n].decode("utf-8")

    def vector(self, t, slot):
        p = self.ref(t, slot)
        if p is None:
            return 0, 0
        return self.u32(p), p + 4

    def tables(self, t, slot):
        n, p = self.vector(t, slot)
        return [p + 4 * i + self.u32(p + 4 * i) for i in range(n)]

    def strings(self, t, slot):
        out = []
        for q in self.tables(t, slot):
            n = self.u32(q)
            out.append(self.b[q + 4:q + 4 + n].decode("utf-8"))
        return out

    def scalars(self, t, slot, fmt):
        n, p = self.vector(t, slot)
        size = struct.calcsize("<" + fmt)
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.b, p)) if n else []


def _attr(fb, a):
    kind = fb.scalar(a, 1, "i", 0)
    getters = {
        0: lambda: fb.scalar(a, 2, "i", 0), 1: lambda: fb.scalar(a, 3, "f", 0.0), 2: lambda: fb.string(a, 4) or "",
        3: lambda: fb.scalars(a, 5, "i"), 4: lambda: fb.scalars(a, 6, "f"), 5: lambda: fb.strings(a, 7),
        6: lambda: bool(fb.scalar(a, 8, "B", 0)), 7: lambda: [bool(x) for x in fb.scalars(a, 9, "B")],
        8: lambda: fb.scalar(a, 10, "i", 0), 9: lambda: fb.scalar(a, 11, "q", 0), 10: lambda: fb.scalars(a, 12, "i"),
        11: lambda: fb.scalars(a, 13, "q"), 12: lambda: fb.scalars(a, 15, "d"), 15: lambda: fb.scalar(a, 14, "d", 0.0),
    }
    return getters[kind]() if kind in getters else None


class Op:
    def __init__(self, index, type_, inputs, outputs, attrs):
        self.index, self.type, self.inputs, self.outputs, self.attrs = index, type_, inputs, outputs, attrs
        rec = attrs.get("__@kernel_type_attr@__", "")
        parts = rec.split("/") if rec else []
        self.alias = parts[1] if len(parts) == 5 else ""
        self.precision = int(parts[3]) if len(parts) == 5 else -1

    def inp(self, slot, k=0):
        a = self.inputs.get(slot, [])
        return a[k] if len(a) > k and a[k] else None

    def out(self, slot, k=0):
        a = self.outputs.get(slot, [])
        return a[k] if len(a) > k and a[k] else None


def load(path):
    """(ops, params): ops of block 0 in order; params = {name: numpy array (record dtype and dims)}."""
    data = open(path, "rb").read()
    meta = struct.unpack_from("<H", data, 0)[0]
    if meta != 2:
        raise NotMeta2("%s: meta_version %d, this reader knows 2 only" % (path, meta))
    topo = struct.unpack_from("<Q", data, 18)[0]
    fb = _FB(data[26:26 + topo])
    block0 = fb.tables(fb.root(), 0)[0]
    ops = []
    for i, o in enumerate(fb.tables(block0, 3)):
        slots = []
        for s in (1, 2):
            d = {}
            for v in fb.tables(o, s):
                d[fb.string(v, 0)] = fb.strings(v, 1)
            slots.append(d)
        attrs = {fb.string(a, 0): _attr(fb, a) for a in fb.tables(o, 3)}
        ops.append(Op(i, fb.string(o, 0), slots[0], slots[1], attrs))
    p = 26 + topo
    _, reserved = struct.unpack_from("<HH", data, p)
    p += 4 + reserved
    hl = struct.unpack_from("<H", data, p)[0]
    count = struct.unpack_from("<H", data, p + 2)[0]
    p += 2 + hl
    params = {}
    for _ in range(count):
        rlen, start = struct.unpack_from("<II", data, p)
        rec = _FB(data[p + 4 + start:p + 4 + rlen])
        r = rec.root()
        name = rec.string(r, 1)
        t = rec.ref(r, 3)
        dims = rec.scalars(t, 2, "q")
        dt = _DT[rec.scalar(t, 3, "i", 0)]
        n, q = rec.vector(t, 4)
        params[name] = np.frombuffer(rec.b[q:q + n], dtype=dt).reshape(dims if dims else ()).copy()
        p += 4 + rlen
    return ops, params
