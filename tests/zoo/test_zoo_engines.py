#!/usr/bin/env python3
"""Engine slice of the model zoo (docs/zoo.md "Engine pairs"): `--backends paddle-lite-arm,cpu`
(Paddle-Lite's armv8 library under qemu-aarch64) on models made by Paddle 2.6.2 and the wheel's
Opt, with Paddle's own outputs as the tiebreaker:

  * rec_lstm1_uni, ocr_det_db (the engine right, Paddle agrees): PASS, every probed tensor of
    each run compared. Before, a unidirectional rnn ended INCOMPLETE (exit 10): the CPU stored
    rnn's training scratch (DropoutState, Reserve) and Paddle-Lite's 0-d fill_constant outputs
    did not match the plan's [1]; the DB head's unfused batch_norm stored its running
    statistics, which Paddle-Lite ARM leaves without host data.
  * rec_gru1_bi (Paddle-Lite ARM's rnn returns a wrong backward final h,
    docs/paddle-lite-findings.md report D): KERNEL FAULT at rnn_0, the engine's final h off
    Paddle's, cldiff's CPU on Paddle's.

Exit 77 (skipped) without .zoo/ or without the paddle-lite-arm engine (qemu-aarch64 and the
armv8 SDK: exit 4 from cldiff).
"""
import json
import os
import sys
import tempfile

SRC = os.environ.get("CD_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SRC, "scripts", "zoo"))
sys.path.insert(0, os.path.join(SRC, "scripts"))

CASES = [("rec_lstm1_uni", "pass"), ("ocr_det_db", "pass"), ("rec_gru1_bi", "kernel_fault")]


def main():
    zoo = os.environ.get("CD_ZOO", os.path.join(SRC, ".zoo"))
    man = os.path.join(zoo, "manifest.jsonl")
    if not os.path.exists(man):
        print("SKIP: no .zoo/manifest.jsonl (scripts/setup_zoo.sh builds the zoo)")
        return 77
    import check
    infos = {i["name"]: i for i in (json.loads(l) for l in open(man) if l.strip())}
    if any(m not in infos or not infos[m]["opt"].get("arm", {}).get("ok") for m, _ in CASES):
        print("SKIP: the zoo lacks one of %s (re-run scripts/setup_zoo.sh)" % ", ".join(m for m, _ in CASES))
        return 77
    cldiff = os.environ.get("CLDIFF", os.path.join(SRC, "build", "cldiff"))
    out = tempfile.mkdtemp(prefix="zoo_engines_")
    fails = []
    for m, want in CASES:
        info = infos[m]
        mdir = os.path.join(zoo, m)
        inp = os.path.join(mdir, info["inputs"]["natural"]["file"])
        r = check.pair_run(cldiff, os.path.join(mdir, info["opt"]["arm"]["nb"]), "paddle-lite-arm,cpu", "fp32",
                           ["--input", "x=%s" % inp], os.path.join(out, m), "pair", None, (info, mdir, "natural"))
        if r["rc"] == 4:
            print("SKIP: paddle-lite-arm unavailable (exit 4: %s)" % r.get("why", ""))
            return 77
        vp = r.get("vs_paddle") or {}
        eng, cpu = vp.get("paddle-lite-arm"), vp.get("cpu")
        print("%-14s %s (%s), largest ratio %s (%s); vs Paddle: engine %s, cpu %s" % (
            m, r["verdict"], r.get("verdict_text") or r.get("why"), check.fmt_ratio(r.get("largest_ratio")),
            r.get("largest_layer"), eng and "%.2e" % eng["err"], cpu and "%.2e" % cpu["err"]))
        if r["verdict"] != want:
            fails.append("%s: verdict %s, want %s (%s)" % (m, r["verdict"], want, r.get("verdict_text") or r.get("why")))
        if not cpu or not cpu["ok"]:
            fails.append("%s: cldiff's CPU off Paddle: %s" % (m, cpu))
        if want == "pass" and (not eng or not eng["ok"]):
            fails.append("%s: the engine off Paddle (%s) but the verdict passed" % (m, eng))
        if want == "kernel_fault":
            if not eng or eng["ok"]:
                fails.append("%s: the engine should be off Paddle (report D), got %s" % (m, eng))
            if (r.get("first_fault") or {}).get("layer") != "rnn_0" and "rnn_0" not in (r.get("verdict_text") or ""):
                fails.append("%s: the fault should be named at rnn_0: %s" % (m, r.get("verdict_text")))
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
