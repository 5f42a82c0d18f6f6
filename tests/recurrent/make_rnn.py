#!/usr/bin/env python3
"""Recurrent models made by Paddle 2.6.2 itself (issue 26 point 3), with Paddle's own results.

Run with the Paddle venv (.venv-paddle):  make_rnn.py OUT_DIR [CASE ...]

Each case is written to OUT_DIR/CASE/: model.pdmodel + model.pdiparams (a static program saved by
paddle.static.save_inference_model, the format Paddle-Lite's Opt reads), input.npy (the model
input, seeded) and out_<k>.npy (Paddle's own inference of every fetch target on that input, in
fetch order), plus names.txt (the fetch targets, one a line). Opt for arm is a separate step in
the Paddle-Lite venv (run_rnn.py does both).

The rnn op is built the way Paddle's nn.LSTM / nn.GRU build it in a static program (one `rnn`
op: Input time-major [T, N, I], WeightList, PreState; SequenceLength when the case has one);
its initial states come, as in PP-OCR's exported recognizers, from fill_constant_batch_size_like
on the input (zero), or from the model (nonzero: a scale of a slice of the input, so that the
rnn reads them as activations). Every rnn output (Out, final h, final c) is a model output.

Cases (NAME = mode, layers, directions, initial state, extras):
  lstm_l1_uni_zero, lstm_l2_bi_zero, lstm_l1_bi_init, lstm_l2_uni_init, gru_l1_uni_zero,
  gru_l2_bi_zero, gru_l1_bi_init, gru_l2_uni_init, lstm_l1_bi_seqlen, gru_l1_uni_seqlen,
  crnn_l2_bi (a conv backbone then the 2-layer bidirectional LSTM, hidden 48, 25 steps),
  pl_bug (the 2-layer bidirectional LSTM alone, time-major: two fill_constant_batch_size_like, the
  rnn and the fetch scales; the repro of Paddle-Lite ARM's final h, docs/paddle-lite-findings.md).
"""
import os
import sys

import numpy as np


def case_cfg(name):
    c = {"mode": "LSTM", "layers": 1, "bi": False, "init": "zero", "seqlen": False, "backbone": False,
         "T": 12, "N": 2, "I": 16, "H": 24}
    if name.startswith("gru"):
        c["mode"] = "GRU"
    c["layers"] = 2 if "_l2_" in name else 1
    c["bi"] = "_bi" in name
    c["init"] = "init" if name.endswith("_init") else "zero"
    c["seqlen"] = name.endswith("_seqlen")
    if name == "crnn_l2_bi":
        c.update(mode="LSTM", layers=2, bi=True, backbone=True, T=25, N=1, H=48)
    if name == "pl_bug":
        c.update(mode="LSTM", layers=2, bi=True, T=8, N=1, I=8, H=8, time_major=True)
    return c


CASES = ["lstm_l1_uni_zero", "lstm_l2_bi_zero", "lstm_l1_bi_init", "lstm_l2_uni_init", "gru_l1_uni_zero",
         "gru_l2_bi_zero", "gru_l1_bi_init", "gru_l2_uni_init", "lstm_l1_bi_seqlen", "gru_l1_uni_seqlen",
         "crnn_l2_bi", "pl_bug"]


