"""Oracle tests for Paddle's `rnn` op (LSTM, GRU; 1-2 layers; uni- and bidirectional;
with and without SequenceLength) against onnxruntime's LSTM / GRU operators.

Mapping Paddle -> ONNX (facts from both operators' documentation):
  - Paddle stacks LSTM gates i, f, c~, o; ONNX LSTM i, o, f, c  -> blocks [0, 3, 1, 2]
  - Paddle stacks GRU gates r, z, c~ with the reset applied after the hidden matmul;
    ONNX GRU z, r, h with linear_before_reset = 1                 -> blocks [1, 0, 2]
  - ONNX W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] = (input biases, hidden biases)
  - one ONNX node per layer; its Y [T, D, N, H] becomes the next input [T, N, D*H]
  - Paddle WeightList: every (W_ih, W_hh) by layer then direction, then every
    (b_ih, b_hh) in the same order.
Tolerance: a recurrence of T steps, each summing I + H products and a few gate terms,
bounded with the harness's reduction length k = max(I, D*H) + H + 4 (observed error is
about one rounding per step). A control case feeds ONNX the gates in Paddle's order
unmapped and must fail, proving the comparison sees a gate-order mistake."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from harness import check, finish, run_onnx

GATES = {"LSTM": 4, "GRU": 3}
ONNX_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}


def make_case(rng, mode, layers, bidir, t, n, i, h, seq):
    d = 2 if bidir else 1
    g = GATES[mode]
    inputs = {"x": rng.normal(0, 1, (t, n, i)).astype(np.float32)}
    spec_in = [("Input", "x")]
    states = ["h0", "c0"] if mode == "LSTM" else ["h0"]
    for s in states:
        inputs[s] = rng.normal(0, 0.5, (layers * d, n, h)).astype(np.float32)
        spec_in.append(("PreState", s))
    ws, bs = [], []
    for l in range(layers):
        in_l = i if l == 0 else d * h
        for k in range(d):
            for nm, shp in ((f"wih{l}{k}", (g * h, in_l)), (f"whh{l}{k}", (g * h, h))):
                inputs[nm] = rng.uniform(-0.5, 0.5, shp).astype(np.float32)
                ws.append((f"WeightList", nm, "param"))
            for nm in (f"bih{l}{k}", f"bhh{l}{k}"):
                inputs[nm] = rng.uniform(-0.3, 0.3, (g * h,)).astype(np.float32)
                bs.append(("WeightList", nm, "param"))
    spec_in += ws + bs
    if seq is not None:
        inputs["sl"] = np.array(seq, np.int32)
        spec_in.append(("SequenceLength", "sl"))
    outs = [("Out", "y"), ("State", "hn")] + ([("State", "cn")] if mode == "LSTM" else [])
    spec = dict(op="rnn", inputs=spec_in, outputs=outs,
                attrs={"mode": mode, "num_layers": layers, "is_bidirec": bidir, "hidden_size": h,
                       "input_size": i, "dropout_prob": ("float", 0.0), "is_test": True})
    k = max(i, d * h) + h + 4
    return spec, inputs, k


def reference(mode, layers, bidir, h, with_seq, order=None):
    d = 2 if bidir else 1
    order = order or ONNX_ORDER[mode]

    def blocks(a):
        return np.concatenate([a[j * h:(j + 1) * h] for j in order], 0)

    def ref(inp):
        t, n, _ = inp["x"].shape
        nodes, inits = [], []
        cur = "x"
        hs, cs = [], []
        for l in range(layers):
            w = np.stack([blocks(inp[f"wih{l}{k}"]) for k in range(d)])
            r = np.stack([blocks(inp[f"whh{l}{k}"]) for k in range(d)])
            b = np.stack([np.concatenate([blocks(inp[f"bih{l}{k}"]), blocks(inp[f"bhh{l}{k}"])]) for k in range(d)])
            names = [f"W{l}", f"R{l}", f"B{l}", "sl" if with_seq else "", f"H0_{l}"]
            inits += [numpy_helper.from_array(w, f"W{l}"), numpy_helper.from_array(r, f"R{l}"),
                      numpy_helper.from_array(b, f"B{l}"),
                      numpy_helper.from_array(inp["h0"][l * d:(l + 1) * d], f"H0_{l}")]
            outs = [f"Y{l}", f"Yh{l}"]
            if mode == "LSTM":
                names.append(f"C0_{l}")
                inits.append(numpy_helper.from_array(inp["c0"][l * d:(l + 1) * d], f"C0_{l}"))
                outs.append(f"Yc{l}")
                cs.append(f"Yc{l}")
            hs.append(f"Yh{l}")
            attrs = dict(hidden_size=h, direction="bidirectional" if bidir else "forward")
            if mode == "GRU":
                attrs["linear_before_reset"] = 1
            nodes.append(helper.make_node(mode, [cur] + names, outs, **attrs))
            nodes.append(helper.make_node("Transpose", [f"Y{l}"], [f"Yt{l}"], perm=[0, 2, 1, 3]))
            nodes.append(helper.make_node("Reshape", [f"Yt{l}", "shape"], [f"L{l}"]))
            cur = f"L{l}"
        inits.append(numpy_helper.from_array(np.array([t, n, d * h], np.int64), "shape"))
        nodes.append(helper.make_node("Identity", [cur], ["y"]))
        nodes.append(helper.make_node("Concat", hs, ["hn"], axis=0))
        out_names = ["y", "hn"]
        if mode == "LSTM":
            nodes.append(helper.make_node("Concat", cs, ["cn"], axis=0))
            out_names.append("cn")
        gin = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(inp["x"].shape))]
        if with_seq:
            gin.append(helper.make_tensor_value_info("sl", TensorProto.INT32, [n]))
        graph = helper.make_graph(nodes, "rnn", gin, [helper.make_empty_tensor_value_info(o) for o in out_names],
                                  initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 7
        return dict(zip(out_names, run_onnx(m, inp)))
    return ref


CASES = [  # mode, layers, bidirectional, T, N, I, H, sequence lengths
    ("LSTM", 1, False, 5, 3, 4, 6, None),
    ("LSTM", 2, True, 6, 2, 5, 4, None),
    ("LSTM", 2, True, 5, 3, 3, 5, [5, 3, 1]),
    ("GRU", 1, True, 5, 3, 4, 6, None),
    ("GRU", 2, False, 7, 2, 6, 5, None),
    ("GRU", 2, True, 5, 3, 4, 3, [2, 5, 4]),
]

if __name__ == "__main__":
    rng = np.random.default_rng(5)
    for mode, layers, bidir, t, n, i, h, seq in CASES:
        spec, inputs, k = make_case(rng, mode, layers, bidir, t, n, i, h, seq)
        name = f"rnn {mode} L{layers} {'bi' if bidir else 'fw'} T{t} N{n} I{i} H{h}" + (" seqlen" if seq else "")
        for prec in ("fp32", "fp16"):
            check(name, spec, inputs, reference(mode, layers, bidir, h, seq is not None), prec, k=k)
    spec, inputs, k = make_case(rng, "LSTM", 1, False, 5, 3, 4, 6, None)
    check("rnn LSTM control: unmapped gate order must mismatch", spec, inputs,
          reference("LSTM", 1, False, 6, False, order=[0, 1, 2, 3]), "fp32", k=k, expect_fail=True)
    spec, inputs, k = make_case(rng, "GRU", 1, False, 5, 3, 4, 6, None)
    check("rnn GRU control: unmapped gate order must mismatch", spec, inputs,
          reference("GRU", 1, False, 6, False, order=[0, 1, 2]), "fp32", k=k, expect_fail=True)
    finish()
