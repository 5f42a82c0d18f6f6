#!/usr/bin/env python3
"""Gaps the fault sweep left (issue 20, docs/planted-bugs.md), each under the fault injector
(tests/faultinj, an OpenCL loader layer; its path is argv[1]).

1. A non-finite reference holds B to it: on testdata/lenient_attrs.nb softplus_0 (op #1) outputs
   +Inf everywhere and hard_swish_0 (op #5) +-Inf; a NaN at element 3 of softplus_0 (NaN where
   the reference is +Inf) and a `col` fault of hard_swish_0 (the last column replaced by the one
   before it: Infs of the other sign) were output drift or a pass ("a NaN/Inf reference holds B
   to nothing"); now each is a kernel fault at its layer. The clean run still passes.
2. `--calibrate` under a kernel fault (one channel of conv2d_1 of mobilenet_tiny scaled by 1.5)
   refuses: exit 1, the fault named on stderr, no tolerance file (it exited 0 and wrote a file
   that blessed the fault). The clean calibration still writes its file, exit 0.
3. A kernel wrong in the free run only (CLFI_EXEC=1: the local re-run is right, as a racy or
   state-dependent kernel may be) is named at pool2d_0 (max pool, op #7), elementwise_add_0
   (broadcast add, op #6) and concat_0 (op #10) of mobilenet_tiny by the free-run evidence on
   B's own inputs (it ended as output drift or a pass: only conv/fc had free-run evidence).
4. int8 layers computed in float (--int8-placement gpu; shared models, skipped without them): the
   element of largest |y| of conv2d_0 of ppocr_v2.0_cls_slim (int8 output, quantum 0.0459) lies
   beyond A's +-127-quanta rail (B 6.98, A saturated at 5.83), where the int8 bound was infinite.
   Now one-sided: the same element with its sign flipped (CLFI_EPS=-2) is a kernel fault (it
   passed); doubled (beyond the rail, where A's saturated value says nothing) it still passes.
"""
import json
import os
import sys

from e2e_lib import Checks, SHARED, SRC, TINY, cldiff, load_json, need_cldiff, tmpdir

LENIENT = os.path.join(SRC, "testdata", "lenient_attrs.nb")


def summary(out):
    p = os.path.join(out, "summary.json")
    return load_json(p) if os.path.isfile(p) else {}


def changed(logp):
    n = 0
    if os.path.isfile(logp):
        for line in open(logp):
            n += json.loads(line).get("changed", 0)
    return n


