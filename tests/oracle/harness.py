"""Oracle harness: runs one op through cldiff's op_runner and compares it with an
independent reference (onnxruntime on a single-node ONNX model, or a numpy function).

Usage in a test file (tests/oracle/test_<family>.py):

    import numpy as np
    from harness import check, ort_node, finish

    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8), dtype=np.float32)
    spec = dict(op="relu", inputs=[("X", "x")], outputs=[("Out", "y")], attrs={})
    for prec in ("fp32", "fp16"):
        check(f"relu {prec}", spec, {"x": x}, ort_node("Relu", ["x"], ["y"]), prec)
    finish()          # prints the table, exits 1 if any case failed

spec:
    op       op type (Paddle name)
    inputs   list of (Slot, name) or (Slot, name, "param"); name keys the `inputs` dict;
             name None = slot argument not connected
    outputs  list of (Slot, name); name keys the reference outputs
    attrs    {name: value}; value kinds inferred (bool, int, float, str, list of int /
             float / str) or given explicitly as (kind, value) with kind one of
             int long bool float float64 string ints longs bools floats float64s strings
ref:
    a callable taking the inputs dict (already rounded for fp16) and returning an array
    (one output), a list (outputs in order) or a dict name -> array; an onnx ModelProto;
    or ort_node(...).
Tolerances (docs/oracle.md):
    fp32: |a - r| <= 1e-5 |r| + k u32 m + 1e-30
    fp16: |a - r| <= 2 u16 |r| + k u16 m + 2^-24
    u32 = 2^-24, u16 = 2^-11, k = reduction length (terms summed per output element),
    m = per-element sum of |terms| when `mag` is given (e.g. the same linear op applied to
    |inputs|), else |r| when k == 1, else max |r| over the tensor.
"""
import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np

U32 = 2.0 ** -24
U16 = 2.0 ** -11
FP32_RTOL = 1e-5
FP32_FLOOR = 1e-30
FP16_FLOOR = 2.0 ** -24

_results = []


def _runner_path():
    p = os.environ.get("CD_OP_RUNNER")
    for i, a in enumerate(sys.argv):
        if a == "--op-runner" and i + 1 < len(sys.argv):
            p = sys.argv[i + 1]
    if not p:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for d in sorted(os.listdir(root)):
            cand = os.path.join(root, d, "tests", "op_runner")
            if d.startswith("build") and os.access(cand, os.X_OK):
                p = cand
                break
    if not p or not os.access(p, os.X_OK):
        raise RuntimeError("op_runner not found: set CD_OP_RUNNER=/path/to/op_runner or pass --op-runner PATH")
    return p


# ------------------------------------------------------------------ spec -> text

def _attr_line(name, value):
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        kind, v = value
    elif isinstance(value, (bool, np.bool_)):
        kind, v = "bool", int(value)
    elif isinstance(value, (int, np.integer)):
        kind, v = "int", int(value)
    elif isinstance(value, (float, np.floating)):
        kind, v = "float", float(value)
    elif isinstance(value, str):
        kind, v = "string", value
    elif isinstance(value, (list, tuple)):
        if all(isinstance(e, (bool, np.bool_)) for e in value) and value:
            kind, v = "bools", [int(e) for e in value]
        elif all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in value):
            kind, v = "ints", [int(e) for e in value]
        elif all(isinstance(e, str) for e in value):
            kind, v = "strings", list(value)
        else:
            kind, v = "floats", [float(e) for e in value]
    else:
        raise TypeError(f"attr {name}: cannot infer the kind of {value!r}")

    def fmt(e):
        if isinstance(e, float):
            return repr(e)
        if isinstance(e, str):
            if any(c.isspace() for c in e) or "#" in e:
                raise ValueError(f"attr {name}: strings with spaces or '#' cannot be passed")
            return e if e else '""'
        return str(e)
    vals = v if isinstance(v, list) else [v]
    return f"attr {name} {kind} " + " ".join(fmt(e) for e in vals)


def _round_half(a):
    return a.astype(np.float16).astype(np.float32) if a.dtype in (np.float32, np.float64, np.float16) else a


def spec_text(spec, files, prec, backend, threads):
    lines = [f"op {spec['op']}", f"prec {prec}", f"backend {backend}", f"threads {threads}"]
    for item in spec.get("inputs", []):
        slot, name = item[0], item[1]
        param = len(item) > 2 and item[2] == "param"
        if name is None:
            lines.append(f"in {slot} -")
        else:
            lines.append(f"in {slot} {files[name]}" + (" param" if param else "") + f" as {name}")
    for slot, name in spec.get("outputs", []):
        lines.append(f"out {slot} {files['out:' + name]}" if name else f"out {slot} -")
    for k, v in spec.get("attrs", {}).items():
        lines.append(_attr_line(k, v))
    return "\n".join(lines) + "\n"


