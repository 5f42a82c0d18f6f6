#!/usr/bin/env python3
"""ctest pl_export_decode: `cldiff export` output decoded by an independent reader of the
protobuf wire format (written here from the format's rules: varint keys, wire types 0/1/2/5)
and of the combined-params layout, without Paddle-Lite. Checks, per model:
  - model.pdmodel parses to the end; ProgramDesc has one block (idx 0, parent -1) and a version;
  - every VarDesc has a name (unique) and a type; LOD_TENSOR vars have a TensorDesc;
  - every op has a type, and every argument names a declared variable;
  - feed ops read 'feed' (FEED_MINIBATCH), fetch ops write 'fetch' (FETCH_LIST), cols 0..n-1;
  - no variable is written by two ops (SSA, as the export promises);
  - model.pdiparams holds exactly the persistable LOD_TENSOR vars, in byte-wise name order,
    each record version 0 / lod 0 / tensor version 0, dims == the VarDesc's, data size ==
    numel * element size, and ends at end of file.
usage: decode_check.py CLDIFF WORK MODEL.nb...  (exit 77 when no model exists)"""
import os
import struct
import subprocess
import sys

SIZES = {0: 1, 1: 2, 2: 4, 3: 8, 4: 2, 5: 4, 6: 8, 20: 1, 21: 1}
LOD_TENSOR, FEED, FETCH = 7, 9, 10


def varint(b, i):
    v = s = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """[(field, wire_type, value)] of one message; value: int, or bytes for wire type 2."""
    out, i = [], 0
    while i < len(b):
        k, i = varint(b, i)
        f, wt = k >> 3, k & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        if i > len(b):
            raise ValueError("field %d runs past the message" % f)
        out.append((f, wt, v))
    return out


def get(fs, f):
    return [v for ff, _, v in fs if ff == f]


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def tensor_desc(b):
    fs = fields(b)
    return get(fs, 1)[0], [s64(d) for d in get(fs, 2)]


def check(cldiff, model, work):
    out = os.path.join(work, os.path.basename(model) + ".export")
    extra = ["--dequant"] if "int8" in os.path.basename(model) else []
    r = subprocess.run([cldiff, "export", model, "-o", out] + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode:
        return ["export failed (exit %d): %s" % (r.returncode, r.stdout.strip()[-400:])]
    errs = []
    prog = fields(open(os.path.join(out, "model.pdmodel"), "rb").read())
    blocks = get(prog, 1)
    if len(blocks) != 1 or len(get(prog, 4)) != 1:
        return ["%d blocks, %d versions" % (len(blocks), len(get(prog, 4)))]
    blk = fields(blocks[0])
    if get(blk, 1) != [0] or [s64(x) for x in get(blk, 2)] != [-1]:
        errs.append("block idx/parent_idx %s %s" % (get(blk, 1), get(blk, 2)))
    vars_ = {}
    for vb in get(blk, 3):
        vf = fields(vb)
        name = get(vf, 1)[0].decode()
        if name in vars_:
            errs.append("variable %s declared twice" % name)
        vt = fields(get(vf, 2)[0])
        kind = get(vt, 1)[0]
        dt = dims = None
        if kind == LOD_TENSOR:
            lt = fields(get(vt, 3)[0])
            dt, dims = tensor_desc(get(lt, 1)[0])
        vars_[name] = (kind, bool((get(vf, 3) or [0])[0]), dt, dims)
    written, cols = {}, {"feed": [], "fetch": []}
    for k, ob in enumerate(get(blk, 4)):
        of = fields(ob)
        typ = get(of, 3)[0].decode()
        for slot_field in (1, 2):
            for vb in get(of, slot_field):
                vf = fields(vb)
                for a in get(vf, 2):
                    a = a.decode()
                    if a and a not in vars_:
                        errs.append("op #%d %s: argument %s not declared" % (k, typ, a))
                    if slot_field == 2 and a and typ != "fetch":
                        if a in written:
                            errs.append("%s written by op #%d and op #%d" % (a, written[a], k))
                        written[a] = k
        if typ in ("feed", "fetch"):
            attrs = {get(fields(x), 1)[0].decode(): fields(x) for x in get(of, 4)}
            cols[typ].append(get(attrs["col"], 3)[0] if "col" in attrs and get(attrs["col"], 3) else 0)
            want = ("X", "feed", FEED) if typ == "feed" else ("Out", "fetch", FETCH)
            slots = {get(fields(v), 1)[0].decode(): [a.decode() for a in get(fields(v), 2)]
                     for v in get(of, 1 if typ == "feed" else 2)}
            if slots.get(want[0]) != [want[1]] or vars_.get(want[1], (None,))[0] != want[2]:
                errs.append("op #%d %s: %s=%s" % (k, typ, want[0], slots.get(want[0])))
    for t in ("feed", "fetch"):
        if sorted(cols[t]) != list(range(len(cols[t]))):
            errs.append("%s cols %s" % (t, cols[t]))
    params = sorted((n for n, v in vars_.items() if v[0] == LOD_TENSOR and v[1]), key=lambda s: s.encode())
    buf = open(os.path.join(out, "model.pdiparams"), "rb").read()
    i = 0
    for n in params:
        if i + 20 > len(buf):
            errs.append("params end before %s" % n)
            break
        v0, lod, tv, dl = struct.unpack_from("<IQIi", buf, i)
        i += 20
        if (v0, lod, tv) != (0, 0, 0):
            errs.append("%s: record header %s" % (n, (v0, lod, tv)))
        dt, dims = tensor_desc(buf[i:i + dl])
        i += dl
        numel = 1
        for d in dims:
            numel *= d
        if dims != vars_[n][3] or dt != vars_[n][2]:
            errs.append("%s: record %s %s vs VarDesc %s %s" % (n, dt, dims, vars_[n][2], vars_[n][3]))
        i += numel * SIZES.get(dt, 1)
    if i != len(buf):
        errs.append("params: %d bytes read of %d" % (i, len(buf)))
    print("%s %s: %d vars, %d ops, %d params" % ("ok  " if not errs else "FAIL", os.path.basename(model), len(vars_),
                                               len(get(blk, 4)), len(params)))
    return errs


def main():
    cldiff, work = sys.argv[1], sys.argv[2]
    models = [m for m in sys.argv[3:] if os.path.exists(m)]
    if not models:
        print("SKIP: no model found among %s" % sys.argv[3:])
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    failed = 0
    for m in models:
        errs = check(cldiff, m, work)
        for e in errs[:10]:
            print("   ", e)
        failed += bool(errs)
    print("%d passed, %d failed" % (len(models) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
