#!/usr/bin/env bash
# The model zoo (docs/zoo.md): .venv-paddle with paddlepaddle 2.6.2, then scripts/zoo/build.py
# into .zoo/ (cached: models already built are skipped). Called by scripts/setup.sh; runs alone
# too. Skips with a note, never fails setup, where the packages are not available:
#   - paddlepaddle==2.6.2 has wheels for CPython 3.8-3.12 on x86-64/aarch64 Linux; .venv-paddle
#     is made with python3.11 (pyenv's, one on PATH, or Debian 12's python3), numpy<2 and
#     protobuf<4 (2.6.2's generated protobuf code needs them);
#   - Opt comes from .venv-pl (the paddlelite wheel, made by setup.sh); without it the zoo holds
#     the Paddle programs, inputs and Paddle's outputs but no .nb.
# CLDIFF_SKIP_ZOO=1 skips all of it; CLDIFF_ZOO_ONLY=a,b builds only those models.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
[ "${CLDIFF_SKIP_ZOO:-0}" = 1 ] && { echo "setup: zoo skipped (CLDIFF_SKIP_ZOO=1)"; exit 0; }
venv=$here/.venv-paddle
ok() { "$venv/bin/python" -c 'import paddle, numpy; assert numpy.__version__ < "2"; assert paddle.__version__ == "2.6.2"' 2>/dev/null; }
if ! ok; then
  py=
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11.*/bin/python "$(command -v python3.11 || true)" "$(command -v python3 || true)"; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    case "$v" in 3.8|3.9|3.10|3.11|3.12) "$c" -c 'import venv, ensurepip' 2>/dev/null && { py=$c; break; } ;; esac
  done
  if [ -z "$py" ]; then
    echo "setup: note: no CPython 3.8-3.12 with venv/ensurepip found: the model zoo is not built" \
         "(install python3.11 and python3-venv, then run scripts/setup_zoo.sh)" >&2
    exit 0
  fi
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv" || { echo "setup: note: could not make $venv; zoo not built" >&2; exit 0; }
  "$venv/bin/pip" install -q --disable-pip-version-check paddlepaddle==2.6.2 'numpy<2' 'protobuf>=3.20,<4' \
    || { echo "setup: note: pip could not install paddlepaddle==2.6.2 into .venv-paddle; zoo not built" >&2; exit 0; }
  ok || { echo "setup: note: .venv-paddle does not import paddle 2.6.2; zoo not built" >&2; exit 0; }
fi
[ -x "$here/.venv-pl/bin/python" ] || echo "setup: note: no .venv-pl (paddlelite's Opt): the zoo gets no .nb files" >&2
only=()
[ -n "${CLDIFF_ZOO_ONLY:-}" ] && only=(--only "$CLDIFF_ZOO_ONLY")
mkdir -p "$here/.zoo"
echo "setup: building the model zoo into .zoo/ (scripts/zoo/build.py; cached)"
if ! nice "$venv/bin/python" "$here/scripts/zoo/build.py" --out "$here/.zoo" "${only[@]}" 2>"$here/.zoo/build.log" \
     | grep -v '^\[zoo [0-9:]*\] .* cached '; then
  :
fi
n=$(grep -c . "$here/.zoo/manifest.jsonl" 2>/dev/null || echo 0)
echo "setup: the zoo holds $n models (.zoo/manifest.jsonl; Paddle's log in .zoo/build.log)"
exit 0
