"""Shared helpers of the end-to-end tests (tests/e2e/test_*.py).

Every test script is run by ctest as `python tests/e2e/test_X.py` with the environment:
  CLDIFF            the cldiff executable under test (default: build-e2e/cldiff)
  CD_SOURCE_DIR     the source tree (default: two levels above this file)
  CD_SHARED_MODELS  the real-model folder (default: CD_SOURCE_DIR/../shared/models)
A script collects its checks with `Checks`, prints one line per check and exits 0 when all
passed, 1 otherwise, and SKIP (77, ctest SKIP_RETURN_CODE) when a prerequisite is absent.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import cldiff_dump  # noqa: E402

SKIP = 77
SRC = os.environ.get("CD_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLDIFF = os.environ.get("CLDIFF") or os.path.join(SRC, "build-e2e", "cldiff")
SHARED = os.environ.get("CD_SHARED_MODELS") or os.path.join(SRC, "..", "shared", "models")
PY = sys.executable
CHECK_DUMP = os.path.join(SRC, "tests", "e2e", "check_dump.py")
TINY = os.path.join(SRC, "testdata", "mobilenet_tiny.nb")
MULTI = os.path.join(SRC, "testdata", "multi_input.nb")


class Result:
    def __init__(self, argv, rc, out, err, secs):
        self.argv, self.rc, self.out, self.err, self.secs = argv, rc, out, err, secs

    def cmd(self):
        return " ".join(a if a and " " not in a else "'%s'" % a for a in self.argv)

    def tail(self, n=800):
        t = (self.err.strip() + "\n" + self.out.strip()).strip()
        return t[-n:]


def cldiff(*args, timeout=600, env=None):
    """Runs cldiff with `args`; returns a Result (never raises on a non-zero exit)."""
    argv = [CLDIFF] + [str(a) for a in args]
    e = dict(os.environ)
    e["CLDIFF_NO_PROGRESS"] = "1"
    e.setdefault("NO_COLOR", "1")
    if env:
        e.update(env)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as x:
        rc, out, err = -999, (x.stdout or b"").decode(errors="replace") if isinstance(x.stdout, bytes) else (x.stdout or ""), \
            "timed out after %ds" % timeout
    return Result(argv, rc, out, err, time.monotonic() - t0)


def check_dump(path, runs=""):
    """Runs check_dump.py; returns (ok, output)."""
    argv = [PY, CHECK_DUMP, path, "--quiet"]
    if runs:
        argv += ["--expect-runs", runs]
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def shared_models():
    """{file name: [--shape args]} of every .nb in the shared folder, or None when absent."""
    if not os.path.isdir(SHARED):
        return None
    shapes = {}
    sp = os.path.join(SHARED, "shapes.txt")
    if os.path.isfile(sp):
        for line in open(sp):
            line = line.split("#", 1)[0].split()
            if line:
                shapes[line[0]] = line[1:]
    # The meta-0 file stores no variable shapes at all (its VarDescs carry junk, see
    # docs/nb-format.md §1.6), and shapes.txt has no line for it: MANIFEST.md says it is the same
    # network as its meta-2 twin, whose input is declared [-1,3,128,128].
    shapes.setdefault("mask_detector_fp32_arm_meta0_7735976.nb",
                      ["@HUB_pyramidbox_lite_mobile_mask@image=1,3,128,128"])
    out = {}
    for name in sorted(os.listdir(SHARED)):
        if name.endswith(".nb"):
            args = []
            for s in shapes.get(name, []):
                args += ["--shape", s]
            out[name] = args
    return out


def need_shared(*names):
    """Exits with SKIP (printing why) unless the shared folder and the named models exist."""
    m = shared_models()
    if m is None:
        print("SKIP: shared model folder %s not found (set CD_SHARED_MODELS)" % SHARED)
        sys.exit(SKIP)
    for n in names:
        if n not in m:
            print("SKIP: %s not in %s" % (n, SHARED))
            sys.exit(SKIP)
    return m


def need_cldiff():
    if not os.access(CLDIFF, os.X_OK):
        print("FAIL: cldiff executable %s not found (set CLDIFF)" % CLDIFF)
        sys.exit(1)


def tmpdir(tag):
    d = tempfile.mkdtemp(prefix="cldiff_e2e_%s_" % tag)
    return d


def load_json(path):
    with open(path) as f:
        return json.load(f)


def astr(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
        if isinstance(v, bytes):
            return v.decode("utf-8")
    return v


def run_datasets(h5file, run):
    """[(name, dataset, metadata dict)] of /runs/<run> in op order (scripts/cldiff_dump.py)."""
    g = h5file["runs"][run]
    return [(t["dataset"], g[t["dataset"]], t) for t in cldiff_dump.tensors(g)]


def final_outputs(h5file, run, ops_outputs):
    """{tensor: array} of the datasets written for the tensors in ops_outputs (the model's
    fetch inputs), the last write of each name (names are reused inside a model)."""
    res = {}
    for k, ds, meta in run_datasets(h5file, run):
        t = meta["tensor"]
        if t in ops_outputs and ds.shape is not None:
            res[t] = ds[()]
    return res


def fetch_tensors(h5file):
    """Names of the tensors read by the model's fetch ops, from /model/ops."""
    names = []
    for row in h5file["model/ops"][()]:
        if astr(row["type"]) == "fetch":
            for slot in astr(row["inputs"]).split(";"):
                if "=" in slot:
                    names += [x for x in slot.split("=", 1)[1].split(",") if x]
    return names


class Checks:
    """Collects named checks; `done()` prints a summary and exits."""

    def __init__(self, name):
        self.name = name
        self.n = 0
        self.failed = []
        self.t0 = time.monotonic()
        self.keep = []

    def ok(self, cond, what, detail=""):
        self.n += 1
        if cond:
            print("ok   %s" % what, flush=True)
        else:
            self.failed.append(what)
            print("FAIL %s%s" % (what, (": " + detail) if detail else ""), flush=True)
        return bool(cond)

    def rc(self, res, want, what):
        return self.ok(res.rc == want, "%s: exit %d" % (what, want),
                       "got %d from `%s`\n%s" % (res.rc, res.cmd(), res.tail()))

    def cleanup_later(self, d):
        self.keep.append(d)

    def done(self):
        for d in self.keep:
            if not self.failed or os.environ.get("CD_E2E_CLEAN") == "1":
                shutil.rmtree(d, ignore_errors=True)
            else:
                print("kept %s for inspection" % d)
        secs = time.monotonic() - self.t0
        print("%s: %d checks, %d failed (%.1f s)" % (self.name, self.n, len(self.failed), secs))
        for f in self.failed:
            print("  failed: %s" % f)
        sys.exit(1 if self.failed else 0)
