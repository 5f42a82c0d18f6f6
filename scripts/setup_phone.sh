#!/usr/bin/env bash
# Builds the private arm64 sysroot of the paddle-lite-phone backend (docs/paddle-lite-phone.md):
# Debian's arm64 PoCL 3.1, its ICD loader and what they load, DOWNLOADED and EXTRACTED (never
# installed: an :arm64 package installed here would replace the host's compilers and PoCL) into
#
#   scripts/setup_phone.sh [DEST]      DEST default: .phone/sysroot in the source tree
#                                      ($CLDIFF_PHONE_SYSROOT when set)
#
# apt runs with a state of its own under DEST/../apt (its own lists for arm64, an empty status
# file), so the host's dpkg architectures and package lists are not touched. Then the sysroot
# fixes qemu-user needs (merged /usr, libOpenCL.so, an .icd file with the host path of libpocl)
# and the linker wrapper PoCL's in-process clang calls to link every kernel (DEST/../tools).
# Idempotent: a complete sysroot (DEST/.complete) is left as it is. Exit 0 on success; 1 with a
# message naming what failed (no network to the Debian mirror, a package that did not extract).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest=${1:-${CLDIFF_PHONE_SYSROOT:-$here/.phone/sysroot}}
case "$dest" in /*) ;; *) dest="$PWD/$dest" ;; esac
base=$(dirname "$dest")
apt_dir=$base/apt
tools=$base/tools
if [ -f "$dest/.complete" ] && [ -x "$tools/ld" ]; then
  echo "setup_phone: the arm64 sysroot is complete: $dest"
  exit 0
fi
for t in apt-get apt-cache dpkg-deb aarch64-linux-gnu-ld qemu-aarch64; do
  command -v "$t" >/dev/null || {
    echo "setup_phone: $t not found (Debian: apt-get install ${t/aarch64-linux-gnu-ld/binutils-aarch64-linux-gnu}" \
         "${t/qemu-aarch64/qemu-user}; scripts/setup.sh installs both)" >&2
    exit 1
  }
done
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
: >"$apt_dir/status"
# apt with a private state: arm64 only, the host's sources and keys, nothing of the host's dpkg
aptc=(-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
      -o "Dir::Cache=$apt_dir/cache" -o "APT::Architecture=arm64" -o "APT::Architectures::=arm64"
      -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
echo "setup_phone: arm64 package lists (private apt state in $apt_dir)"
if ! apt-get "${aptc[@]}" -qq update; then
  echo "setup_phone: apt-get update for arm64 failed (no access to the Debian mirror of /etc/apt/sources.list.d?)" >&2
  exit 1
fi
# The closure of the runtime: PoCL, its ICD, the ICD loader; libc6-dev and libgcc-12-dev link
# the kernels; libstdc++6/libgomp1 load the Paddle-Lite library; zlib1g for libLLVM.
roots=(libpocl2 pocl-opencl-icd ocl-icd-libopencl1 libc6-dev libgcc-12-dev libstdc++6 libgomp1 zlib1g)
mapfile -t pkgs < <(apt-cache "${aptc[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${roots[@]}" | sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)\(:arm64\)\?$/\1/p' | sort -u)
if [ ${#pkgs[@]} -lt 10 ]; then
  echo "setup_phone: the dependency closure of ${roots[*]} has ${#pkgs[@]} packages (expected ~60): the arm64 lists are incomplete" >&2
  exit 1
fi
# packages that are virtual or only executables we never run (the arm64 clang and binutils
# cannot be exec'd under qemu-user without binfmt) are left out
skip=' clang-15 binutils binutils-aarch64-linux-gnu llvm-15-linker-tools '
want=()
for p in "${pkgs[@]}"; do
  case "$skip" in *" $p "*) continue ;; esac
  want+=("$p")
done
echo "setup_phone: downloading ${#want[@]} arm64 packages into $apt_dir/debs"
(cd "$apt_dir/debs" && for p in "${want[@]}"; do
   ls "$p"_*.deb >/dev/null 2>&1 && continue
   apt-get "${aptc[@]}" -qq download "$p:arm64" 2>/dev/null || apt-get "${aptc[@]}" -qq download "$p" 2>/dev/null \
     || echo "setup_phone: note: $p has no arm64 download (a virtual package?)" >&2
 done)
for must in libpocl2 pocl-opencl-icd ocl-icd-libopencl1 libpocl2-common libllvm15 libclang-cpp15 libc6 libc6-dev \
            libgcc-12-dev libstdc++6 zlib1g libhwloc15; do
  ls "$apt_dir/debs/${must}"_*.deb >/dev/null 2>&1 || { echo "setup_phone: $must was not downloaded" >&2; exit 1; }
done
tmp="$dest.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
echo "setup_phone: extracting into $dest"
for d in "$apt_dir"/debs/*.deb; do
  dpkg-deb -x "$d" "$tmp" || { echo "setup_phone: $d did not extract" >&2; rm -rf "$tmp"; exit 1; }
done
# fix 1: merged /usr (qemu -L redirects some syscalls only; the ELF interpreter must resolve)
if [ -d "$tmp/lib" ] && [ ! -L "$tmp/lib" ]; then
  mkdir -p "$tmp/usr/lib"
  cp -a "$tmp/lib/." "$tmp/usr/lib/"
  rm -rf "$tmp/lib"
fi
ln -sfn usr/lib "$tmp/lib"
if [ -d "$tmp/bin" ] && [ ! -L "$tmp/bin" ]; then
  mkdir -p "$tmp/usr/bin"; cp -a "$tmp/bin/." "$tmp/usr/bin/"; rm -rf "$tmp/bin"
fi
ln -sfn usr/bin "$tmp/bin"
ml=$tmp/usr/lib/aarch64-linux-gnu
[ -e "$tmp/usr/lib/ld-linux-aarch64.so.1" ] || { echo "setup_phone: no ld-linux-aarch64.so.1 in the sysroot" >&2; exit 1; }
# fix 2: the unversioned libOpenCL.so Paddle-Lite dlopens
ln -sfn libOpenCL.so.1 "$ml/libOpenCL.so"
# fix 3: the .icd file holds the HOST path of libpocl (qemu 7.2 does not apply -L to faccessat,
# PoCL checks its kernel library beside it with faccessat)
pocl=$(cd "$ml" && ls libpocl.so.2.* 2>/dev/null | head -1)
[ -n "$pocl" ] || { echo "setup_phone: libpocl.so.2.* missing in $ml" >&2; exit 1; }
mkdir -p "$tmp/etc/OpenCL/vendors"
rm -f "$tmp/etc/OpenCL/vendors/"*.icd
mv "$tmp" "$dest.new.$$"
rm -rf "$dest"
mv "$dest.new.$$" "$dest"
echo "$dest/usr/lib/aarch64-linux-gnu/$pocl" >"$dest/etc/OpenCL/vendors/pocl.icd"
ls "$dest"/usr/share/pocl/kernel-aarch64-*.bc >/dev/null 2>&1 || { echo "setup_phone: PoCL's aarch64 kernel library is missing" >&2; exit 1; }
# fix 4: the linker PoCL's clang driver execs (aarch64-unknown-linux-gnu-ld, else ld on PATH):
# the host's cross ld, with the driver's sysroot-relative paths mapped into the sysroot
mkdir -p "$tools"
cat >"$tools/ld.tmp" <<EOF
#!/bin/bash
# written by scripts/setup_phone.sh: PoCL's kernel link for the arm64 sysroot $dest
R='$dest'; args=()
for a in "\$@"; do case "\$a" in
  -L/*) d=\${a#-L}; if [ -e "\$R\$d" ]; then args+=("-L\$R\$d"); else args+=("\$a"); fi ;;
  /*) if [ ! -e "\$a" ] && [ -e "\$R\$a" ]; then args+=("\$R\$a"); else args+=("\$a"); fi ;;
  *) args+=("\$a") ;; esac; done
exec /usr/bin/aarch64-linux-gnu-ld --sysroot="\$R" "\${args[@]}"
EOF
chmod +x "$tools/ld.tmp"
mv "$tools/ld.tmp" "$tools/ld"
ln -sfn ld "$tools/aarch64-unknown-linux-gnu-ld"
date -u +%FT%TZ >"$dest/.complete"
echo "setup_phone: arm64 sysroot ready: $dest ($(du -sm "$dest" | cut -f1) MB), linker wrapper $tools/ld"
