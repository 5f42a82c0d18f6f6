#!/usr/bin/env python3
"""Input sources of `cldiff run` (docs/dump-format.md, "Inputs"), checked through /inputs/<name>
of the dump, which holds the input exactly as fed:
  .npy (float32, float64, int8), raw .bin, PNG (written here with zlib + struct: RGB, gray,
  bgr order, --mean/--std, bilinear resize, --no-resize), const:V, FILE.h5 (replay a dump),
  and random inputs: the documented PCG32 recipe, and --seed determinism (two runs store
  bit-identical dataset bytes, another seed differs).
"""
import os
import struct
import zlib

import h5py
import numpy as np

from e2e_lib import Checks, astr, cldiff, need_cldiff, tmpdir, MULTI, TINY

SHAPE = (1, 3, 64, 64)


def write_png(path, img):
    """img: uint8 array HxW (gray) or HxWx3 (RGB)."""
    h, w = img.shape[:2]
    ctype = 0 if img.ndim == 2 else 2
    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def fed(out, name="x"):
    with h5py.File(os.path.join(out, "dump.h5"), "r") as f:
        ds = f["inputs"][name]
        return ds[()], astr(ds.attrs["source"])


def cldiff_random(n, seed, k):
    """The documented random input recipe (docs/dump-format.md), vectorised."""
    M = (1 << 64) - 1
    st, inc = 0, ((k << 1) | 1) & M
    vals = []

    def nxt():
        nonlocal st
        old = st
        st = (old * 6364136223846793005 + inc) & M
        xs = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xs >> rot) | (xs << ((32 - rot) & 31))) & 0xFFFFFFFF
    nxt()
    st = (st + seed) & M
    nxt()
    for _ in range(n):
        vals.append(nxt() >> 8)
    return (np.array(vals, np.float64) / 2 ** 24 * 2 - 1).astype(np.float32)