def main():
    need_cldiff()
    if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
        print("usage: test_bounds_gaps.py LIBFAULTINJ (the faultinj target)")
        sys.exit(2)
    lib = os.path.abspath(sys.argv[1])
    c = Checks("e2e bounds gaps")
    work = tmpdir("boundsgaps")
    c.cleanup_later(work)

    # 1. non-finite references
    r = cldiff(LENIENT, "--fp32", "--out", os.path.join(work, "lenient-clean"), "--no-repro")
    c.rc(r, 0, "lenient_attrs fp32 clean")
    for op, layer, shape in ((1, "softplus_0", {"CLFI_SHAPE": "nan", "CLFI_INDEX": "3"}),
                             (5, "hard_swish_0", {"CLFI_SHAPE": "col"})):
        logp = os.path.join(work, "lenient-%d.jsonl" % op)
        env = dict(shape, OPENCL_LAYERS=lib, CLFI_OP=str(op), CLFI_LOG=logp, CLFI_QUIET="1")
        out = os.path.join(work, "lenient-%d" % op)
        r = cldiff(LENIENT, "--fp32", "--out", out, "--no-repro", env=env)
        c.ok(changed(logp) > 0, "lenient %s: the %s fault changed NaN/Inf elements" % (layer, shape["CLFI_SHAPE"]))
        s = summary(out)
        ff = s.get("first_fault") or {}
        c.rc(r, 1, "lenient %s %s fault" % (layer, shape["CLFI_SHAPE"]))
        c.ok(s.get("verdict_kind") == "kernel_fault" and ff.get("layer") == layer,
             "lenient %s: kernel fault at it" % layer, "%s %s" % (s.get("verdict_kind"), str(ff)[:300]))

    # 2. --calibrate under a fault
    env = {"OPENCL_LAYERS": lib, "CLFI_OP": "4", "CLFI_SHAPE": "channel", "CLFI_EPS": "0.5", "CLFI_QUIET": "1"}
    out = os.path.join(work, "cal-fault")
    r = cldiff(TINY, "--fp32", "--calibrate", "2", "--out", out, env=env)
    c.rc(r, 1, "--calibrate 2 with a channel of conv2d_1 scaled by 1.5")
    c.ok("KERNEL FAULT at conv2d_1" in r.err, "--calibrate names the fault on stderr", r.tail())
    c.ok(not os.path.isfile(os.path.join(out, "tolerance.txt")), "--calibrate under a fault writes no tolerance file")
    out = os.path.join(work, "cal-clean")
    r = cldiff(TINY, "--fp32", "--calibrate", "2", "--out", out)
    c.rc(r, 0, "--calibrate 2 clean")
    c.ok(os.path.isfile(os.path.join(out, "tolerance.txt")), "clean --calibrate writes tolerance.txt")

    # 3. wrong in the free run only
    for op, layer in ((7, "pool2d_0"), (6, "elementwise_add_0"), (10, "concat_0")):
        logp = os.path.join(work, "once-%d.jsonl" % op)
        env = {"OPENCL_LAYERS": lib, "CLFI_OP": str(op), "CLFI_SHAPE": "scale", "CLFI_EPS": "1", "CLFI_EXEC": "1",
               "CLFI_LOG": logp, "CLFI_QUIET": "1"}
        out = os.path.join(work, "once-%d" % op)
        r = cldiff(TINY, "--fp32", "--out", out, "--no-repro", env=env)
        c.ok(changed(logp) == 1, "%s: one element doubled in the free run only" % layer)
        s = summary(out)
        ff = s.get("first_fault") or {}
        c.rc(r, 1, "%s faulted in the free run only" % layer)
        c.ok(s.get("verdict_kind") == "kernel_fault" and ff.get("layer") == layer,
             "%s faulted in the free run only: kernel fault at it" % layer,
             "%s %s" % (s.get("verdict_kind"), str(ff)[:300]))
        c.ok("racy or state-dependent" in r.out, "%s: named by the free-run evidence" % layer, r.tail())

    # 4. the int8 rail, one-sided
    slim = os.path.join(SHARED, "ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb")
    if not os.path.isfile(slim):
        print("SKIP part: %s absent (shared models)" % slim)
    else:
        for eps, want in (("-2", 1), ("1", 0)):
            logp = os.path.join(work, "rail%s.jsonl" % eps)
            env = {"OPENCL_LAYERS": lib, "CLFI_OP": "1", "CLFI_SHAPE": "scale", "CLFI_EPS": eps, "CLFI_LOG": logp,
                   "CLFI_QUIET": "1"}
            out = os.path.join(work, "rail%s" % eps)
            r = cldiff(slim, "--fp32", "--int8-placement", "gpu", "--out", out, "--no-repro", env=env)
            log = [json.loads(x) for x in open(logp)] if os.path.isfile(logp) else []
            c.ok(log and log[0].get("layer") == "conv2d_0" and abs(log[0].get("old", 0)) > 127 * 0.0458893,
                 "cls slim conv2d_0 x(1%+g): the faulted element is beyond A's rail" % float(eps), str(log)[:300])
            c.rc(r, want, "cls slim conv2d_0 x(1%+g): %s" % (float(eps), "kernel fault" if want else "passes (beyond the rail)"))
            if want:
                ff = summary(out).get("first_fault") or {}
                c.ok(ff.get("layer") == "conv2d_0", "cls slim: the sign-flipped rail element is a fault at conv2d_0",
                     str(ff)[:300])
    c.done()


if __name__ == "__main__":
    main()
