"""Procedural test images for the zoo (no third-party image, no license question) and the
preprocessing cldiff applies to PNG inputs (docs/dump-format.md "Inputs"), in numpy.

    python3 scripts/zoo/image.py testdata/     writes natural_scene.png and natural_textline.png

natural_scene.png (256x256 RGB): a sky gradient, a sun, two ridges of fractal (1/f) terrain,
a tree-like blob with leaf texture, a signboard with dark glyph strokes, film grain. Its
statistics are those of photographs (a 1/f spectrum, smooth regions, sharp edges, saturated
and dark areas), unlike uniform noise. natural_textline.png (320x32 RGB): dark glyph-like
strokes on light, slightly uneven paper, as a text-line crop fed to an OCR recognizer.
Deterministic (fixed seeds, numpy only); re-running writes the same bytes.
"""
import os
import struct
import sys
import zlib

import numpy as np


def _fractal(h, w, seed, beta=2.0):
    rng = np.random.RandomState(seed)
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.fftfreq(w)[None, :]
    f = np.sqrt(fx * fx + fy * fy)
    f[0, 0] = 1.0
    spec = (rng.randn(h, w) + 1j * rng.randn(h, w)) / f ** (beta / 2)
    spec[0, 0] = 0
    n = np.real(np.fft.ifft2(spec))
    return (n - n.min()) / (n.max() - n.min())


