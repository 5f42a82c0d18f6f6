"""probes/paddle-lite/pl_probe_runner.cc end to end on this machine: the paddlelite wheel's
lite.so exports Paddle-Lite's C++ API (MobileConfig, CreatePaddlePredictor, Tensor), so the
runner is compiled against Paddle-Lite's public headers and linked against it, runs the
instrumented x86 model, and its outputs must be bit-identical to the Python bridge's and
import into a dump that compare takes. Skips (77) without CLDIFF_PL_HEADERS (a folder with
paddle_api.h and paddle_place.h from Paddle-Lite's lite/api/, same version as the wheel),
g++, the wheel's venv or the shared models."""
import os
import shutil
import subprocess
import sys
import numpy as np
from pl_lib import X86, Checks, cldiff, tmpdir, need_cldiff, need_wheel, need_model, bridge, SRC

need_cldiff()
hdr = os.environ.get("CLDIFF_PL_HEADERS")
if not hdr or not os.path.isfile(os.path.join(hdr, "paddle_api.h")):
    print("SKIP: set CLDIFF_PL_HEADERS to a folder with Paddle-Lite's paddle_api.h and paddle_place.h")
    sys.exit(77)
if not shutil.which("g++"):
    print("SKIP: no g++")
    sys.exit(77)
py = need_wheel()
need_model(X86)
c = Checks("pl_runner")
d = tmpdir("pl_runner")
c.cleanup_later(d)
info = subprocess.run([py, "-c", "import paddlelite, os, sysconfig; print(os.path.dirname(paddlelite.__file__)); "
                       "print(sysconfig.get_config_var('LIBDIR')); print(sysconfig.get_config_var('LDVERSION'))"],
                      capture_output=True, text=True, check=True).stdout.split()
pkg, libdir, ldv = info
lib = os.path.join(d, "lib")
os.makedirs(lib)
os.symlink(os.path.join(pkg, "lite.so"), os.path.join(lib, "liblite_pybind.so"))  # its SONAME
exe = os.path.join(d, "pl_probe_runner")
p = subprocess.run(["g++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror", "-isystem", hdr,
                    os.path.join(SRC, "probes", "paddle-lite", "pl_probe_runner.cc"), "-o", exe,
                    os.path.join(lib, "liblite_pybind.so"), "-L" + libdir, "-lpython" + ldv,
                    "-Wl,-rpath," + ":".join([lib, libdir, os.path.join(pkg, "libs")])], capture_output=True, text=True)
c.ok(p.returncode == 0, "runner compiles against the headers and links against the wheel's lite.so", p.stderr[-800:])
if p.returncode:
    c.done()
nb = os.path.join(d, "probed.nb")
c.rc(cldiff("instrument", X86, "--shape", "x=1,3,96,96", "-o", nb), 0, "instrument")
dev, ref = os.path.join(d, "dev"), os.path.join(d, "ref")
os.makedirs(dev)
os.makedirs(ref)
np.save(os.path.join(dev, "input_0.npy"), np.random.RandomState(5).uniform(-1, 1, (1, 3, 96, 96)).astype("float32"))
env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(pkg, "libs"))  # the wheel loads MKL by name
p = subprocess.run([exe, nb, dev, dev, "--threads", "1"], capture_output=True, text=True, env=env)
c.ok(p.returncode == 0, "runner runs probed.nb", p.stderr[-600:])
b = bridge(py, nb, dev, ref)
c.ok(b.returncode == 0, "the bridge runs it too", b.stderr[-400:])
man = os.path.join(d, "probed.manifest.json")
n = len([f for f in os.listdir(ref) if f.startswith("out_")])
same = sum(np.load(os.path.join(dev, "out_%d.npy" % i)).tobytes() == np.load(os.path.join(ref, "out_%d.npy" % i)).tobytes()
           for i in range(n))
c.ok(n > 100 and same == n, "every output bit-identical to the bridge's", "%d of %d" % (same, n))
r = cldiff("import", dev, "--manifest", man, "-o", os.path.join(d, "phone.h5"))
c.rc(r, 0, "import the runner's outputs")
c.rc(cldiff("run", "--backends", "cpu", X86, "--shape", "x=1,3,96,96", "--input", "x=" + os.path.join(dev, "input_0.npy"),
            "--out", os.path.join(d, "cpu")), 0, "cpu run")
r = cldiff("compare", os.path.join(d, "cpu", "dump.h5"), os.path.join(d, "phone.h5"), "--out", os.path.join(d, "cmp"))
c.rc(r, 0, "compare cpu with the runner's dump")
c.done()