def run_op(spec, inputs, prec="fp32", backend="cpu", threads=1, timeout=300):
    """Runs op_runner; returns (returncode, stderr, {output name: array})."""
    with tempfile.TemporaryDirectory(prefix="cd_oracle_") as td:
        files = {}
        for name, arr in inputs.items():
            files[name] = os.path.join(td, f"in_{len(files)}.npy")
            np.save(files[name], np.ascontiguousarray(arr))
        for _, name in spec.get("outputs", []):
            if name:
                files["out:" + name] = os.path.join(td, f"out_{name}.npy")
        text = spec_text(spec, files, prec, backend, threads)
        p = subprocess.run([_runner_path()], input=text.encode(), capture_output=True, timeout=timeout)
        outs = {}
        if p.returncode == 0:
            for _, name in spec.get("outputs", []):
                if name:
                    outs[name] = np.load(files["out:" + name])
        return p.returncode, p.stderr.decode(errors="replace"), outs


# ------------------------------------------------------------------ references

def _np_to_onnx_type(dt):
    import onnx
    return {np.dtype(np.float32): onnx.TensorProto.FLOAT, np.dtype(np.float16): onnx.TensorProto.FLOAT16,
            np.dtype(np.float64): onnx.TensorProto.DOUBLE, np.dtype(np.int64): onnx.TensorProto.INT64,
            np.dtype(np.int32): onnx.TensorProto.INT32, np.dtype(np.int8): onnx.TensorProto.INT8,
            np.dtype(np.uint8): onnx.TensorProto.UINT8, np.dtype(np.bool_): onnx.TensorProto.BOOL}[np.dtype(dt)]


def run_onnx(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # no fused approximations
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: feeds[n] for n in names})


