#!/usr/bin/env python3
"""Builds the model zoo with Paddle's own toolchain (docs/zoo.md).

    .venv-paddle/bin/python scripts/zoo/build.py --out .zoo [--only a,b] [--fast] [--force]

For every model of scripts/zoo/models.py (and its int8 twin where marked):
  1. the dygraph network with random weights; BatchNorm statistics fitted on calibration images
     (crops of testdata's procedural natural images), BN scale/shift drawn around 1 / 0;
  2. paddle.jit.save -> NAME/model.pdmodel + model.pdiparams (batch dimension -1, as shipped);
     int8 twins: paddle.static.quantization.PostTrainingQuantization on that program;
  3. the wheel's Opt (.venv-pl, paddlelite 2.13rc0) -> NAME/NAME_arm.nb, _x86.nb, _opencl.nb,
     each in its own process (Opt segfaults on some programs; the failure is recorded);
  4. inputs: in_random.npy (uniform [-1,1), fixed seed) and, for image models, in_natural.npy
     (the natural image, resized and normalised exactly as `cldiff --input x=IMG.png --mean
     --std` does);
  5. Paddle's own inference (paddle.inference, IR passes off: the saved program as is) on each
     input -> paddle_<input>_<k>.npy for output k, and NAME/info.json; OUT/manifest.jsonl
     collects the info of every model.
A model whose info.json exists is skipped (delete the folder or --force to rebuild).
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import image  # noqa: E402

PLACES = {"arm": "arm", "x86": "x86", "opencl": "opencl,arm"}
PICTURES = {"scene": "natural_scene.png", "textline": "natural_textline.png"}

OPT_SCRIPT = r"""
import sys
from paddlelite.lite import Opt
o = Opt()
o.set_model_file(sys.argv[1]); o.set_param_file(sys.argv[2]); o.set_valid_places(sys.argv[3])
o.set_optimize_out(sys.argv[4])
if len(sys.argv) > 5:
    o.set_quant_model(True); o.set_quant_type(sys.argv[5])
