"""What the MNN tests share (tests/mnn/test_mnn_*.py): the SDK lookup that decides a skip, cldiff
runs, the check list, and reading the dump. Import it after putting this folder on sys.path (the
tests run as scripts: their own folder is there already)."""
import glob
import os
import platform
import shutil
import subprocess
import sys

fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


def finish():
    print(f"{len(fails)} failure(s)")
    sys.exit(1 if fails else 0)


def find_sdk(src, arch=None, env="CLDIFF_MNN_SDK"):
    """The MNN SDK for arch (default: this machine's) from $env or .mnn/sdk-mnn-<arch>-*; None if
    it has no lib/libMNN.so."""
    sdk = os.environ.get(env) or next(
        iter(sorted(glob.glob(os.path.join(src, ".mnn", f"sdk-mnn-{arch or platform.machine()}-*")))), None)
    return sdk if sdk and os.path.exists(os.path.join(sdk, "lib", "libMNN.so")) else None


def require_sdk(src):
    """Skips (exit 77) with the reason where no MNN SDK for this machine or no C++ compiler is found."""
    if not find_sdk(src):
        print("SKIP: no MNN SDK (.mnn/sdk-mnn-<arch>-* or CLDIFF_MNN_SDK): run scripts/setup_mnn.sh")
        sys.exit(77)
    if not (shutil.which("c++") or shutil.which("g++")):
        print("SKIP: no C++ compiler to build the MNN runner (Debian: g++)")
        sys.exit(77)


def run(cldiff, args, env=None, timeout=600, preexec_fn=None):
    """cldiff with args: (exit code, stdout, stderr); no progress line, no colour."""
    e = dict(os.environ, CLDIFF_NO_PROGRESS="1", NO_COLOR="1")
    e.update(env or {})
    r = subprocess.run([cldiff, *args], capture_output=True, text=True, errors="replace", env=e, timeout=timeout,
                       preexec_fn=preexec_fn)
    return r.returncode, r.stdout, r.stderr


def attrs(dump, run_name):
    """A run's attributes (strings decoded) and its last dataset."""
    import h5py
    with h5py.File(dump, "r") as f:
        a = dict(f["runs"][run_name].attrs)
        last = sorted(f["runs"][run_name].keys())[-1]
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}, f["runs"][run_name][last][()]


def last_output(dump, run_name):
    return attrs(dump, run_name)[1]


def tensor(dump, run_name, name):
    """The dataset of tensor `name` in a run (datasets are named <k>_<tensor>), or None."""
    import h5py
    with h5py.File(dump, "r") as f:
        r = f["runs"][run_name]
        for k in r.keys():
            if k.split("_", 1)[1] == name:
                return r[k][()]
    return None