def build(name, out_dir, seed=7):
    import paddle
    from paddle.base.layer_helper import LayerHelper

    c = case_cfg(name)
    paddle.enable_static()
    paddle.seed(seed)
    np.random.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    D = 2 if c["bi"] else 1
    S = 2 if c["mode"] == "LSTM" else 1
    with paddle.static.program_guard(main, startup):
        if c["backbone"]:
            # a small CRNN backbone: [1, 3, 32, 100] -> [1, 288, 1, 25] -> [25, 1, 288] (288: the
            # channels of PP-OCR v2.0 mobile rec's MobileNetV3 neck)
            img = paddle.static.data("x", [1, 3, 32, 100], "float32")
            f = paddle.nn.Conv2D(3, 32, 3, stride=2, padding=1)(img)
            f = paddle.nn.functional.relu(f)
            conv2 = paddle.nn.Conv2D(32, 288, 3, stride=(2, 1), padding=1)
            f = conv2(f)
            f = paddle.nn.functional.relu(f)
            f = paddle.nn.functional.max_pool2d(f, kernel_size=(8, 2), stride=(8, 2))
            f = paddle.squeeze(f, axis=[2])  # [1, 288, 25]
            feats = paddle.transpose(f, [0, 2, 1])  # [N, T, C]
            c["I"] = 288
            x = feats
            feed = [img]
        elif c.get("time_major"):
            x = paddle.static.data("x", [c["T"], c["N"], c["I"]], "float32")
            feed = [x]
        else:
            x = paddle.static.data("x", [c["N"], c["T"], c["I"]], "float32")
            feed = [x]
        bidx = 1 if c.get("time_major") else 0
        seq = None
        if c["seqlen"]:
            seq = paddle.static.data("seq_len", [c["N"]], "int32")
            feed.append(seq)
        if c["init"] == "zero":
            helper = LayerHelper("fill_constant_batch_size_like")
            states = []
            for _ in range(S):
                o = helper.create_variable_for_type_inference("float32")
                helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": x},
                                 outputs={"Out": o},
                                 attrs={"shape": [c["layers"] * D, -1, c["H"]], "value": 0.0, "input_dim_idx": bidx,
                                        "output_dim_idx": 1, "dtype": o.dtype, "force_cpu": False})
                states.append(o)
        else:
            # nonzero initial states computed by the model from its input: tanh of a linear map
            # of the first step, [N, I] -> [L*D, N, H]
            first = paddle.slice(x, axes=[1], starts=[0], ends=[1])
            first = paddle.reshape(first, [c["N"], c["I"]])
            states = []
            for k in range(S):
                s = paddle.nn.Linear(c["I"], c["layers"] * D * c["H"])(first)
                s = paddle.tanh(s) * (0.8 if k == 0 else 1.5)
                s = paddle.reshape(s, [c["N"], c["layers"] * D, c["H"]])
                states.append(paddle.transpose(s, [1, 0, 2]))
        cls = paddle.nn.LSTM if c["mode"] == "LSTM" else paddle.nn.GRU
        rnn = cls(c["I"], c["H"], num_layers=c["layers"], direction="bidirect" if c["bi"] else "forward",
                  time_major=bool(c.get("time_major")))
        init = tuple(states) if S == 2 else states[0]
        y, st = rnn(x, init, sequence_length=seq)
        fetch = [y] + (list(st) if S == 2 else [st])
        if c["backbone"]:
            logits = paddle.nn.Linear(2 * c["H"] if c["bi"] else c["H"], 37)(y)
            fetch = [paddle.nn.functional.softmax(logits, axis=2)] + fetch
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    # weights: uniform as Paddle initializes them, a larger spread for a livelier recurrence
    scope = paddle.static.global_scope()
    rng = np.random.RandomState(seed)
    for p in main.all_parameters():
        t = scope.find_var(p.name).get_tensor()
        a = np.array(t)
        if "lstm" in p.name or "gru" in p.name:
            # the statistics of PP-OCR v2.0 mobile rec's LSTM (its .nb): normal, std 0.19
            # (W_ih), 0.33 (W_hh), 0.37 (biases)
            sd = 0.37 if a.ndim == 1 else 0.19 if p.name.endswith(".w_0") else 0.33
            t.set(rng.normal(0, sd, a.shape).astype("float32"), paddle.CPUPlace())
            continue
        t.set((rng.uniform(-1, 1, a.shape) * (0.5 if a.ndim > 1 else 0.3)).astype("float32"), paddle.CPUPlace())
    inp = {}
    if c["backbone"]:
        inp["x"] = rng.uniform(0, 1, (1, 3, 32, 100)).astype("float32")
        # the features as the real model's: mean |x| 0.16 at the LSTM (relu and max pool are
        # positively homogeneous: the last conv scaled scales them)
        fv = exe.run(main.clone(for_test=True), feed=inp, fetch_list=[feats])[0]
        k = 0.16 / max(float(np.abs(fv).mean()), 1e-12)
        for prm in (conv2.weight, conv2.bias):
            t = scope.find_var(prm.name).get_tensor()
            t.set((np.array(t) * k).astype("float32"), paddle.CPUPlace())
    else:
        shp = (c["T"], c["N"], c["I"]) if c.get("time_major") else (c["N"], c["T"], c["I"])
        inp["x"] = rng.uniform(-1.5, 1.5, shp).astype("float32")
    if c["seqlen"]:
        inp["seq_len"] = np.array([c["T"], c["T"] - 4][: c["N"]], dtype="int32")
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    infer = main.clone(for_test=True)
    outs = exe.run(infer, feed=inp, fetch_list=fetch)
    paddle.static.save_inference_model(os.path.join(d, "model"), feed, fetch, exe, program=infer)
    for k, v in inp.items():
        np.save(os.path.join(d, "input_%s.npy" % k), v)
    with open(os.path.join(d, "names.txt"), "w") as f:
        for k, o in enumerate(outs):
            np.save(os.path.join(d, "out_%d.npy" % k), np.asarray(o))
            f.write("%s\n" % fetch[k].name)
    # Paddle's own inference on the saved files: the oracle the tests compare against
    cfg = paddle.inference.Config(os.path.join(d, "model.pdmodel"), os.path.join(d, "model.pdiparams"))
    cfg.disable_gpu()
    cfg.switch_ir_optim(False)
    pred = paddle.inference.create_predictor(cfg)
    for k in pred.get_input_names():
        pred.get_input_handle(k).copy_from_cpu(inp[k])
    pred.run()
    for k, on in enumerate(pred.get_output_names()):
        v = pred.get_output_handle(on).copy_to_cpu()
        if np.abs(v - outs[k]).max() > 1e-5:
            raise SystemExit("%s: Paddle inference and the executor differ on output %d" % (name, k))
    return d


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: make_rnn.py OUT_DIR [CASE ...]")
    cases = sys.argv[2:] or CASES
    for n in cases:
        if n not in CASES:
            raise SystemExit("unknown case %s (one of %s)" % (n, ", ".join(CASES)))
        print(build(n, sys.argv[1]))


if __name__ == "__main__":
    main()
