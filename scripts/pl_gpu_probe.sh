#!/usr/bin/env bash
# Probe of the GPU machine for Paddle-Lite's own OpenCL backend (docs/paddle-lite-opencl.md).
# Run from the repository root on the device machine:
#     bash scripts/pl_gpu_probe.sh            # facts only (no carried files needed)
# With the pack that scripts/pl_gpu_pack.sh makes here (carry .plcarry, under 64 MiB):
#     bash scripts/pl_gpu_probe.sh            # also unpacks .plcarry/plocl.tar.xz and runs the wheel
# It writes its findings to $OUT/pl_gpu_probe.txt when OUT is set (the run tool's folder), else
# to stdout only. It changes nothing outside /tmp and the repository, except one thing it says
# it would need and does only with PL_PROBE_FIX=1: the unversioned libOpenCL.so link.
set -u
REPORT=${OUT:-/tmp}/pl_gpu_probe.txt
exec > >(tee "$REPORT") 2>&1
say() { printf '%s\n' "$*"; }
say "== machine"
uname -m; (. /etc/os-release 2>/dev/null && say "$PRETTY_NAME"); ldd --version 2>/dev/null | head -1
say "python3: $(python3 --version 2>&1)"; for v in 3.8 3.10 3.12; do command -v python$v >/dev/null && say "python$v: $(command -v python$v)"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || say "nvidia-smi: none"

say "== OpenCL loader and ICDs"
ls -l /etc/OpenCL/vendors/ 2>/dev/null; for f in /etc/OpenCL/vendors/*.icd; do [ -f "$f" ] && say "$f: $(cat "$f")"; done
# Paddle-Lite's cl_wrapper.cc dlopen()s fixed absolute paths on Linux, the unversioned name only:
# /usr/lib/aarch64-linux-gnu/libOpenCL.so, /usr/lib/arm-linux-gnueabihf/libOpenCL.so,
# /usr/lib/libOpenCL.so, /opt/intel/.../libOpenCL.so, /usr/lib/x86_64-linux-gnu/libOpenCL.so
found=""
for p in /usr/lib/libOpenCL.so /usr/lib/x86_64-linux-gnu/libOpenCL.so; do [ -e "$p" ] && found="$p"; done
say "libOpenCL.so.1: $(ls /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 2>/dev/null || echo missing)"
if [ -n "$found" ]; then say "unversioned libOpenCL.so for Paddle-Lite: $found"
else
  say "unversioned libOpenCL.so for Paddle-Lite: MISSING (Paddle-Lite would log 'Failed to find and initialize Opencl library')"
  if [ "${PL_PROBE_FIX:-0}" = 1 ] && [ -w /usr/lib/x86_64-linux-gnu ]; then
    ln -s libOpenCL.so.1 /usr/lib/x86_64-linux-gnu/libOpenCL.so && say "  made /usr/lib/x86_64-linux-gnu/libOpenCL.so -> libOpenCL.so.1"
  else say "  fix: ln -s libOpenCL.so.1 /usr/lib/x86_64-linux-gnu/libOpenCL.so (PL_PROBE_FIX=1 does it)"; fi
fi
say "== OpenCL devices (ctypes; what Paddle-Lite's CLRuntime would see: GPU devices first, else CPU)"
python3 - <<'PY'
import ctypes, ctypes.util
try:
    cl = ctypes.CDLL("libOpenCL.so.1")
except OSError as e:
    print("cannot load libOpenCL.so.1:", e); raise SystemExit
u32, sz = ctypes.c_uint32, ctypes.c_size_t
n = u32()
cl.clGetPlatformIDs(0, None, ctypes.byref(n))
plats = (ctypes.c_void_p * n.value)()
cl.clGetPlatformIDs(n.value, plats, None)
def info(fn, obj, param):
    s = sz(); fn(obj, param, 0, None, ctypes.byref(s)); b = ctypes.create_string_buffer(s.value)
    fn(obj, param, s.value, b, None); return b.raw
for p in plats:
    name = info(cl.clGetPlatformInfo, ctypes.c_void_p(p), 0x0902).rstrip(b"\0").decode()
    nd = u32(); cl.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), 0, None, ctypes.byref(nd))
    devs = (ctypes.c_void_p * nd.value)(); cl.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), nd.value, devs, None)
    for d in devs:
        dn = info(cl.clGetDeviceInfo, ctypes.c_void_p(d), 0x102B).rstrip(b"\0").decode()
        ext = info(cl.clGetDeviceInfo, ctypes.c_void_p(d), 0x1030).rstrip(b"\0").decode()
        typ = int.from_bytes(info(cl.clGetDeviceInfo, ctypes.c_void_p(d), 0x1000)[:8], "little")
        img = int.from_bytes(info(cl.clGetDeviceInfo, ctypes.c_void_p(d), 0x1016)[:4], "little")
        print("%s | %s | type %s | images %s | cl_khr_fp16 %s" % (name, dn, {2: "CPU", 4: "GPU"}.get(typ, typ),
              bool(img), "yes" if "cl_khr_fp16" in ext else "NO (Paddle-Lite: CL_PRECISION_FP16 is LOG(FATAL), FP32 only)"))
PY

say "== paddlelite wheel (cp38/cp310 only; this machine's python3 cannot install it)"
PACK=.plcarry/plocl.tar.xz
if [ -f "$PACK" ]; then
  D=/tmp/plocl; rm -rf "$D"; mkdir -p "$D"; tar -xJf "$PACK" -C "$D"
  PY="$D/python/bin/python3.10"
  export PYTHONHOME="$D/python" LD_LIBRARY_PATH="$D/python/lib:${LD_LIBRARY_PATH:-}" PYTHONPATH="$D/site-packages"
  "$PY" -c "import sys, numpy, paddlelite.lite as l; print('carried CPython', sys.version.split()[0], 'numpy', numpy.__version__, 'paddlelite imports')" || say "carried CPython/wheel does not start"
  "$PY" scripts/pl_ocl.py has-opencl; say "has-opencl exit $?"
  if [ -d .plcarry/models ]; then
    for nb in .plcarry/models/*_opencl.nb; do
      [ -f "$nb" ] || continue
      in=${nb%_opencl.nb}_in0.npy
      say "-- $nb (Opt's OpenCL model) with the wheel, --force (expect no OpenCL work: placeholder kernels)"
      "$PY" scripts/pl_ocl.py run "$nb" --input "$in" --out /tmp/plocl/out.npz --force 2>&1 | tail -3
    done
    for nb in .plcarry/models/*_x86.nb; do
      [ -f "$nb" ] || continue
      in=${nb%_x86.nb}_in0.npy
      say "-- $nb (Opt's x86 model) with the wheel"
      "$PY" scripts/pl_ocl.py run "$nb" --input "$in" --out /tmp/plocl/out_x86.npz 2>&1 | tail -2
    done
  fi
else
  say "no $PACK (make it with scripts/pl_gpu_pack.sh on the dev machine and carry .plcarry)"
fi
say "== report: $REPORT"
