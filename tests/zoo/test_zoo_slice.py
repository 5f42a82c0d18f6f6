#!/usr/bin/env python3
"""CI slice of the model zoo (docs/zoo.md): a few models made by Paddle 2.6.2 and the wheel's
Opt, one per family that broke before (an LSTM and a GRU recognizer with their final states, a
DB detector with transposed convs, a segmenter with bilinear upsampling and argmax, a YOLO with
yolo_box and fill_any_like, an int8 classifier made by Paddle's post-training quantization).
For each: cldiff's CPU matches Paddle's own inference on every output (random and natural
input, scripts/zoo/check.py's tolerances), and `cldiff --backends cpu,opencl --fp32` on the
natural image (the PNG, cldiff's own preprocessing) says PASS. Exit 77 (skipped) without
.zoo/ or .venv-paddle (scripts/setup.sh builds them: scripts/setup_zoo.sh).
"""
import os
import sys

SRC = os.environ.get("CD_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SRC, "scripts", "zoo"))
sys.path.insert(0, os.path.join(SRC, "scripts"))

SLICE = ["rec_lstm2_bi", "rec_gru1_bi", "ocr_det_db", "seg_bilinear", "yolo", "mobilenet_v2_int8"]


def main():
    zoo = os.environ.get("CD_ZOO", os.path.join(SRC, ".zoo"))
    man = os.path.join(zoo, "manifest.jsonl")
    if not os.path.isdir(os.path.join(SRC, ".venv-paddle")) or not os.path.exists(man):
        print("SKIP: no .zoo/manifest.jsonl or .venv-paddle (scripts/setup.sh builds the zoo with "
              "scripts/setup_zoo.sh where paddlepaddle 2.6.2 installs)")
        return 77
    import json
    import tempfile

    import check
    infos = {i["name"]: i for i in (json.loads(l) for l in open(man) if l.strip())}
    missing = [m for m in SLICE if m not in infos or not infos[m]["opt"].get("arm", {}).get("ok")]
    if missing:
        print("SKIP: the zoo lacks %s (re-run scripts/setup_zoo.sh)" % ", ".join(missing))
        return 77
    cldiff = os.environ.get("CLDIFF", os.path.join(SRC, "build", "cldiff"))
    out = tempfile.mkdtemp(prefix="zoo_slice_")
    fails = []
    for m in SLICE:
        info = infos[m]
        for kind in ("random", "natural"):
            r = check.cpu_vs_paddle(cldiff, zoo, info, "arm", kind, out)
            errs = ", ".join("%s %.2e%s" % (o["name"], o["err"], " (tie)" if o.get("tie") else "")
                             for o in r.get("outputs", []))
            print("%-18s cpu vs paddle %-8s %s  %s" % (m, kind, "ok" if r["ok"] else "MISMATCH", errs or r.get("why")))
            if not r["ok"]:
                fails.append("%s %s cpu vs paddle: %s" % (m, kind, errs or r.get("why")))
        want = __import__("numpy").load(os.path.join(zoo, m, "in_natural.npy")).astype("float64")
        p = check.pair_run(cldiff, os.path.join(zoo, m, info["opt"]["arm"]["nb"]), "cpu,opencl", "fp32",
                           check.natural_args(info), os.path.join(out, m), "pair", want)
        if p["rc"] == 4:
            print("%-18s cpu,opencl fp32: no OpenCL device (exit 4), pair part skipped" % m)
            continue
        print("%-18s cpu,opencl fp32 natural: %s, largest ratio %s (%s); input %s; PNG vs numpy %.1e" % (
            m, p["verdict"], check.fmt_ratio(p.get("largest_ratio")), p.get("largest_layer"), p.get("input_source"),
            p.get("png_input_diff") if p.get("png_input_diff") is not None else float("nan")))
        if p["verdict"] != "pass":
            fails.append("%s cpu,opencl fp32: %s (%s)" % (m, p["verdict"], p.get("verdict_text") or p.get("why")))
        if p.get("layers_drifted"):
            # fp32 on a natural image: every layer within the element tolerance (the unwritten
            # batch_norm statistics outputs on OpenCL drifted at ocr_det_db's head)
            fails.append("%s cpu,opencl fp32: %s layers drifted" % (m, p["layers_drifted"]))
        if "natural_" not in (p.get("input_source") or ""):
            fails.append("%s: the summary does not name the natural image as the input" % m)
        if p.get("png_input_diff") is None or p["png_input_diff"] > 1e-4:
            fails.append("%s: cldiff's PNG preprocessing differs from numpy's by %s" % (m, p.get("png_input_diff")))
    # a label map in fp16 (seg_bilinear_ac, natural image): one near-tie flips a label by a whole
    # class; the label rule counts flips against the float32 golden run's (before: OUTPUT DRIFT
    # by the float range rule)
    m = "seg_bilinear_ac"
    if m in infos:
        info = infos[m]
        want = __import__("numpy").load(os.path.join(zoo, m, "in_natural.npy")).astype("float64")
        p = check.pair_run(cldiff, os.path.join(zoo, m, info["opt"]["arm"]["nb"]), "cpu,opencl", "fp16",
                           check.natural_args(info), os.path.join(out, m + "_fp16"), "pair", want)
        print("%-18s cpu,opencl fp16 natural: %s (%s)" % (m, p["verdict"], p.get("verdict_text") or p.get("why")))
        if p["rc"] != 4 and p["verdict"] != "pass":
            fails.append("%s cpu,opencl fp16 label map: %s" % (m, p["verdict"]))
    if fails:
        print("FAIL:\n  " + "\n  ".join(fails))
        return 1
    print("PASS: %d zoo models match Paddle on the CPU and pass cpu,opencl fp32" % len(SLICE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
