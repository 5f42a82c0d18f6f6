#!/usr/bin/env python3
"""Planted faults in MNN's own OpenCL kernels (docs/mnn.md, "Planted faults"), at run time.

MNN embeds its .cl kernels in libMNN.so and builds them with clCreateProgramWithSource through
the OpenCL ICD loader. The fault injector layer of cldiff's tests (tests/faultinj/faultinj.c,
OPENCL_LAYERS) edits a program's source as MNN hands it to the driver (CLFI_SRC_NEEDLE: the first
occurrence of a piece of MNN's kernel text, as embedded, CLFI_SRC_REPLACE: what it becomes), so
one kernel of one program computes wrong while MNN and the model stay as they are. Each plant
runs `cldiff M.mnn --backends mnn-cpu,mnn-opencl` and must be named as a KERNEL FAULT at the layer
whose op runs the planted kernel; a plant that did not apply (MNN did not build that program) or
that the verdict passes is listed with its size.

    scripts/mnn/mnn_planted.py --cldiff build/cldiff --faultinj build/tests/libfaultinj.so \\
        [--only NAME,...] [--out DIR] [--md TABLE.md]

Exit 0 when every applied plant is named at one of its layers and the build failure is contained
(exit 5 naming the program), 1 otherwise (a wrong layer, a missed plant), 2 on usage errors, 77
with --skip-without-sdk where no MNN SDK is found.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "testdata", "mnn")

# name, MNN program (its .cl file), model, layers the verdict may name, needle, replacement
CONV_TOP = "#ifdef CONV_LOCAL_SIZE\n__kernel\nvoid conv_2d_1x1_local("
DW_TOP = "__kernel\nvoid depthwise_conv2d_c4h1w4("
MATMUL_TOP = "__kernel void batch_matmul("

PLANTS = [
    # a line of one kernel changed
    ("pool-avg-divisor", "pooling_buf", "conv", ["pool2d_1"],
     "result=result/(COMPUTE_FLOAT4)(1.0*total_count);", "result=result/(COMPUTE_FLOAT4)(1.0*total_count+0.01);"),
    ("pool-max-scale", "pooling_buf", "conv", ["pool2d_0"],
     "result=fmax(result,inp_data);", "result=fmax(result,inp_data*(COMPUTE_FLOAT4)1.001);"),
    # downstream of ops cldiff does not map (a reshape to a shape computed by Shape/Slice/Concat):
    # the model is planned from MNN's shapes and the plant still named at its layer
    ("pool-max-after-unmapped", "pooling_buf", "unmapped", ["pool2d_0"],
     "result=fmax(result,inp_data);", "result=fmax(result,inp_data*(COMPUTE_FLOAT4)1.001);"),
    ("interp-bilinear-weight", "interp_buf", "branches", ["bilinear_interp_v2_0"],
     "*convert_float4(value_11));", "*convert_float4(value_11)*1.001f);"),
    ("raster-copy", "raster_buf", "branches", ["assign_0", "concat_0", "assign_1"],
     "output[outputIndexReal]=(OUTPUT_TYPE)input[inputIndexReal];",
     "output[outputIndexReal]=(OUTPUT_TYPE)(input[inputIndexReal]*1.001f);"),
    ("binary-op", "binary_buf", "attention", ["elementwise_mul_0", "elementwise_add_0"],
     "float4 in1=convert_float4(vload4(0,input1+offset));\n #endif\n \n float4 out=OPERATOR;",
     "float4 in1=convert_float4(vload4(0,input1+offset));\n #endif\n \n float4 out=(OPERATOR)*1.001f;"),
    ("softmax-v4-divide", "softmax_buf", "branches", ["softmax_0"],
     "for(int i=0; i<dim; i++){\n vstore4(CONVERT_FLOAT4(exp(CONVERT_COMPUTE_FLOAT4(vload4(0,input+offset+i*inside))"
     "-maxValue)/sumValue)",
     "for(int i=0; i<dim; i++){\n vstore4(CONVERT_FLOAT4(exp(CONVERT_COMPUTE_FLOAT4(vload4(0,input+offset+i*inside))"
     "-maxValue)/sumValue*(COMPUTE_FLOAT4)1.001)"),
    ("softmax-inside-divide", "self_attention_buf", "attention", ["softmax_0"],
     "float value=exp((float)input[offset+ i]-maxValue)/sumValue;",
     "float value=exp((float)input[offset+ i]-maxValue)/sumValue*1.001f;"),
    # a builtin redefined for every kernel of one program (MNN picks one of its many variants
    # by shape and device: the plant reaches whichever runs)
    ("conv-mad", "conv_2d_buf", "conv", ["conv2d_0", "conv2d_1"],
     CONV_TOP, "#define mad(a,b,c) (fma((a),(b),(c))*1.001f)\n" + CONV_TOP),
    ("dw-mad", "depthwise_conv2d_buf", "conv", ["depthwise_conv2d_0"],
     DW_TOP, "#define mad(a,b,c) (fma((a),(b),(c))*1.001f)\n" + DW_TOP),
    ("loop-matmul-mad", "loop", "attention", ["matmul_v2_0", "matmul_v2_1"],
     MATMUL_TOP, "#define mad(a,b,c) (fma((a),(b),(c))*1.001f)\n" + MATMUL_TOP),
    # an OpenCL program that does not build (the seed case of issue 28: clBuildProgram failing in
    # MNN's OpenCL backend): a builtin shadowed by a macro PoCL's compiler rejects; cldiff must
    # contain it (exit 5) and name the program and the layers that use it
    ("build-failure-conv", "conv_2d_buf", "conv", ["BUILD"],
     CONV_TOP, "#define fmax(a,b) (fmax((a),(b))+0.001f)\n" + CONV_TOP),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cldiff", required=True)
    ap.add_argument("--faultinj", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="mnn-planted-out")
    ap.add_argument("--md", default="")
    ap.add_argument("--skip-without-sdk", action="store_true",
                    help="exit 77 (ctest's skip) when no MNN SDK is found (.mnn/sdk-mnn-*, CLDIFF_MNN_SDK)")
    a = ap.parse_args()
    if a.skip_without_sdk:
        import glob
        root = os.path.dirname(os.path.dirname(HERE))
        sdk = os.environ.get("CLDIFF_MNN_SDK") or next(iter(glob.glob(os.path.join(root, ".mnn", "sdk-mnn-" + platform.machine() + "-*"))), None)
        if not sdk or not os.path.exists(os.path.join(sdk, "lib", "libMNN.so")):
            print("SKIP: no MNN SDK (.mnn/sdk-mnn-* or CLDIFF_MNN_SDK): run scripts/setup_mnn.sh")
            return 77
    only = [s for s in a.only.split(",") if s]
    os.makedirs(a.out, exist_ok=True)
    rows, bad = [], 0
    for name, prog, model, layers, needle, repl in PLANTS:
        if only and name not in only:
            continue
        out = os.path.join(a.out, name)
        log = os.path.join(a.out, name + ".clfi.log")
        if os.path.exists(log):
            os.remove(log)
        env = dict(os.environ, OPENCL_LAYERS=os.path.abspath(a.faultinj), CLFI_SRC_NEEDLE=needle,
                   CLFI_SRC_REPLACE=repl, CLFI_LOG=log, CLFI_QUIET="1", CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
        t0 = time.time()
        r = subprocess.run([a.cldiff, os.path.join(DATA, model + ".mnn"), "--backends", "mnn-cpu,mnn-opencl",
                            "--input", os.path.join(DATA, model + ".input.npy"), "--out", out, "--no-repro"],
                           capture_output=True, text=True, errors="replace", env=env, timeout=900)
        secs = time.time() - t0
        applied = os.path.exists(log) and "source_edit" in open(log).read()
        verdict, layer, ratio = "?", "", ""
        try:
            s = json.load(open(os.path.join(out, "summary.json")))
            verdict = s.get("verdict_kind") or s.get("verdict")
            ff = s.get("first_fault") or {}
            layer = ff.get("layer", "") if isinstance(ff, dict) else ""
            if isinstance(ff, dict) and ff.get("ratio") is not None:
                ratio = f"{ff['ratio']:.3g}"
        except (OSError, ValueError):
            verdict = f"exit {r.returncode}"
        if layers == ["BUILD"]:
            ok = r.returncode == 5 and prog in r.stderr and "build" in r.stderr.lower()
            status = "contained (exit 5, program named)" if ok else f"NOT CONTAINED (exit {r.returncode})"
            bad += 0 if ok else 1
        elif not applied:
            status = "not applied (MNN built no program with this text)"
        elif r.returncode == 1 and layer in layers:
            status = "named"
        elif r.returncode == 1:
            status, bad = f"WRONG LAYER (expected {'/'.join(layers)})", bad + 1
        else:
            status, bad = f"MISSED (exit {r.returncode})", bad + 1
        rows.append((name, prog, model, "/".join(layers), "yes" if applied else "no", verdict, layer, ratio, status,
                     f"{secs:.0f}"))
        print(f"{name:24} {prog:22} {model:10} applied={'yes' if applied else 'no':3} exit={r.returncode} "
              f"layer={layer or '-':22} ratio={ratio or '-':8} {status}", flush=True)
        if r.returncode not in (0, 1) and layers != ["BUILD"]:
            print("   " + r.stderr.strip()[-600:])
    hdr = ("plant", "MNN program", "model", "expected layer", "applied", "verdict", "named layer", "local ratio",
           "result", "s")
    md = "| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr) + "\n" + "".join(
        "| " + " | ".join(str(c) for c in row) + " |\n" for row in rows)
    if a.md:
        open(a.md, "w").write(md)
    print(md)
    n_applied = sum(1 for r in rows if r[4] == "yes")
    n_named = sum(1 for r in rows if r[8] == "named")
    n_applied = sum(1 for r in rows if r[4] == "yes" and r[3] != "BUILD")
    print(f"{n_named} of {n_applied} applied plants named at their layer ({len(rows)} plants, {bad} wrong or missed)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