def bilinear(img, H, W):
    """Half-pixel-centre bilinear resize of HxWxC float32, edges clamped (no antialiasing)."""
    h, w = img.shape[:2]

    def coords(n_out, n_in):
        s = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        s = np.clip(s, 0, n_in - 1)
        i0 = np.floor(s).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, (s - i0)
    y0, y1, fy = coords(H, h)
    x0, x1, fx = coords(W, w)
    img = img.astype(np.float64)
    top = img[y0][:, x0] * (1 - fx)[None, :, None] + img[y0][:, x1] * fx[None, :, None]
    bot = img[y1][:, x0] * (1 - fx)[None, :, None] + img[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bot * fy[:, None, None]


def main():
    need_cldiff()
    c = Checks("e2e inputs")
    work = tmpdir("inputs")
    c.cleanup_later(work)
    rng = np.random.default_rng(3)
    n = [0]

    def run(*args, model=TINY, want=0, what=""):
        n[0] += 1
        out = os.path.join(work, "r%d" % n[0])
        r = cldiff("run", "--backends", "cpu", model, "--layers", "outputs", "--out", out, "--quiet", *args)
        return out if c.rc(r, want, what or " ".join(args)) else None

    # .npy float32 / float64 / int8 and raw .bin
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    p = os.path.join(work, "x.npy")
    np.save(p, x)
    o = run("--input", "x=" + p, what="--input x=x.npy (float32)")
    if o:
        v, src = fed(o)
        c.ok(v.dtype == np.float32 and v.tobytes() == x.tobytes(), ".npy float32 fed bit-exactly")
        c.ok("x.npy" in src, ".npy: source attribute names the file", src)
    p64 = os.path.join(work, "x64.npy")
    np.save(p64, x.astype(np.float64) + 1e-12)
    o = run("--input", p64, what="--input x64.npy (float64, no name)")
    if o:
        c.ok(fed(o)[0].tobytes() == (x.astype(np.float64) + 1e-12).astype(np.float32).tobytes(),
             ".npy float64 rounded to float32")
    pi8 = os.path.join(work, "i8.npy")
    xi = rng.integers(-128, 127, SHAPE).astype(np.int8)
    np.save(pi8, xi)
    o = run("--input", "x=" + pi8, what="--input int8 .npy")
    if o:
        c.ok(np.array_equal(fed(o)[0], xi.astype(np.float32)), ".npy int8 converted to float32 exactly")
    pf = os.path.join(work, "x_fortran.npy")
    np.save(pf, np.asfortranarray(x))
    r = cldiff("run", "--backends", "cpu", TINY, "--input", "x=" + pf, "--out", os.path.join(work, "f"), "--quiet")
    if r.rc == 0:
        c.ok(fed(os.path.join(work, "f"))[0].tobytes() == x.tobytes(), "Fortran-order .npy read in its true order")
    else:
        c.ok(r.rc == 3 and "order" in r.err.lower(), "Fortran-order .npy: read correctly or refused (exit 3)",
             "rc=%d %s" % (r.rc, r.err[-300:]))
    pb = os.path.join(work, "x.bin")
    x.tofile(pb)
    o = run("--input", "x=" + pb, what="--input x=x.bin")
    if o:
        c.ok(fed(o)[0].tobytes() == x.tobytes(), ".bin fed bit-exactly")

    # const
    o = run("--input", "x=const:0.5", what="--input x=const:0.5")
    if o:
        v = fed(o)[0]
        c.ok(v.shape == SHAPE and bool(np.all(v == np.float32(0.5))), "const:0.5 fills the input with 0.5")
    o = run("--input", "const:-1e-3", what="--input const:-1e-3")
    if o:
        c.ok(bool(np.all(fed(o)[0] == np.float32(-1e-3))), "const:-1e-3 parsed as float")

    # PNG: RGB same size, bgr, mean/std, gray-to-3-channel refused or expanded, resize
    img = rng.integers(0, 256, (64, 64, 3)).astype(np.uint8)
    png = os.path.join(work, "img.png")
    write_png(png, img)
    ref = (img.astype(np.float32) / np.float32(255)).transpose(2, 0, 1)[None]
    o = run("--input", "x=" + png, what="--input x=img.png")
    if o:
        v, src = fed(o)
        c.ok(v.tobytes() == ref.astype(np.float32).tobytes(), "png RGB 64x64: pixels/255, NCHW, rgb order (bit-exact)",
             "max diff %g" % float(np.abs(v - ref).max()))
        c.ok("img.png" in src and "png" in src, "png: source attribute describes the image", src)
    o = run("--input", "x=" + png, "--channel-order", "bgr", what="png --channel-order bgr")
    if o:
        c.ok(fed(o)[0].tobytes() == ref[:, ::-1].astype(np.float32).tobytes(), "png bgr: channels reversed")
    o = run("--input", "x=" + png, "--mean", "0.5,0.4,0.3", "--std", "0.25,0.5,2", what="png --mean --std")
    if o:
        m = np.array([0.5, 0.4, 0.3], np.float32)[None, :, None, None]
        s = np.array([0.25, 0.5, 2], np.float32)[None, :, None, None]
        want = ((ref.astype(np.float32) - m) / s).astype(np.float32)
        v = fed(o)[0]
        c.ok(np.array_equal(v, want), "png (x - mean) / std per channel (bit-exact)",
             "max diff %g" % float(np.abs(v - want).max()))
    small = rng.integers(0, 256, (32, 16, 3)).astype(np.uint8)
    spng = os.path.join(work, "small.png")
    write_png(spng, small)
    o = run("--input", "x=" + spng, what="png 16x32 resized to 64x64")
    if o:
        want = bilinear(small.astype(np.float32) / np.float32(255), 64, 64).transpose(2, 0, 1)[None]
        v = fed(o)[0]
        err = float(np.abs(v - want).max())
        c.ok(err < 1e-5, "png bilinear resize, half-pixel centres (max diff %.2g)" % err)
    run("--input", "x=" + spng, "--no-resize", want=3, what="png of the wrong size with --no-resize: exit 3")
    gray = rng.integers(0, 256, (64, 64)).astype(np.uint8)
    gpng = os.path.join(work, "gray.png")
    write_png(gpng, gray)
    o = run("--input", "x=" + gpng, what="gray png into a 3-channel input")
    if o:
        g = gray.astype(np.float32) / np.float32(255)
        c.ok(np.array_equal(fed(o)[0], np.stack([g, g, g])[None]), "gray png replicated to 3 channels")
    bad = os.path.join(work, "bad.png")
    with open(bad, "wb") as f:
        f.write(open(png, "rb").read()[:60])
    run("--input", "x=" + bad, want=3, what="truncated png: exit 3")

    # replay the inputs of a dump
    if o:
        o2 = run("--input", os.path.join(o, "dump.h5"), what="--input DUMP.h5 (replay)")
        if o2:
            c.ok(fed(o2)[0].tobytes() == fed(o)[0].tobytes(), "replayed dump input is bit-identical")
        o3 = run("--input", "x=%s:/inputs/x" % os.path.join(o, "dump.h5"), what="--input FILE.h5:/inputs/x")
        if o3:
            c.ok(fed(o3)[0].tobytes() == fed(o)[0].tobytes(), "FILE.h5:/DATASET input is bit-identical")

    # random: documented recipe and determinism
    o = run("--seed", "5", what="--seed 5")
    if o:
        v = fed(o)[0]
        c.ok(v.tobytes() == cldiff_random(v.size, 5, 0).reshape(SHAPE).tobytes(),
             "random input follows the documented PCG32 recipe (seed 5, stream 0)")
    if os.path.isfile(MULTI):
        om = run("--seed", "9", model=MULTI, what="multi_input.nb --seed 9")
        if om:
            b = fed(om, "b")[0]
            c.ok(b.tobytes() == cldiff_random(b.size, 9, 1).reshape(b.shape).tobytes(),
                 "second input uses stream 1 of the recipe")
    outs = []
    for i in range(2):
        out = os.path.join(work, "seed%d" % i)
        # --compress 1: the compressed chunks must be deterministic too
        r = cldiff("run", "--backends", "cpu", TINY, "--seed", "42", "--compress", "1", "--out", out, "--quiet")
        c.rc(r, 0, "--seed 42 run %d" % (i + 1))
        outs.append(out)
    out3 = os.path.join(work, "seed43")
    c.rc(cldiff("run", "--backends", "cpu", TINY, "--seed", "43", "--out", out3, "--quiet"), 0, "--seed 43 run")
    try:
        with h5py.File(os.path.join(outs[0], "dump.h5"), "r") as a, h5py.File(os.path.join(outs[1], "dump.h5"), "r") as b, \
                h5py.File(os.path.join(out3, "dump.h5"), "r") as d:
            ka, kb = sorted(a["runs/cpu"]), sorted(b["runs/cpu"])
            c.ok(ka == kb and len(ka) >= 14, "--seed 42 twice: same datasets (%d)" % len(ka))
            same = all(a["runs/cpu"][k][()].tobytes() == b["runs/cpu"][k][()].tobytes() for k in ka)
            c.ok(same, "--seed 42 twice: every dataset bit-identical")
            c.ok(a["inputs/x"][()].tobytes() == b["inputs/x"][()].tobytes(), "--seed 42 twice: identical inputs")
            # the stored (compressed) chunks are identical too (docs/dump-format.md, Determinism)
            big = [k for k in ka if a["runs/cpu"][k].chunks]
            raw_same = True
            for k in big:
                da, db = a["runs/cpu"][k], b["runs/cpu"][k]
                for ci in range(da.id.get_num_chunks()):
                    if da.id.read_direct_chunk(da.id.get_chunk_info(ci).chunk_offset)[1] != \
                            db.id.read_direct_chunk(db.id.get_chunk_info(ci).chunk_offset)[1]:
                        raw_same = False
            c.ok(raw_same and len(big) > 0, "--seed 42 twice: compressed chunks byte-identical (%d chunked datasets)" % len(big))
            c.ok(a["inputs/x"][()].tobytes() != d["inputs/x"][()].tobytes(), "--seed 43 gives a different input")
            c.ok(int(a.attrs["seed"]) == 42 and int(d.attrs["seed"]) == 43, "seed stored in the root attribute")
    except OSError as e:
        c.ok(False, "seed dumps readable", str(e))
    c.done()


if __name__ == "__main__":
    main()
