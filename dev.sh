#!/usr/bin/env bash
# Set up a virtualenv in .venv (once) and run streamcue's demo or its tests.
#
#   ./dev.sh demo [streamcue demo options]   offline demo on the bundled defaults (core + [release,anonymize])
#   ./dev.sh test [pytest options]           the whole test suite (what CI runs)
#
# Re-running is cheap: installs are skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${STREAMCUE_VENV:-.venv}"
PY="${PYTHON:-python3}"

setup() {  # $1: the extra to install ("" for the core)
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    local stamp="$VENV/.streamcue-${1:-core}-$(sha256sum pyproject.toml | cut -c1-16)"
    [ -f "$stamp" ] && return 0
    "$VENV/bin/python" -m pip install -q --upgrade pip
    if [ "$1" = dev ]; then
        # The CPU build of torch (for sentence-transformers and bert-score), not a multi-GB CUDA one.
        "$VENV/bin/python" -m pip install -q "torch==${STREAMCUE_TORCH_VERSION:-2.13.0}" \
            || "$VENV/bin/python" -m pip install -q torch
    fi
    "$VENV/bin/python" -m pip install -q -e ".${1:+[$1]}"
    touch "$stamp"
}

case "${1:-}" in
    demo)
        shift
        setup release,anonymize
        exec "$VENV/bin/streamcue" demo "$@"
        ;;
    test)
        shift
        setup dev
        exec "$VENV/bin/python" -m pytest "$@"
        ;;
    *)
        sed -n '2,7p' "$0"
        exit 2
        ;;
esac