class ort_node:
    """A single ONNX node built against the actual input arrays. ins: input names ('' for
    an absent optional input); consts: ONNX-only inputs stored as initializers."""

    def __init__(self, op_type, ins, outs, consts=None, opset=17, **attrs):
        self.op_type, self.ins, self.outs, self.consts, self.opset, self.attrs = op_type, ins, outs, consts or {}, opset, attrs

    def __call__(self, inputs):
        import onnx
        from onnx import helper, numpy_helper
        graph_in, inits = [], []
        for n in self.ins:
            if not n:
                continue
            if n in self.consts:
                inits.append(numpy_helper.from_array(np.asarray(self.consts[n]), n))
            else:
                a = inputs[n]
                graph_in.append(helper.make_tensor_value_info(n, _np_to_onnx_type(a.dtype), list(a.shape)))
        graph_out = [helper.make_empty_tensor_value_info(n) for n in self.outs]  # types inferred by ORT
        node = helper.make_node(self.op_type, self.ins, self.outs, **self.attrs)
        g = helper.make_graph([node], "oracle", graph_in, graph_out, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = min(m.ir_version, 8)
        return dict(zip(self.outs, run_onnx(m, inputs)))


def _reference(ref, inputs, out_names):
    try:
        import onnx
        if isinstance(ref, onnx.ModelProto):
            res = run_onnx(ref, inputs)
            return dict(zip(out_names, res))
    except ImportError:
        pass
    res = ref(inputs)
    if isinstance(res, dict):
        if set(out_names) - set(res):
            # ort_node keys by ONNX output names; map positionally when they differ
            vals = list(res.values())
            return dict(zip(out_names, vals))
        return res
    if isinstance(res, (list, tuple)):
        return dict(zip(out_names, res))
    return {out_names[0]: res}


# ------------------------------------------------------------------ comparison

def bound(ref, prec, k=1, mag=None):
    """Per-element tolerance array (see the module docstring and docs/oracle.md)."""
    r = np.abs(ref.astype(np.float64))
    finite = np.isfinite(r)
    if mag is not None:
        m = np.abs(np.asarray(mag, dtype=np.float64))
        m = np.broadcast_to(m, r.shape)
    elif k == 1:
        m = r
    else:
        m = np.full(r.shape, r[finite].max() if finite.any() else 0.0)
    m = np.where(np.isfinite(m), m, 0.0)
    r = np.where(finite, r, 0.0)
    if prec == "fp32":
        return FP32_RTOL * r + k * U32 * m + FP32_FLOOR
    if prec == "fp16":
        return 2 * U16 * r + k * U16 * m + FP16_FLOOR
    raise ValueError(f"unknown precision {prec}")


def compare(got, ref, prec, k=1, mag=None):
    """Returns (ok, summary dict)."""
    s = {"shape": tuple(ref.shape), "max_abs": 0.0, "worst_ratio": 0.0, "worst_at": None, "n_bad": 0, "why": ""}
    if got.shape != ref.shape:
        s["why"] = f"shape {tuple(got.shape)} != reference {tuple(ref.shape)}"
        return False, s
    if ref.dtype.kind in "iub" or got.dtype.kind in "iub":
        bad = got.astype(np.int64) != ref.astype(np.int64)
        s["n_bad"] = int(bad.sum())
        if s["n_bad"]:
            i = np.unravel_index(np.argmax(bad), ref.shape)
            s["worst_at"] = tuple(int(v) for v in i)
            s["why"] = f"{s['n_bad']} integer mismatches, first at {s['worst_at']}: {got[i]} vs {ref[i]}"
        return s["n_bad"] == 0, s
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    same_nan = np.isnan(g64) & np.isnan(r64)
    same_inf = np.isinf(g64) & np.isinf(r64) & (np.sign(g64) == np.sign(r64))
    tol = bound(ref, prec, k, mag)
    with np.errstate(invalid="ignore"):
        err = np.abs(g64 - r64)
        err = np.where(same_nan | same_inf, 0.0, err)
        err = np.where(np.isnan(err), np.inf, err)  # NaN on one side only
        ratio = err / tol
    bad = ratio > 1.0
    s["n_bad"] = int(bad.sum())
    if err.size:
        s["max_abs"] = float(np.max(err))
        j = int(np.argmax(ratio))
        s["worst_ratio"] = float(ratio.flat[j])
        i = np.unravel_index(j, ref.shape)
        s["worst_at"] = tuple(int(v) for v in i)
        if s["n_bad"]:
            s["why"] = (f"{s['n_bad']}/{err.size} elements out of bound; worst at {s['worst_at']}: "
                        f"got {got[i]!r} ref {ref[i]!r} |err| {err.flat[j]:.3g} > tol {tol.flat[j]:.3g}")
    return s["n_bad"] == 0, s


# ------------------------------------------------------------------ cases

def check(case_name, op_spec, inputs, ref, prec="fp32", k=1, mag=None, backend="cpu", threads=1,
          expect_fail=False, expect_error=None):
    """Runs one case and records it. k/mag: see bound(). expect_fail: the comparison must
    fail (used to prove the harness catches wrong results). expect_error: (exit code,
    message substring) op_runner must fail with. Returns True when the case passed."""
    row = {"case": case_name, "prec": prec, "backend": backend, "ok": False, "detail": ""}
    try:
        feeds = {n: (_round_half(a) if prec == "fp16" else a) for n, a in inputs.items()}
        rc, err, outs = run_op(op_spec, feeds, prec, backend, threads)
        if expect_error is not None:
            code, text = expect_error
            row["ok"] = rc == code and text in err
            row["detail"] = f"exit {rc}: {err.strip()[:200]}"
        elif rc != 0:
            row["detail"] = f"op_runner exit {rc}: {err.strip()[:400]}"
        else:
            names = [n for _, n in op_spec.get("outputs", []) if n]
            refs = _reference(ref, feeds, names)
            oks, parts = [], []
            for n in names:
                r = np.asarray(refs[n])
                ok, s = compare(outs[n], r, prec, k, None if mag is None else (mag[n] if isinstance(mag, dict) else mag))
                oks.append(ok)
                parts.append(f"{n}{list(s['shape'])} max|err| {s['max_abs']:.3g} err/tol {s['worst_ratio']:.3g}"
                             + (f" FAIL: {s['why']}" if not ok else ""))
            all_ok = all(oks)
            row["ok"] = (not all_ok) if expect_fail else all_ok
            row["detail"] = ("(expected mismatch) " if expect_fail else "") + "; ".join(parts)
    except Exception as e:  # a broken reference or runner is a failed case, not a crash
        row["detail"] = f"exception: {e!r}\n{traceback.format_exc(limit=3)}"
        row["ok"] = False
    _results.append(row)
    return row["ok"]


def finish():
    """Prints the result table and exits 1 when any case failed."""
    w = max([len(r["case"]) for r in _results] + [4])
    print(f"{'case':<{w}}  prec  backend  result  detail")
    for r in _results:
        print(f"{r['case']:<{w}}  {r['prec']:<4}  {r['backend']:<7}  {'PASS' if r['ok'] else 'FAIL':<6}  {r['detail']}")
    n_bad = sum(not r["ok"] for r in _results)
    print(f"{len(_results) - n_bad} passed, {n_bad} failed")
    sys.exit(1 if n_bad or not _results else 0)
