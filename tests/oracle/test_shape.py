"""Oracle tests of the "shape" op family (src/backends/cpu/ops_shape.c) against onnxruntime,
or numpy written from docs/nb-format.md §7.12–§7.19 where ONNX has no direct equivalent. Data
movement is exact, so every comparison is bit-exact in both precisions; integer tensors
are checked too. Tensor-valued shape inputs are given as parameters (known at plan time)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, finish, ort_node  # noqa: E402

rng = np.random.default_rng(777)
PRECS = ("fp32", "fp16")
x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
xi = rng.integers(-1000, 1000, (2, 3, 4, 5)).astype(np.int64)


def one(op, attrs, slot_in="X", extra=(), outs=(("Out", "o"),)):
    return dict(op=op, inputs=[(slot_in, "x")] + list(extra), outputs=list(outs), attrs=attrs)


def ort_reshape(shape):
    return lambda i: ort_node("Reshape", ["x", "s"], ["o"], consts={"s": np.array(shape, np.int64)})(i)["o"]


for prec in PRECS:
    # reshape / reshape2 (§7.12): 0 copies, -1 infers; XShape bound but data-free
    check("reshape2 [0,-1,5]", one("reshape2", dict(shape=[0, -1, 5]), outs=(("Out", "o"), ("XShape", None))),
          {"x": x}, ort_reshape([0, -1, 5]), prec)
    check("reshape [-1]", one("reshape", dict(shape=[-1])), {"x": x}, ort_reshape([-1]), prec)
    check("reshape2 Shape tensor overrides attr",
          one("reshape2", dict(shape=[1, 1]), extra=[("Shape", "s", "param")], outs=(("Out", "o"), ("XShape", None))),
          {"x": x, "s": np.array([6, -1], np.int32)}, lambda i: i["x"].reshape(6, 20), prec)
    check("reshape2 ShapeTensor list",
          dict(op="reshape2", inputs=[("X", "x"), ("ShapeTensor", "a", "param"), ("ShapeTensor", "b", "param")],
               outputs=[("Out", "o")], attrs=dict(shape=[1])),
          {"x": x, "a": np.array([4], np.int64), "b": np.array([-1], np.int64)}, lambda i: i["x"].reshape(4, 30), prec)
    # transpose (§7.13)
    for perm in ([0, 2, 3, 1], [3, 1, 0, 2], [0, 1, 2, 3]):
        check(f"transpose2 {perm}", one("transpose2", dict(axis=perm), outs=(("Out", "o"), ("XShape", None))),
              {"x": x}, ort_node("Transpose", ["x"], ["o"], perm=perm), prec)
    big = rng.standard_normal((1, 64, 48, 40)).astype(np.float32)
    check("transpose big (threads)", one("transpose", dict(axis=[0, 2, 3, 1])), {"x": big},
          ort_node("Transpose", ["x"], ["o"], perm=[0, 2, 3, 1]), prec)
    # flatten (§7.14)
    check("flatten2 axis 2", one("flatten2", dict(axis=2), outs=(("Out", "o"), ("XShape", None))), {"x": x},
          ort_node("Flatten", ["x"], ["o"], axis=2), prec)
    check("flatten axis 0", one("flatten", dict(axis=0)), {"x": x}, ort_node("Flatten", ["x"], ["o"], axis=0), prec)
    check("flatten_contiguous_range 1..2", one("flatten_contiguous_range", dict(start_axis=1, stop_axis=2)), {"x": x},
          lambda i: i["x"].reshape(2, 12, 5), prec)
    check("flatten_contiguous_range -3..-1", one("flatten_contiguous_range", dict(start_axis=-3, stop_axis=-1)),
          {"x": x}, lambda i: i["x"].reshape(2, 60), prec)
    # squeeze / unsqueeze (§7.15, §7.16)
    xs1 = rng.standard_normal((1, 3, 1, 5)).astype(np.float32)
    check("squeeze2 all ones", one("squeeze2", {}), {"x": xs1}, lambda i: i["x"].reshape(3, 5), prec)
    check("squeeze2 axes [0,-2,1] keeps non-1", one("squeeze2", dict(axes=[0, -2, 1])), {"x": xs1},
          lambda i: i["x"].reshape(3, 5), prec)
    check("squeeze axes [2]", one("squeeze", dict(axes=[2])), {"x": xs1}, lambda i: i["x"].reshape(1, 3, 5), prec)
    check("unsqueeze2 [0, 3]", one("unsqueeze2", dict(axes=[0, 3])), {"x": x}, lambda i: i["x"].reshape(1, 2, 3, 1, 4, 5),
          prec)
    check("unsqueeze [-1]", one("unsqueeze", dict(axes=[-1])), {"x": x}, lambda i: i["x"][..., None], prec)
    # concat (§7.17)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 4), (2, 1, 4)))
    check("concat axis 1 (3 inputs)", dict(op="concat", inputs=[("X", "a"), ("X", "b"), ("X", "c")],
                                           outputs=[("Out", "o")], attrs=dict(axis=1)),
          {"a": a, "b": b, "c": c}, ort_node("Concat", ["a", "b", "c"], ["o"], axis=1), prec)
    check("concat axis -1", dict(op="concat", inputs=[("X", "a"), ("X", "b")], outputs=[("Out", "o")],
                                 attrs=dict(axis=-1)),
          {"a": a, "b": a * 2}, ort_node("Concat", ["a", "b"], ["o"], axis=-1), prec)
    check("concat AxisTensor overrides", dict(op="concat", inputs=[("X", "a"), ("X", "b"), ("AxisTensor", "ax", "param")],
                                              outputs=[("Out", "o")], attrs=dict(axis=0)),
          {"a": a, "b": b, "ax": np.array([1], np.int32)}, lambda i: np.concatenate([i["a"], i["b"]], 1), prec)
    # split (§7.18)
    check("split num 2 axis 2", dict(op="split", inputs=[("X", "x")], outputs=[("Out", "p"), ("Out", "q")],
                                     attrs=dict(axis=2, num=2)),
          {"x": x}, lambda i: np.split(i["x"], 2, axis=2), prec)
    check("split sections [1,-1,2] axis -1", dict(op="split", inputs=[("X", "x")],
                                                   outputs=[("Out", "p"), ("Out", "q"), ("Out", "r")],
                                                   attrs=dict(axis=-1, num=0, sections=[1, -1, 2])),
          {"x": x}, lambda i: ort_node("Split", ["x", "s"], ["p", "q", "r"], axis=3,
                                       consts={"s": np.array([1, 2, 2], np.int64)})(i), prec)
    # slice (§7.19)
    check("slice axes [1,3] neg start, big end", one("slice", dict(axes=[1, 3], starts=[-2, 1], ends=[100, -1]),
                                                     slot_in="Input"),
          {"x": x}, lambda i: i["x"][:, -2:, :, 1:-1], prec)
    check("slice decrease_axis", one("slice", dict(axes=[0, 2], starts=[1, 2], ends=[2, 3], decrease_axis=[0, 2]),
                                     slot_in="Input"),
          {"x": x}, lambda i: i["x"][1, :, 2, :], prec)
    check("slice last element (-1, 0, infer_flag -1)",
          one("slice", dict(axes=[3], starts=[-1], ends=[0], infer_flags=[-1], decrease_axis=[3]), slot_in="Input"),
          {"x": x}, lambda i: i["x"][..., -1], prec)
    check("slice StartsTensor/EndsTensor", one("slice", dict(axes=[2], starts=[0], ends=[1]), slot_in="Input",
                                               extra=[("StartsTensor", "s", "param"), ("EndsTensor", "e", "param")]),
          {"x": x, "s": np.array([1], np.int64), "e": np.array([3], np.int64)}, lambda i: i["x"][:, :, 1:3], prec)
    check("slice vs ORT Slice", one("slice", dict(axes=[1, 2], starts=[1, 0], ends=[3, 2]), slot_in="Input"),
          {"x": x}, lambda i: ort_node("Slice", ["x", "st", "en", "ax"], ["o"],
                                       consts={"st": np.array([1, 0]), "en": np.array([3, 2]), "ax": np.array([1, 2])})(i)["o"],
          prec)
    # stack
    check("stack axis 1", dict(op="stack", inputs=[("X", "a"), ("X", "b")], outputs=[("Y", "o")], attrs=dict(axis=1)),
          {"a": a, "b": a + 1}, lambda i: np.stack([i["a"], i["b"]], 1), prec)
    check("stack axis -1", dict(op="stack", inputs=[("X", "a"), ("X", "b"), ("X", "c")], outputs=[("Y", "o")],
                                attrs=dict(axis=-1)),
          {"a": a, "b": a * 3, "c": a - 2}, lambda i: np.stack([i["a"], i["b"], i["c"]], -1), prec)
    # assign, shape
    check("assign", one("assign", {}), {"x": x}, lambda i: i["x"], prec)
    check("shape (int32)", one("shape", {}, slot_in="Input"), {"x": x},
          lambda i: ort_node("Shape", ["x"], ["o"])(i)["o"].astype(np.int32), prec)
    # fill_constant (float output follows the run precision)
    check("fill_constant float", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                                      attrs=dict(shape=[2, 3], dtype=5, value=1.25)),
          {}, lambda i: np.full((2, 3), 1.25, np.float32), prec)

# integer tensors through every data-movement op (exact)
check("reshape2 int64", one("reshape2", dict(shape=[6, -1])), {"x": xi}, lambda i: i["x"].reshape(6, 20), "fp32")
check("transpose2 int64", one("transpose2", dict(axis=[1, 0, 3, 2])), {"x": xi},
      lambda i: i["x"].transpose(1, 0, 3, 2), "fp32")
check("concat int32", dict(op="concat", inputs=[("X", "a"), ("X", "b")], outputs=[("Out", "o")], attrs=dict(axis=0)),
      {"a": xi[0].astype(np.int32), "b": xi[1].astype(np.int32)}, lambda i: np.concatenate([i["a"], i["b"]]), "fp32")
check("slice int64", one("slice", dict(axes=[1], starts=[1], ends=[2]), slot_in="Input"), {"x": xi},
      lambda i: i["x"][:, 1:2], "fp32")
check("split int64", dict(op="split", inputs=[("X", "x")], outputs=[("Out", "p"), ("Out", "q")],
                          attrs=dict(axis=0, num=2)), {"x": xi}, lambda i: [i["x"][:1], i["x"][1:]], "fp32")
check("fill_constant int64 str_value", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                                            attrs=dict(shape=[3], dtype=3, value=0.0, str_value="9007199254740993")),
      {}, lambda i: np.full((3,), 9007199254740993, np.int64), "fp32")
check("fill_constant int32 -1 (cls chain)", dict(op="fill_constant", inputs=[], outputs=[("Out", "o")],
                                                 attrs=dict(shape=[1], dtype=2, value=-1.0)),
      {}, lambda i: np.array([-1], np.int32), "fp32")
check("fill_constant_batch_size_like", dict(op="fill_constant_batch_size_like", inputs=[("Input", "x")],
                                            outputs=[("Out", "o")],
                                            attrs=dict(shape=[-1, 7], dtype=5, value=0.5, input_dim_idx=1,
                                                       output_dim_idx=0)),
      {"x": x}, lambda i: np.full((3, 7), 0.5, np.float32), "fp32")
for prec in PRECS:
    check("cast float -> int32", one("cast", dict(in_dtype=5, out_dtype=2)),
          {"x": np.array([1.7, -1.7, 2.5, -0.4, 100.9], np.float32)}, lambda i: np.trunc(i["x"]).astype(np.int32), prec)
check("cast int32 -> float", one("cast", dict(in_dtype=2, out_dtype=5)), {"x": np.array([3, -4, 7], np.int32)},
      lambda i: i["x"].astype(np.float32), "fp32")
check("cast int64 -> int32", one("cast", dict(in_dtype=3, out_dtype=2)), {"x": np.array([3, -4, 1 << 40], np.int64)},
      lambda i: np.array([3, -4, 2147483647], np.int32), "fp32")

# error paths: exit code and message
check("reshape2 two -1", one("reshape2", dict(shape=[-1, -1])), {"x": x}, None, "fp32",
      expect_error=(3, "more than one -1"))
check("reshape2 wrong count", one("reshape2", dict(shape=[7, -1])), {"x": x}, None, "fp32",
      expect_error=(3, "not a multiple of 7"))
check("reshape2 Shape from run-time data", one("reshape2", dict(shape=[1]), extra=[("Shape", "s")]),
      {"x": x, "s": np.array([6, -1], np.int32)}, None, "fp32", expect_error=(8, "must be known"))
check("transpose2 not a permutation", one("transpose2", dict(axis=[0, 0, 1, 2])), {"x": x}, None, "fp32",
      expect_error=(3, "not a permutation"))
check("concat mismatch", dict(op="concat", inputs=[("X", "a"), ("X", "b")], outputs=[("Out", "o")], attrs=dict(axis=0)),
      {"a": a, "b": b}, None, "fp32", expect_error=(3, "does not match X[0]"))
check("concat axis out of range", dict(op="concat", inputs=[("X", "a"), ("X", "b")], outputs=[("Out", "o")],
                                       attrs=dict(axis=3)), {"a": a, "b": a}, None, "fp32",
      expect_error=(3, "axis 3 is out of range for rank 3"))
check("split sections sum", dict(op="split", inputs=[("X", "x")], outputs=[("Out", "p"), ("Out", "q")],
                                 attrs=dict(axis=1, num=0, sections=[1, 1])), {"x": x}, None, "fp32",
      expect_error=(3, "sections sum 2 differs from dim 3"))
check("slice empty", one("slice", dict(axes=[1], starts=[2], ends=[1]), slot_in="Input"), {"x": x}, None, "fp32",
      expect_error=(3, "is empty"))
finish()
