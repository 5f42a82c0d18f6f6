"""Helpers of the paddle-lite backend tests (tests/paddlelite/test_*.py): the e2e helpers plus
the venv that scripts/setup.sh makes for Paddle-Lite's own runtime (.venv-pl)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_lib import SKIP, SRC, SHARED, cldiff, Checks, tmpdir, need_cldiff  # noqa: E402,F401

X86 = os.path.join(SHARED, "ppocr_v3_det_fp32_x86_v2.12.nb")
MASK = os.path.join(SHARED, "mask_detector_fp32_arm_v2.10rc.nb")
BRIDGE = os.path.join(SRC, "scripts", "pl_bridge.py")


def pl_python():
    p = os.environ.get("CLDIFF_PL_PYTHON") or os.path.join(SRC, ".venv-pl", "bin", "python")
    return p if os.access(p, os.X_OK) else None


def need_wheel():
    """Exits SKIP (reason printed, so ctest -V shows it) unless the bridge can load the wheel."""
    py = pl_python()
    if not py:
        print("SKIP: no .venv-pl (run scripts/setup.sh: it makes it with paddlelite==2.13rc0) and no CLDIFF_PL_PYTHON")
        sys.exit(SKIP)
    p = subprocess.run([py, BRIDGE, "--probe"], capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIP: %s cannot load paddlelite: %s" % (py, p.stderr.strip()[-300:]))
        sys.exit(SKIP)
    return py


def need_model(path):
    if not os.path.isfile(path):
        print("SKIP: %s not found (set CD_SHARED_MODELS)" % path)
        sys.exit(SKIP)


def bridge(py, model, indir, outdir):
    p = subprocess.run([py, BRIDGE, "--model", model, "--inputs", indir, "--out", outdir], capture_output=True, text=True)
    return p


def kernel_lists(py, model_ops):
    """(host_ops, target_ops) for retargeting ARM records to x86, from the wheel's op table."""
    p = subprocess.run([py, BRIDGE, "--kernels", "x86"], capture_output=True, text=True, check=True)
    ops = json.loads(p.stdout[p.stdout.index("{"):])["ops"]
    host = [t for t in model_ops if "host" in ops.get(t, []) and "x86" not in ops.get(t, [])]
    tgt = [t for t in model_ops if "x86" in ops.get(t, []) and "host" not in ops.get(t, [])]
    return ",".join(host), ",".join(tgt)
