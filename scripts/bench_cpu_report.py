#!/usr/bin/env python3
"""The tables of scripts/bench_cpu.sh (docs/benchmarks.md "CPU reference vs Paddle-Lite x86"):

    bench_cpu_report.py RESULTS.tsv WORK REPEAT WARMUP ROUNDS [PIN]

RESULTS.tsv: one line per model, thread count and round: model threads round cldiff_cold
cldiff_warm pl_first pl_warm [pl_warm_min pl_warm_max] (ms; nan where a side did not run).
WORK: bench_cpu.sh's work folder (models.tsv; m<k>/inspect.txt, m<k>/timing_t<T>.txt,
m<k>/plops_t<T>.txt). Prints the summary (medians, ratios, their spread over the rounds), the
cold run in parts, and the gap op by op; writes WORK/op_types.tsv and WORK/ops.tsv."""
import glob
import math
import os
import re
import statistics
import sys

NUM = r"(-?[0-9.]+(?:e-?[0-9]+)?)"
FEED_FETCH = ("feed", "fetch")


def med(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.median(v) if v else float("nan")


def lohi(v):
    v = [x for x in v if not math.isnan(x)]
    return (min(v), max(v)) if v else (float("nan"), float("nan"))


def f(x, p=2):
    return "n/a" if x is None or math.isnan(x) else f"{x:.{p}f}"


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) and b > 0 and a >= 0 else float("nan")


def spread(a, b):
    """min a / max b .. max a / min b over the rounds, ' ~' when that holds 1.0"""
    alo, ahi = lohi(a)
    blo, bhi = lohi(b)
    lo, hi = ratio(alo, bhi), ratio(ahi, blo)
    if math.isnan(lo) or math.isnan(hi):
        return "n/a", None
    return f"{lo:.2f}-{hi:.2f}{' ~' if lo <= 1.0 <= hi else ''}", (lo, hi)


def read_ops(path):
    """`cldiff inspect`'s op list: [(index, name, type)]"""
    ops = []
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    on = False
    for ln in lines:
        if ln.startswith("ops:"):
            on = True
            continue
        if on and ln and not ln[0].isspace():
            break
        m = re.match(r"^\s+(\d+) (\S+)\s+(\S+)(\s+\[.*\])?\s*$", ln) if on else None
        if m:
            ops.append((int(m.group(1)), m.group(2), m.group(3)))
    return ops if on else None


