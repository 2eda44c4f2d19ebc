#!/usr/bin/env bash
# A separate Python 3.12 environment with MaxText and libtpu, to AOT-compile MaxText's
# published configs on a CPU (validation/maxtext/compile_maxtext.py). Never accelsim's own
# dependencies: maxtext 0.2.5 needs Python >= 3.12 and brings jax 0.12.1 with libtpu 0.0.52
# (about 2.8 GB, 3 minutes).
#
#   bash validation/maxtext/make_compile_env.sh [ENV_DIR]    (default: .maxtext-env)
set -euo pipefail
ENV_DIR="${1:-.maxtext-env}"
PYTHON="${MAXTEXT_PYTHON:-$(PYENV_VERSION=3.12.1 pyenv which python3.12 2>/dev/null || command -v python3.12)}"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/pip" install --quiet 'maxtext[tpu]==0.2.5'
"$ENV_DIR/bin/python" -c "import jax, maxtext; print('jax', jax.__version__)"
