#!/usr/bin/env bash
# MNN for cldiff (docs/mnn.md): unpacks the MNN SDKs ../shared/mnn/sdk-*.tar.xz (CD_MNN_SDK_ARCHIVES
# names another folder) into .mnn/<archive name>/ (include/MNN, lib/libMNN.so), where cldiff looks
# for them by default, and makes .venv-mnn with the PyPI `mnn` wheel (mnnconvert, MNN.expr: the
# model makers of scripts/mnn/ and an independent oracle) and onnx. CLDIFF_SKIP_MNN_VENV=1 skips
# the venv. Called by scripts/setup.sh; safe to run again (what is there is kept).
# An aarch64 archive (sdk-mnn-aarch64-*.tar.xz) is unpacked the same way: mnn-arm's SDK.
# CLDIFF_BUILD_MNN_ARM=1 (opt-in: 25-60 min on 2 cores) builds the aarch64 SDK for mnn-arm from
# MNN's source with scripts/mnn/build_mnn_sdk.sh into .mnn/sdk-mnn-aarch64-debian12 when no
# sdk-mnn-aarch64-* is in .mnn/ yet; CLDIFF_MNN_SRC names the source (an MNN tree or git
# directory; default /work/.mirror/alibaba+MNN/repo, the search tool's fetch of alibaba/MNN).
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
archives=${CD_MNN_SDK_ARCHIVES:-$here/../shared/mnn}
for a in "$archives"/sdk-*.tar.xz; do
  [ -f "$a" ] || continue
  name=$(basename "$a" .tar.xz)
  dest=$here/.mnn/$name
  [ -f "$dest/lib/libMNN.so" ] && [ -f "$dest/include/MNN/Interpreter.hpp" ] && continue
  mkdir -p "$here/.mnn"
  tmp=$(mktemp -d "$here/.mnn/.unpack.XXXXXX")
  # the archive holds include/ and lib/ at its top (or one folder named like it)
  if tar -xJf "$a" -C "$tmp"; then
    src=$tmp
    [ -d "$tmp/$name/lib" ] && src=$tmp/$name
    if [ -f "$src/lib/libMNN.so" ] && [ -f "$src/include/MNN/Interpreter.hpp" ]; then
      rm -rf "$dest"
      mkdir -p "$dest"
      mv "$src/include" "$src/lib" "$dest/"
      echo "setup_mnn: unpacked $a into $dest"
    else
      echo "setup_mnn: note: $a holds no lib/libMNN.so and include/MNN/Interpreter.hpp; left out" >&2
    fi
  fi
  rm -rf "$tmp"
done
if [ "${CLDIFF_BUILD_MNN_ARM:-0}" = 1 ]; then
  have=""
  for d in "$here"/.mnn/sdk-mnn-aarch64-*; do [ -f "$d/lib/libMNN.so" ] && have=$d; done
  if [ -n "$have" ]; then
    echo "setup_mnn: the aarch64 SDK for mnn-arm is there: $have"
  else
    msrc=${CLDIFF_MNN_SRC:-/work/.mirror/alibaba+MNN/repo}
    if [ ! -e "$msrc" ]; then
      echo "setup_mnn: note: CLDIFF_BUILD_MNN_ARM=1 but no MNN source at $msrc (CLDIFF_MNN_SRC names an MNN tree or git directory)" >&2
    else
      mkdir -p "$here/.mnn"
      echo "setup_mnn: building the aarch64 MNN SDK for mnn-arm from $msrc (25-60 min)"
      if "$here/scripts/mnn/build_mnn_sdk.sh" aarch64 "$msrc" "$here/.mnn/sdk-mnn-aarch64-debian12" --jobs "${CLDIFF_MNN_JOBS:-2}"; then
        echo "setup_mnn: .mnn/sdk-mnn-aarch64-debian12 built (mnn-arm)"
      else
        rm -rf "$here/.mnn/sdk-mnn-aarch64-debian12"
        echo "setup_mnn: note: the aarch64 MNN SDK build failed (see above); mnn-arm stays unavailable" >&2
      fi
    fi
  fi
fi
if [ "${CLDIFF_SKIP_MNN_VENV:-0}" != 1 ] && ! "$here/.venv-mnn/bin/python" -c 'import MNN, onnx' 2>/dev/null; then
  py=$(command -v python3)
  if [ -n "$py" ] && "$py" -m venv "$here/.venv-mnn" \
     && "$here/.venv-mnn/bin/pip" install -q "mnn==3.6.1" onnx numpy; then
    echo "setup_mnn: .venv-mnn has the mnn wheel (mnnconvert) and onnx"
  else
    echo "setup_mnn: note: could not make .venv-mnn with the mnn wheel: scripts/mnn/make_models.py needs it" >&2
  fi
fi
exit 0
