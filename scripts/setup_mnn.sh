#!/usr/bin/env bash
# MNN for cldiff (docs/mnn.md): unpacks the MNN SDKs ../shared/mnn/sdk-*.tar.xz (CD_MNN_SDK_ARCHIVES
# names another folder) into .mnn/<archive name>/ (include/MNN, lib/libMNN.so), where cldiff looks
# for them by default, and makes .venv-mnn with the PyPI `mnn` wheel (mnnconvert, MNN.expr: the
# model makers of scripts/mnn/ and an independent oracle) and onnx. CLDIFF_SKIP_MNN_VENV=1 skips
# the venv. Called by scripts/setup.sh; safe to run again (what is there is kept).
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