def _glyphs(img, x0, y0, x1, y1, seed, ink):
    """Dark strokes shaped like letters: vertical stems, bowls, bars, in a row."""
    rng = np.random.RandomState(seed)
    h = y1 - y0
    x = x0 + 2
    yy, xx = np.mgrid[0:img.shape[0], 0:img.shape[1]]
    while x < x1 - h // 2:
        cw = int(h * rng.uniform(0.35, 0.7))
        kind = rng.randint(4)
        t = max(1, h // 9)
        m = np.zeros(img.shape[:2], bool)
        if kind in (0, 3):  # stem
            m |= (abs(xx - (x + cw // 3)) <= t // 2 + (t > 1)) & (yy >= y0 + 2) & (yy < y1 - 2)
        if kind in (1, 3):  # bowl
            cy, cx, r = (y0 + y1) / 2 + h * 0.1, x + cw / 2, cw / 2
            d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            m |= (abs(d - r * 0.8) <= t * 0.7)
        if kind == 2:  # bars
            m |= (abs(yy - (y0 + h // 3)) <= t // 2) & (xx >= x) & (xx < x + cw)
            m |= (abs(yy - (y0 + 2 * h // 3)) <= t // 2) & (xx >= x) & (xx < x + cw)
            m |= (abs(xx - x) <= t // 2) & (yy >= y0 + h // 3) & (yy <= y0 + 2 * h // 3)
        img[m] = img[m] * 0.15 + np.asarray(ink) * 0.85
        x += cw + int(h * rng.uniform(0.1, 0.3)) + (int(h * 0.5) if rng.rand() < 0.15 else 0)


def scene(h=256, w=256):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    t = yy / h
    img[..., 0] = 0.35 + 0.35 * t
    img[..., 1] = 0.55 + 0.25 * t
    img[..., 2] = 0.95 - 0.15 * t
    sun = np.exp(-((yy - 0.18 * h) ** 2 + (xx - 0.78 * w) ** 2) / (2 * (0.05 * h) ** 2))
    img += sun[..., None] * np.array([0.6, 0.5, 0.2])
    for k, (base, amp, col, seed) in enumerate([(0.45, 0.18, (0.35, 0.42, 0.50), 11),
                                                 (0.62, 0.22, (0.20, 0.38, 0.12), 12)]):
        ridge = _fractal(1, w * 4, seed, 2.2)[0, ::4]
        top = (base + amp * (ridge - 0.5)) * h
        mask = yy > top[None, :]
        tex = _fractal(h, w, seed + 100, 1.6)
        shade = np.clip(0.6 + 0.8 * (tex - 0.5) + 0.3 * (yy - top[None, :]) / h, 0, 1.4)
        layer = np.array(col)[None, None, :] * shade[..., None]
        img[mask] = layer[mask]
    # a tree: trunk and a textured crown
    trunk = (abs(xx - 0.22 * w) < 0.015 * w) & (yy > 0.45 * h) & (yy < 0.8 * h)
    img[trunk] = (0.30, 0.20, 0.10)
    crown = ((yy - 0.42 * h) ** 2 / (0.13 * h) ** 2 + (xx - 0.22 * w) ** 2 / (0.11 * w) ** 2) < 1
    leaf = _fractal(h, w, 21, 1.2)
    g = np.stack([0.10 + 0.2 * leaf, 0.30 + 0.45 * leaf, 0.08 + 0.1 * leaf], -1)
    img[crown] = g[crown]
    # a signboard with text
    y0, y1, x0, x1 = int(0.70 * h), int(0.82 * h), int(0.45 * w), int(0.95 * w)
    img[y0:y1, x0:x1] = (0.93, 0.92, 0.85)
    img[y0 - 2:y1 + 2, x0 - 2:x0] = img[y0 - 2:y1 + 2, x1:x1 + 2] = (0.2, 0.2, 0.2)
    img[y0 - 2:y0, x0:x1] = img[y1:y1 + 2, x0:x1] = (0.2, 0.2, 0.2)
    _glyphs(img, x0 + 3, y0 + 2, x1 - 3, y1 - 2, 31, (0.05, 0.05, 0.1))
    post = (abs(xx - 0.7 * w) < 0.01 * w) & (yy >= y1 + 2) & (yy < 0.95 * h)
    img[post] = (0.25, 0.25, 0.25)
    img += np.random.RandomState(41).randn(h, w, 3) * 0.015
    return np.clip(img, 0, 1)


def textline(h=32, w=320):
    paper = 0.88 + 0.08 * _fractal(h, w, 51, 1.8)[..., None] * np.array([1.0, 0.98, 0.9])[None, None]
    img = np.broadcast_to(paper, (h, w, 3)).copy()
    _glyphs(img, 4, 3, w - 4, h - 3, 52, (0.08, 0.07, 0.12))
    img += np.random.RandomState(53).randn(h, w, 3) * 0.02
    return np.clip(img, 0, 1)


def to_u8(img):
    return np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)


def write_png(path, u8):
    h, w, c = u8.shape
    raw = b"".join(b"\x00" + u8[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, {1: 0, 3: 2, 4: 6}[c], 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
                chunk(b"IEND", b""))


def read_png(path):
    """8-bit RGB/RGBA/gray, non-interlaced PNGs (what write_png writes)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat = 8, b""
    while pos < len(data):
        n, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, ctype, _, _, inter = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and inter == 0, "read_png: 8-bit non-interlaced only"
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    c = {0: 1, 2: 3, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    out = np.zeros((h, w * c), np.int32)
    prev = np.zeros(w * c, np.int32)
    for y in range(h):
        ft, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        cur = np.zeros(w * c, np.int32)
        for x in range(w * c):
            a = cur[x - c] if x >= c else 0
            b = prev[x]
            cc = prev[x - c] if x >= c else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    img = out.reshape(h, w, c).astype(np.uint8)
    if c == 4:  # composited onto black, as cldiff does
        img = (img[..., :3].astype(np.float64) * img[..., 3:] / 255.0).round().astype(np.uint8)
    return img


def resize_bilinear(img, oh, ow):
    """Half-pixel centres, no antialiasing, edge clamped (cldiff's PNG resize)."""
    h, w = img.shape[:2]
    if (h, w) == (oh, ow):
        return img.astype(np.float64)
    sy = (np.arange(oh) + 0.5) * h / oh - 0.5
    sx = (np.arange(ow) + 0.5) * w / ow - 0.5
    sy = np.clip(sy, 0, h - 1)
    sx = np.clip(sx, 0, w - 1)
    y0 = np.floor(sy).astype(int)
    x0 = np.floor(sx).astype(int)
    y1 = np.minimum(y0 + 1, h - 1)
    x1 = np.minimum(x0 + 1, w - 1)
    fy = (sy - y0)[:, None, None]
    fx = (sx - x0)[None, :, None]
    im = img.astype(np.float64)
    top = im[y0][:, x0] * (1 - fx) + im[y0][:, x1] * fx
    bot = im[y1][:, x0] * (1 - fx) + im[y1][:, x1] * fx
    return top * (1 - fy) + bot * fy


def preprocess(u8, shape, mean, std, order="rgb"):
    """uint8 HxWx3 -> float32 NCHW of `shape`, as `cldiff --input x=IMG.png --mean --std`."""
    n, c, h, w = shape
    x = resize_bilinear(u8.astype(np.float64) / 255.0, h, w)
    if order == "bgr":
        x = x[..., ::-1]
    if c == 1:
        x = x.mean(-1, keepdims=True)
    x = (x - np.asarray(mean, np.float64)) / np.asarray(std, np.float64)
    x = np.ascontiguousarray(x.transpose(2, 0, 1)[None].repeat(n, 0)).astype(np.float32)
    return x


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata"
    write_png(os.path.join(out, "natural_scene.png"), to_u8(scene()))
    write_png(os.path.join(out, "natural_textline.png"), to_u8(textline()))
    print("wrote", os.path.join(out, "natural_scene.png"), os.path.join(out, "natural_textline.png"))
