#!/usr/bin/env python3
"""A broken fused elementwise kernel is named as a kernel fault, not reported as a bad model.

The planted copy of kernels/eltwise.cl stores the sum of fusion_elementwise_*_activation without
its activation. The failing layer's local check extracts the op alone and builds its magnitude
model (activation removed); that once left a fused op without act_type and ended in exit 3
("STRING attribute 'act_type' is missing or empty"). Expected, fp32 and fp16 alike: exit 1, the
first divergence at fusion_elementwise_add_activation_0 (op #7) of ppocr_v2.0_cls, kind local
(a kernel fault at that layer), and a repro pack for it.
"""
import os

from e2e_lib import Checks, cldiff, load_json, need_cldiff, need_shared, tmpdir, SHARED, SRC

MODEL = "ppocr_v2.0_cls_fp32_arm_v2.14rc.nb"
NEEDLE = "STORE(out, i, ew_act(kind, v, a, b, c, ACC_ZERO));"
PLANT = "STORE(out, i, v);"


def main():
    need_cldiff()
    need_shared(MODEL)
    model = os.path.join(SHARED, MODEL)
    c = Checks("e2e fused fault")
    work = tmpdir("fused")
    c.cleanup_later(work)
    kdir = os.path.join(work, "kernels")
    os.makedirs(kdir)
    src = open(os.path.join(SRC, "kernels", "eltwise.cl")).read()
    if not c.ok(src.count(NEEDLE) == 1, "kernels/eltwise.cl has the fused store line", "update NEEDLE in %s" % __file__):
        c.done()
    with open(os.path.join(kdir, "eltwise.cl"), "w") as f:
        f.write(src.replace(NEEDLE, PLANT))
    for prec in ("--fp32", "--fp16"):
        out = os.path.join(work, prec[2:])
        r = cldiff(model, "--shape", "x=1,3,48,192", prec, "--kernel-dir", kdir, "--out", out)
        c.rc(r, 1, "%s: fused activation dropped" % prec)
        c.ok("missing or empty" not in r.err, "%s: no bad-model message" % prec, r.tail())
        sp = os.path.join(out, "summary.json")
        s = load_json(sp) if os.path.isfile(sp) else {}
        fd = s.get("first_divergence") or {}
        c.ok(fd.get("layer") == "fusion_elementwise_add_activation_0" and fd.get("op_index") == 7,
             "%s: first divergence fusion_elementwise_add_activation_0 (op #7)" % prec, str(fd)[:300])
        c.ok(fd.get("kind") == "local", "%s: named a kernel fault (kind local)" % prec, "kind=%r" % fd.get("kind"))
        c.ok("KERNEL FAULT at fusion_elementwise_add_activation_0" in r.out, "%s: terminal verdict names it" % prec,
             r.tail())
        c.ok(os.path.isfile(os.path.join(out, "repro", "layer.nb")), "%s: repro pack of the layer" % prec)
    c.done()


if __name__ == "__main__":
    main()