o.run()
"""


def log(msg):
    sys.stdout.write("[zoo %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stdout.flush()


def pl_python():
    for p in (os.environ.get("CLDIFF_PL_PYTHON"), os.path.join(ROOT, ".venv-pl", "bin", "python")):
        if p and os.path.exists(p):
            return p
    return None


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def picture(name):
    return image.read_png(os.path.join(ROOT, "testdata", PICTURES[name]))


def calib_batch(spec, n, seed):
    """n calibration inputs: random crops / flips / brightness of the natural image, and two
    noise images; for non-image models normal noise."""
    rng = np.random.RandomState(seed)
    shape = list(spec["shape"])
    if "norm" not in spec:
        return rng.randn(n, *shape[1:]).astype(np.float32)
    u8 = picture(spec["picture"])
    h, w = u8.shape[:2]
    out = []
    for i in range(n):
        if i >= n - 2:
            out.append(rng.uniform(-1, 1, shape[1:]).astype(np.float32))
            continue
        ch, cw = int(h * rng.uniform(0.5, 1.0)), int(w * rng.uniform(0.5, 1.0))
        y0, x0 = rng.randint(0, h - ch + 1), rng.randint(0, w - cw + 1)
        crop = u8[y0:y0 + ch, x0:x0 + cw]
        if rng.rand() < 0.5:
            crop = crop[:, ::-1]
        crop = np.clip(crop.astype(np.float64) * rng.uniform(0.7, 1.3), 0, 255).astype(np.uint8)
        out.append(image.preprocess(crop, [1] + shape[1:], *spec["norm"])[0])
    return np.stack(out).astype(np.float32)


def inputs_of(spec, seed):
    shape = list(spec["shape"])
    ins = {"random": np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)}
    if "norm" in spec:
        ins["natural"] = image.preprocess(picture(spec["picture"]), shape, *spec["norm"])
    return ins


def make_net(ctor, spec, seed):
    import paddle
    import paddle.nn as nn
    paddle.seed(seed)
    np.random.seed(seed)
    net = ctor()
    rng = np.random.RandomState(seed)
    bns = [m for m in net.sublayers() if isinstance(m, (nn.BatchNorm2D, nn.BatchNorm1D, nn.BatchNorm))]
    for m in bns:
        c = m.weight.shape[0]
        m.weight.set_value(rng.uniform(0.6, 1.4, c).astype(np.float32))
        m.bias.set_value((rng.randn(c) * 0.2).astype(np.float32))
        m._momentum = 0.0  # the running statistics become those of the calibration batch
    if bns:
        net.train()
        x = paddle.to_tensor(calib_batch(spec, 8, seed + 1))
        with paddle.no_grad():
            net(x)
            net(x)
    net.eval()
    return net


def run_paddle(model_dir, x):
    import paddle.inference as pi
    cfg = pi.Config(os.path.join(model_dir, "model.pdmodel"), os.path.join(model_dir, "model.pdiparams"))
    cfg.switch_ir_optim(False)
    cfg.disable_glog_info()
    pred = pi.create_predictor(cfg)
    names = pred.get_input_names()
    pred.get_input_handle(names[0]).copy_from_cpu(x)
    pred.run()
    onames = pred.get_output_names()
    return names, onames, [pred.get_output_handle(n).copy_to_cpu() for n in onames]


def ptq(src_dir, dst_dir, spec, seed):
    import paddle
    from paddle.static.quantization import PostTrainingQuantization
    paddle.enable_static()
    try:
        exe = paddle.static.Executor(paddle.CPUPlace())
        data = calib_batch(spec, 16, seed + 7)

        class Loader(paddle.io.DataLoader):  # 2.6.2's PTQ takes only a DataLoader; it calls it for feeds
            def __init__(self):
                pass

            def __call__(self):
                for i in range(0, len(data), 4):
                    yield {"x": data[i:i + 4]}

            def __len__(self):
                return (len(data) + 3) // 4

        q = PostTrainingQuantization(executor=exe, model_dir=src_dir, model_filename="model.pdmodel",
                                     params_filename="model.pdiparams", data_loader=Loader(), batch_nums=4,
                                     algo="abs_max", quantizable_op_type=["conv2d", "depthwise_conv2d", "mul"],
                                     weight_quantize_type="channel_wise_abs_max", onnx_format=False)
        q.quantize()
        q.save_quantized_model(dst_dir, model_filename="model.pdmodel", params_filename="model.pdiparams")
    finally:
        paddle.disable_static()


# Attributes Paddle 2.6.2 no longer writes (fixed values since 2.5) but Opt 2.13 requires.
OPT_ATTRS = {"relu6": ("threshold", 6.0), "swish": ("beta", 1.0)}


def opt_program(model_dir):
    """The program as Opt 2.13 can read it: Paddle 2.6.2 writes relu6 without its `threshold`
    attribute and swish without `beta` (fixed at 6 and 1 since 2.5), and Opt aborts on them ("No
    attributes called threshold found for relu6"); add them (OPT_ATTRS). It writes
    flatten_contiguous_range without an XShape output, on which the wheel's Opt segfaults; add one. Written beside the program as opt.pdmodel (Paddle's oracle
    runs the unchanged model.pdmodel). Returns the file Opt should read and the ops patched."""
    from paddle.base.proto import framework_pb2 as fp
    src = os.path.join(model_dir, "model.pdmodel")
    prog = fp.ProgramDesc()
    prog.ParseFromString(open(src, "rb").read())
    n = 0
    for b in prog.blocks:
        for op in b.ops:
            fix = OPT_ATTRS.get(op.type)
            if fix and not any(a.name == fix[0] for a in op.attrs):
                a = op.attrs.add()
                a.name, a.type, a.f = fix[0], fp.AttrType.FLOAT, fix[1]
                n += 1
        # flatten_contiguous_range: 2.6.2 writes no XShape output; the wheel's Opt (2.13rc0)
        # FlattenContiguousRangeOp::InferType sets xshape's precision without checking the
        # pointer: SIGSEGV (docs/zoo.md "Opt crashes"). Give it the XShape it expects.
        names = {v.name for v in b.vars}
        for op in b.ops:
            if op.type == "flatten_contiguous_range" and not any(o.parameter == "XShape" for o in op.outputs):
                out = [o for o in op.outputs if o.parameter == "Out"][0].arguments[0]
                xs = out + ".xshape"
                while xs in names:
                    xs += "_"
                v = b.vars.add()
                v.CopyFrom([u for u in b.vars if u.name == out][0])
                v.name = xs
                names.add(xs)
                slot = op.outputs.add()
                slot.parameter = "XShape"
                slot.arguments.append(xs)
                n += 1
    if not n:
        return src, 0
    dst = os.path.join(model_dir, "opt.pdmodel")
    open(dst, "wb").write(prog.SerializeToString())
    return dst, n


def run_opt(model_dir, out_prefix, place, quant=None, timeout=300):
    py = pl_python()
    if not py:
        return {"ok": False, "why": "no .venv-pl (paddlelite wheel): run scripts/setup.sh"}
    args = [py, "-c", OPT_SCRIPT, opt_program(model_dir)[0], os.path.join(model_dir, "model.pdiparams"),
            place, out_prefix] + ([quant] if quant else [])
    t0 = time.time()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": "Opt timed out after %d s" % timeout}
    ok = r.returncode == 0 and os.path.exists(out_prefix + ".nb")
    res = {"ok": ok, "rc": r.returncode, "s": round(time.time() - t0, 1)}
    if not ok:
        tail = (r.stderr or r.stdout or "").strip().splitlines()[-3:]
        res["why"] = ("Opt killed by signal %d" % -r.returncode if r.returncode < 0 else
                      "Opt exit %d" % r.returncode) + (": " + " | ".join(tail) if tail else "")
    return res


def build_one(name, out, fast, force):
    import models
    import paddle
    base = name[:-5] if name.endswith("_int8") else name
    family, ctor, spec, _ = models.ZOO[base]
    d = os.path.join(out, name)
    info_path = os.path.join(d, "info.json")
    if os.path.exists(info_path) and not force:
        return json.load(open(info_path)), True
    os.makedirs(d, exist_ok=True)
    seed = seed_of(base)
    t0 = time.time()
    info = {"name": name, "family": family, "input_shape": spec["shape"], "precision": "fp32", "seed": seed,
            "paddle": paddle.__version__}
    if "norm" in spec:
        info.update(mean=spec["norm"][0], std=spec["norm"][1], picture="testdata/" + PICTURES[spec["picture"]])
    if name.endswith("_int8"):
        src = os.path.join(out, base)
        if not os.path.exists(os.path.join(src, "model.pdmodel")):
            build_one(base, out, fast, False)
        ptq(src, d, spec, seed)
        info["precision"] = "int8 (PostTrainingQuantization abs_max, channel-wise weights)"
    else:
        net = make_net(ctor, spec, seed)
        shape = [None] + list(spec["shape"][1:])
        paddle.jit.save(net, os.path.join(d, "model"), input_spec=[paddle.static.InputSpec(shape, "float32", "x")])
    ins = inputs_of(spec, seed + 3)
    info["inputs"] = {}
    for kind, x in ins.items():
        np.save(os.path.join(d, "in_%s.npy" % kind), x)
        in_names, onames, outs = run_paddle(d, x)
        info["input_name"] = in_names[0]
        info["outputs"] = [{"name": n, "shape": list(o.shape), "dtype": str(o.dtype)} for n, o in zip(onames, outs)]
        for k, o in enumerate(outs):
            np.save(os.path.join(d, "paddle_%s_%d.npy" % (kind, k)), o)
        info["inputs"][kind] = {"file": "in_%s.npy" % kind,
                                "stats": [float(x.min()), float(x.max()), float(x.mean()), float(x.std())]}
    info["opt_attrs_added"] = opt_program(d)[1]
    info["opt"] = {}
    for tgt, place in PLACES.items():
        if fast and tgt != "arm":
            continue
        prefix = os.path.join(d, "%s_%s" % (name, tgt))
        info["opt"][tgt] = run_opt(d, prefix, place)
        info["opt"][tgt]["nb"] = os.path.basename(prefix) + ".nb"
    info["build_s"] = round(time.time() - t0, 1)
    json.dump(info, open(info_path, "w"), indent=1)
    return info, False


def all_names():
    import models
    names = []
    for n, (_, _, _, q) in models.ZOO.items():
        names.append(n)
        if q:
            names.append(n + "_int8")
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, ".zoo"))
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--fast", action="store_true", help="Opt for arm only")
    ap.add_argument("--force", action="store_true", help="rebuild models that exist")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    names = all_names()
    if a.list:
        print("\n".join(names))
        return 0
    if a.only:
        want = a.only.split(",")
        bad = [w for w in want if w not in names]
        if bad:
            sys.exit("build.py: unknown model(s) %s; --list names them" % ",".join(bad))
        names = want
    os.makedirs(a.out, exist_ok=True)
    import paddle
    paddle.set_device("cpu")
    fails = 0
    for n in names:
        try:
            info, cached = build_one(n, a.out, a.fast, a.force)
            opt = " ".join("%s:%s" % (t, "ok" if r["ok"] else "FAIL") for t, r in info.get("opt", {}).items()
                           if isinstance(r, dict))
            log("%-22s %s %s" % (n, "cached" if cached else "built in %.1f s" % info["build_s"], opt))
        except Exception:
            fails += 1
            log("%-22s FAILED\n%s" % (n, traceback.format_exc()))
    with open(os.path.join(a.out, "manifest.jsonl"), "w") as f:
        for n in all_names():
            p = os.path.join(a.out, n, "info.json")
            if os.path.exists(p):
                f.write(json.dumps(json.load(open(p)), sort_keys=True) + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