def read_cldiff_timing(path):
    """cpu:timing=1's stderr: {'types': {type: (ops, warm ms, prepare ms + cold ms)}, 'heavy': [(op#, layer, type,
    warm ms)], 'warm', 'ops', 'exe': warm median, its ops and executor; 'cold': run 1 with open and prepare}"""
    try:
        txt = open(path, errors="replace").read()
    except OSError:
        return None
    out = {"types": {}, "heavy": []}
    m = re.search(r"warm median " + NUM + r" ms", txt)
    out["warm"] = float(m.group(1)) if m else float("nan")
    m = re.search(r"cold " + NUM + r" ms \(open", txt)
    out["cold"] = float(m.group(1)) if m else float("nan")
    m = re.search(r"warm ops " + NUM + r" \+ executor " + NUM, txt)
    out["ops"], out["exe"] = (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))
    sect = None
    for ln in txt.splitlines():
        if re.match(r"^\s+op type\s+ops\s", ln):
            sect = "t"
            continue
        if re.match(r"^\s+op #\s+layer\s", ln):
            sect = "h"
            continue
        if sect == "t":
            m = re.match(r"^\s+(\S+)\s+(\d+)\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM + r"\s+" + NUM + r"%$", ln)
            if m:
                out["types"][m.group(1)] = (int(m.group(2)), float(m.group(5)), float(m.group(3)) + float(m.group(4)))
                continue
        if sect == "h":
            m = re.match(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+" + NUM + r"\s+" + NUM + r"$", ln)
            if m:
                out["heavy"].append((int(m.group(1)), m.group(2), m.group(3), float(m.group(5))))
                continue
        sect = None
    return out if out["types"] else None


def read_pl_ops(path):
    """pl_probe_runner --op-times: {'instructions': n or None, 'varies': str, 'run_ms', 'op': {k: (med, min, max)}}"""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    out = {"instructions": None, "varies": "", "op": {}, "run_ms": float("nan"), "sum": 0.0}
    for ln in lines:
        w = ln.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "instructions":
            if w[1] == "varies":
                out["varies"] = " ".join(w[2:])
            else:
                out["instructions"] = int(w[1])
        elif w[0] == "run_ms":
            out["run_ms"] = float(w[1])
        elif w[0] == "op" and len(w) == 5:
            out["op"][int(w[1])] = tuple(float(x) for x in w[2:5])
    out["sum"] = sum(v[0] for v in out["op"].values())
    return out


def pass_files(work, k, base, t):
    """the files of every op-by-op pass of bench_cpu.sh: BASE_tT.txt, then BASE_tT.p2.txt, ..."""
    d = os.path.join(work, f"m{k}")
    more = glob.glob(os.path.join(d, f"{base}_t{t}.p*.txt"))
    more = [x for x in more if re.search(r"\.p(\d+)\.txt$", x)]
    return [os.path.join(d, f"{base}_t{t}.txt")] + sorted(more, key=lambda x: int(re.search(r"\.p(\d+)\.txt$", x).group(1)))


def nearest(items, key, target):
    """(pass number, item) of the item whose key is nearest the target (relative); None when there is none"""
    best = None
    for i, it in enumerate(items, 1):
        if it is None:
            continue
        v = key(it)
        d = abs(v / target - 1) if target and target > 0 and not math.isnan(v) and not math.isnan(target) else math.inf
        if best is None or d < best[0]:
            best = (d, i, it)
    return None if best is None else (best[1], best[2])


def main():
    res, work, repeat, warmup, rounds = sys.argv[1:6]
    pin = sys.argv[6] if len(sys.argv) > 6 else ""
    rows = {}
    for line in open(res):
        v = line.rstrip("\n").split("\t")
        if len(v) < 7:
            continue
        x = [float(a) for a in v[3:]]
        while len(x) < 6:
            x.append(x[3])  # no in-process min/max: the median itself
        rows.setdefault((v[0], int(v[1])), []).append(x)
    col = lambda v, i: [r[i] for r in v]  # noqa: E731
    print(f"# cldiff CPU vs Paddle-Lite x86: medians of {rounds} interleaved rounds (ms); cldiff cpu:repeat={repeat} "
          f"(warm = median of runs 2..{repeat}), PL warm = median of --repeat {repeat} runs after --warmup {warmup}"
          + (f"; both pinned: taskset -c {pin}" if pin else "; not pinned"))
    print("# cldiff cold = cold_ms: backend open + prepare (filters packed) + run 1, less the dump writes of its outputs "
          "(cold_probes_ms); PL first = run_ms of its first Run() (PrepareForRun inside; load, input copy and output "
          "fetch outside): docs/cpu-backend.md \"Timing\"")
    print("# spreads: min-max over the rounds of each side; ratio spread = min cldiff / max PL - max cldiff / min PL, "
          "marked ~ where it holds 1.0 (this run cannot tell that ratio from 1.0)")
    print("| model | threads | cldiff cold | cldiff warm | PL first | PL warm | warm ratio cldiff/PL | "
          "cold ratio cldiff/PL first | cldiff warm min-max | PL warm min-max | warm ratio spread | "
          "cldiff cold min-max | PL first min-max | cold ratio spread |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for (m, t), v in sorted(rows.items()):
        cc, cw, pf, pw = (med(col(v, i)) for i in range(4))
        ws, wsp = spread(col(v, 1), col(v, 3))
        cs, csp = spread(col(v, 0), col(v, 2))
        mm = lambda a: "n/a" if math.isnan(lohi(a)[0]) else f"{lohi(a)[0]:.2f}-{lohi(a)[1]:.2f}"  # noqa: E731
        print(f"| {m} | {t} | {f(cc)} | {f(cw)} | {f(pf)} | {f(pw)} | {f(ratio(cw, pw))} | {f(ratio(cc, pf))} | "
              f"{mm(col(v, 1))} | {mm(col(v, 3))} | {ws} | {mm(col(v, 0))} | {mm(col(v, 2))} | {cs} |")
        summary[(m, t)] = (ratio(cw, pw), wsp, ratio(cc, pf), csp, cw, pw, cc, pf)
    have = [k for k, s in summary.items() if not math.isnan(s[0])]
    if have:
        for name, i, j in (("warm", 0, 1), ("cold", 2, 3)):
            ok = [k for k in have if summary[k][i] <= 1.0]
            over = [k for k in have if summary[k][i] > 1.0]
            noisy = [k for k in over if summary[k][j] and summary[k][j][0] <= 1.0]
            print(f"{name}: {len(ok)} of {len(have)} rows within 1.0x Paddle-Lite"
                  f"{' (first run)' if name == 'cold' else ''}; {len(over)} over, {len(noisy)} of them with a spread "
                  f"that holds 1.0 (~)")
    print(f"(work folder: {work}; a n/a PL column: see m*/pl<T>.log there; m<k> is line k of {work}/models.tsv)")

    nan = float("nan")
    names = [ln.split("\t")[0] for ln in open(os.path.join(work, "models.tsv")) if ln.strip()]
    threads = sorted({t for (_, t) in rows})
    # where each cold run went: the parts cpu:timing=1 printed (one process per model and thread count)
    pats = {"cold": r"cold " + NUM + r" ms \(open", "open": r"cold = open " + NUM, "prep": r"\+ prepare " + NUM + r" \(",
            "pool": r"prepare: pool " + NUM, "hooks": r"op hooks \(attributes, packed filters\) " + NUM,
            "ops": r"\+ ops " + NUM, "wops": r"warm ops " + NUM, "exe": r"\+ executor " + NUM,
            "fp": r"open \+ prepare (\d+), run 1", "fr": r"run 1 (\d+),"}
    parts = []
    for k, path in enumerate(names, 1):
        for t in threads:
            cands = []
            for fn in pass_files(work, k, "timing", t):
                try:
                    txt = open(fn, errors="replace").read()
                except OSError:
                    continue
                got = {key: re.search(p, txt) for key, p in pats.items()}
                if all(got.values()):
                    cands.append({key: float(g.group(1)) for key, g in got.items()})
            # with --op-passes N: the pass whose cold is nearest the rounds' median
            best = nearest(cands, lambda v: v["cold"], summary.get((os.path.basename(path), t), [nan] * 8)[6])
            if best:
                parts.append((os.path.basename(path), t, best[1]))
    if parts:
        print()
        print("# cldiff's cold run in parts (ms; one process each, cpu:timing=1: m<k>/timing_t<T>.txt, with --op-passes "
              "the pass nearest the rounds' cold median): prepare = the "
              "pool's fill + the op hooks (attributes, packed filters; summed over threads) + setup; page faults of "
              "prepare and of run 1")
        print("| model | threads | cold | open | prepare | pool | op hooks | ops cold | ops warm | executor | page faults |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, t, v in parts:
            print(f"| {name} | {t} | {v['cold']:.2f} | {v['open']:.3f} | {v['prep']:.3f} | {v['pool']:.3f} | "
                  f"{v['hooks']:.3f} | {v['ops']:.3f} | {v['wops']:.3f} | {v['exe']:.3f} | {int(v['fp'])} + {int(v['fr'])} |")

    # the gap op by op
    tsv_t = open(os.path.join(work, "op_types.tsv"), "w")
    tsv_t.write("model\tthreads\top_type\tops\tcldiff_warm_ms\tpl_warm_ms\tratio\tgap_ms\tcldiff_cold_ms\tpl_first_ms\t"
                "cold_ratio\tcold_gap_ms\n")
    tsv_o = open(os.path.join(work, "ops.tsv"), "w")
    tsv_o.write("model\tthreads\top_index\tlayer\ttype\tpl_warm_ms\tpl_min_ms\tpl_max_ms\tcldiff_warm_ms\tpl_first_ms\n")
    print()
    print(f"# The gap op by op (one process per side, model and thread count, hooks on: cldiff cpu:timing=1, "
          f"m<k>/timing_t<T>.txt; Paddle-Lite pl_probe_runner --op-times, m<k>/plops_t<T>.txt with --warmup {warmup} "
          f"--repeat {repeat}, and its first run after load, m<k>/plops_first_t<T>.txt). Warm: cldiff ms per op type = "
          f"median over its warm runs of the type's sum, PL ms = the sum of its ops' medians. Cold: cldiff = the "
          f"type's prepare hooks + its run-1 time, PL = its instructions in the first Run() (each kernel's "
          f"PrepareForRun inside). PL instruction k = the model's k-th op other than feed/fetch (cldiff inspect), "
          f"used only where the counts agree. 'outside the ops': cldiff's executor (cold: + open, pool, setup), "
          f"PL's Run() around its instructions. Largest warm gap (cldiff - PL) first; types under 1% of both sides "
          f"folded.")
    mapping, gaps, cgaps = [], [], []

    def gapcell(a, b, sign=True):
        return "n/a" if math.isnan(a) or math.isnan(b) else f"{a - b:+.3f}"

    for k, path in enumerate(names, 1):
        name = os.path.basename(path)
        ops = read_ops(os.path.join(work, f"m{k}", "inspect.txt"))
        for t in threads:
            if (name, t) not in rows:
                continue
            sm = summary[(name, t)]
            # with --op-passes N: per side the pass nearest the rounds' medians
            cts = [read_cldiff_timing(x) for x in pass_files(work, k, "timing", t)]
            ctw = nearest(cts, lambda x: x["warm"], sm[4])
            ctc = nearest(cts, lambda x: x["cold"], sm[6])
            plp = nearest([read_pl_ops(x) for x in pass_files(work, k, "plops", t)], lambda x: x["run_ms"], sm[5])
            pfp = nearest([read_pl_ops(x) for x in pass_files(work, k, "plops_first", t)], lambda x: x["run_ms"], sm[7])
            pl, pf = (plp[1] if plp else None), (pfp[1] if pfp else None)
            ct = None
            if ctw:
                w, c = ctw[1], ctc[1]
                ct = dict(w, cold=c["cold"], types={ty: (v[0], v[1], c["types"].get(ty, (0, 0.0, 0.0))[2])
                                                     for ty, v in w["types"].items()})
            print()
            print(f"## {name}, {t} thread{'s' if t > 1 else ''} (warm ratio {f(sm[0])}, cold ratio {f(sm[2])})")
            if len(cts) > 1:
                print(f"op-by-op passes: {len(cts)}; nearest the rounds' medians: cldiff warm pass "
                      f"{ctw[0] if ctw else '-'}, cold pass {ctc[0] if ctc else '-'}; PL warm pass "
                      f"{plp[0] if plp else '-'}, first-run pass {pfp[0] if pfp else '-'}")
            if ct is None:
                print(f"cldiff's per-op table missing (m{k}/timing_t{t}.txt): no op-by-op account")
                continue
            real = [o for o in ops if o[2] not in FEED_FETCH] if ops is not None else []

            def mapping_of(x, what):
                """{op index: (med, min, max)} or None, with the reason printed"""
                if x is None:
                    print(f"Paddle-Lite: no {what} op times (m{k}/plops*_t{t}.log: the runner did not run this model)")
                    return None
                if ops is None:
                    print(f"Paddle-Lite {what} op times not mapped: no op list from cldiff inspect (m{k}/inspect.txt)")
                    return None
                if x["varies"]:
                    print(f"Paddle-Lite {what} op times not mapped: its timed runs ran {x['varies']} instructions")
                    return None
                if x["instructions"] == len(real) and len(x["op"]) == len(real):
                    return {real[i][0]: x["op"][i] for i in range(len(real))}
                print(f"Paddle-Lite {what} op times NOT mapped: {x['instructions']} instructions ran, the model has "
                      f"{len(real)} ops other than feed/fetch ({len(ops)} with them): no PL column")
                return None

            mapped = mapping_of(pl, "warm")
            fmapped = mapping_of(pf, "first-run")
            if pl is not None and ops is not None and not pl["varies"]:
                mapping.append((name, t, mapped is not None, pl["instructions"], len(real), len(ops) - len(real)))
            plt, plf = {}, {}
            for mp, acc in ((mapped, plt), (fmapped, plf)):
                if mp is not None:
                    for idx, nm, ty in ops:
                        if idx in mp:
                            c, n = acc.get(ty, (0.0, 0))
                            acc[ty] = (c + mp[idx][0], n + 1)
            types = sorted(set(ct["types"]) | set(plt))
            ctot = sum(v[1] for v in ct["types"].values())
            ctot_c = sum(v[2] for v in ct["types"].values())
            ptot = sum(v[0] for v in plt.values()) if mapped is not None else nan
            ptot_f = sum(v[0] for v in plf.values()) if fmapped is not None else nan
            tab = []
            for ty in types:
                cn, cms, ccold = ct["types"].get(ty, (0, 0.0, 0.0))
                pms = plt[ty][0] if ty in plt else (nan if ty in FEED_FETCH or mapped is None else 0.0)
                pfs = plf[ty][0] if ty in plf else (nan if ty in FEED_FETCH or fmapped is None else 0.0)
                n = cn or (plt[ty][1] if ty in plt else 0)
                tab.append((ty, n, cms, pms, cms - pms, ccold, pfs, ccold - pfs))
            tab.sort(key=lambda r: (-(r[4] if not math.isnan(r[4]) else -1e9), -r[2]))

            def line(label, n, cms, pms, cc, pfs, cshare, pshare):
                print(f"| {label} | {n} | {cms:.3f} | {f(pms, 3)} | {f(ratio(cms, pms))} | {gapcell(cms, pms)} | "
                      f"{cc:.3f} | {f(pfs, 3)} | {f(ratio(cc, pfs))} | {gapcell(cc, pfs)} | {cshare} | {pshare} |")

            def pct(a, tot):
                return "n/a" if math.isnan(a) or math.isnan(tot) or not tot else f"{100 * a / tot:.1f}%"

            print("| op type | ops | cldiff warm ms | PL warm ms | ratio | gap ms | cldiff cold ms | PL first ms | "
                  "cold ratio | cold gap ms | cldiff share | PL share |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            fold = [0, 0, 0.0, 0.0, 0.0, 0.0]
            for ty, n, cms, pms, gap, ccold, pfs, cgap in tab:
                tsv_t.write(f"{name}\t{t}\t{ty}\t{n}\t{cms:.4f}\t{'' if math.isnan(pms) else f'{pms:.4f}'}\t"
                            f"{'' if math.isnan(ratio(cms, pms)) else f'{ratio(cms, pms):.3f}'}\t"
                            f"{'' if math.isnan(gap) else f'{gap:.4f}'}\t{ccold:.4f}\t"
                            f"{'' if math.isnan(pfs) else f'{pfs:.4f}'}\t"
                            f"{'' if math.isnan(ratio(ccold, pfs)) else f'{ratio(ccold, pfs):.3f}'}\t"
                            f"{'' if math.isnan(cgap) else f'{cgap:.4f}'}\n")
                small = (cms < 0.01 * ctot and (math.isnan(pms) or math.isnan(ptot) or pms < 0.01 * ptot)
                         and ccold < 0.01 * ctot_c)
                if small:
                    fold = [fold[0] + 1, fold[1] + n, fold[2] + cms, fold[3] + (0.0 if math.isnan(pms) else pms),
                            fold[4] + ccold, fold[5] + (0.0 if math.isnan(pfs) else pfs)]
                    continue
                line(ty, n, cms, pms, ccold, pfs, pct(cms, ctot), pct(pms, ptot))
            if fold[0]:
                line(f"({fold[0]} other types)", fold[1], fold[2], fold[3] if mapped is not None else nan, fold[4],
                     fold[5] if fmapped is not None else nan, pct(fold[2], ctot), pct(fold[3], ptot))
            line("all ops", sum(r[1] for r in tab), ctot, ptot, ctot_c, ptot_f, "100%", "n/a" if math.isnan(ptot) else "100%")
            # outside the ops, and the whole hooked runs
            c_out, c_out_cold = ct["warm"] - ctot, ct["cold"] - ctot_c
            p_out = pl["run_ms"] - pl["sum"] if pl else nan
            p_out_f = pf["run_ms"] - pf["sum"] if pf else nan
            line("outside the ops", "", c_out, p_out, c_out_cold, p_out_f, "", "")
            line("whole run (hooked)", "", ct["warm"], pl["run_ms"] if pl else nan, ct["cold"],
                 pf["run_ms"] if pf else nan, "", "")
            # the hooked processes against the rounds' medians: a process the machine disturbed shows here
            hw = [(ct["warm"], sm[4])] + ([(pl["run_ms"], sm[5])] if pl else [])
            off = max((abs(a / b - 1) for a, b in hw if b > 0 and not math.isnan(a) and not math.isnan(b)), default=0)
            noisy = off > 0.25
            hc = [(ct["cold"], sm[6])] + ([(pf["run_ms"], sm[7])] if pf else [])
            coff = max((abs(a / b - 1) for a, b in hc if b > 0 and not math.isnan(a) and not math.isnan(b)), default=0)
            cnoisy = coff > 0.25
            print(f"rounds' medians: cldiff warm {f(sm[4], 3)}, PL warm {f(sm[5], 3)}, cldiff cold {f(sm[6], 3)}, "
                  f"PL first {f(sm[7], 3)} ms (the hooked runs are single processes; the cold ones single runs)"
                  + (f"; DISTURBED: a hooked warm process is {100 * off:.0f}% off its rounds' median, this split is "
                     f"not reliable (rerun)" if noisy else "")
                  + (f"; COLD DISTURBED: a hooked cold run is {100 * coff:.0f}% off its rounds' median" if cnoisy else ""))
            # heaviest ops: cldiff's list (its 15 heaviest) with Paddle-Lite's time of the same op
            if ct["heavy"]:
                print("| op # | layer | type | cldiff warm ms | PL warm ms | ratio |")
                print("|---:|---|---|---:|---:|---:|")
                for idx, layer, ty, cms in ct["heavy"][:8]:
                    pms = mapped[idx][0] if mapped and idx in mapped else nan
                    print(f"| {idx} | {layer} | {ty} | {cms:.3f} | {f(pms, 3)} | {f(ratio(cms, pms))} |")
            cl_heavy = {h[0]: h[3] for h in ct["heavy"]}
            if mapped is not None:
                for idx, nm, ty in ops:
                    if idx in mapped:
                        a, lo, hi = mapped[idx]
                        fr = f"{fmapped[idx][0]:.5f}" if fmapped and idx in fmapped else ""
                        tsv_o.write(f"{name}\t{t}\t{idx}\t{nm}\t{ty}\t{a:.5f}\t{lo:.5f}\t{hi:.5f}\t"
                                    f"{cl_heavy[idx] if idx in cl_heavy else ''}\t{fr}\n")
            if mapped is not None and not math.isnan(sm[0]) and sm[0] > 1.0:
                cand = tab + [("outside the ops", 0, c_out, p_out, c_out - p_out, c_out_cold, p_out_f,
                                c_out_cold - p_out_f)]
                top = sorted((x for x in cand if not math.isnan(x[4]) and x[4] > 0), key=lambda x: -x[4])[:3]
                gaps.append(f"- {name} t{t}: {sm[0]:.2f}x warm ({f(sm[4], 3)} vs {f(sm[5], 3)} ms); hooked: ops "
                            f"{ctot:.3f} vs {ptot:.3f}, outside {f(c_out, 3)} vs {f(p_out, 3)} ms; largest gaps: "
                            + ", ".join(f"{x[0]} {x[4]:+.3f} ms ({f(ratio(x[2], x[3]))}x)" for x in top)
                            + (" (DISTURBED hooked process: rerun)" if noisy else ""))
            if fmapped is not None and not math.isnan(sm[2]) and sm[2] > 1.0:
                cand = tab + [("outside the ops", 0, c_out, p_out, c_out - p_out, c_out_cold, p_out_f,
                                c_out_cold - p_out_f)]
                top = sorted((x for x in cand if not math.isnan(x[7]) and x[7] > 0), key=lambda x: -x[7])[:3]
                cgaps.append(f"- {name} t{t}: {sm[2]:.2f}x cold ({f(sm[6], 3)} vs {f(sm[7], 3)} ms); hooked: ops "
                             f"{ctot_c:.3f} vs {f(ptot_f, 3)}, outside {f(c_out_cold, 3)} vs {f(p_out_f, 3)} ms; "
                             f"largest gaps: " + ", ".join(f"{x[0]} {x[7]:+.3f} ms ({f(ratio(x[5], x[6]))}x)" for x in top)
                             + (" (COLD DISTURBED hooked run: rerun)" if cnoisy else ""))
    tsv_t.close()
    tsv_o.close()
    print()
    ok = [x for x in mapping if x[2]]
    print(f"# op mapping (PL instruction k = op k other than feed/fetch): {len(ok)} of {len(mapping)} model x thread "
          f"rows with op times mapped")
    for name, t, good, ni, nr, nff in mapping:
        if not good:
            print(f"- {name} t{t}: NOT mapped, {ni} instructions vs {nr} ops (+{nff} feed/fetch)")
    if gaps:
        print("# rows over 1.0x warm, where the gap is (cldiff - PL per op type, hooked runs)")
        for g in gaps:
            print(g)
    if cgaps:
        print("# rows over 1.0x cold, where the gap is (cldiff prepare + run 1 - PL first run, per op type, hooked runs)")
        for g in cgaps:
            print(g)
    print(f"(per-op-type and per-op data: {work}/op_types.tsv, {work}/ops.tsv)")

if __name__ == "__main__":
    main()
