#!/usr/bin/env bash
# The crawl tests (tests/crawl) on the oldest Scrapy this plugin supports.
#
# They run in a virtual environment of their own, on a copy of this checkout,
# both under one temporary directory that is removed at the end: nothing here
# touches the checkout or the Python that runs the rest of the suite, so this
# can run while `pip install -e ".[test,redis]" && python -m pytest` does.
#
#   bash tests/oldest_scrapy.sh             # Scrapy 2.13 (setup.cfg: scrapy>=2.13)
#   SCRAPY='scrapy==2.16.*' bash tests/oldest_scrapy.sh -k crawl_delay
#   PYTHON=python3.13 SCRAPY=scrapy TESTS='tests/core tests/crawl/test_demo.py' bash tests/oldest_scrapy.sh
#
# Extra arguments go to pytest; TESTS names what it runs (default tests/crawl).
set -euo pipefail
cd "$(dirname "$0")/.."
scrapy_spec="${SCRAPY:-scrapy==2.13.*}"
python="${PYTHON:-python}"
read -r -a tests <<<"${TESTS:-tests/crawl}"
# the corpus of real files lies next to the checkout, not next to the copy (tests/core)
export RFC9309_CORPUS="${RFC9309_CORPUS:-$(cd .. && pwd)/shared/corpus}"
work="$(mktemp -d "${TMPDIR:-/tmp}/rfc9309-oldest-scrapy.XXXXXX")"
trap 'rm -rf "$work"' EXIT

mkdir "$work/src"
tar -cf - --exclude=./.git --exclude='./.venv*' --exclude=./.tox --exclude=./.pytest_cache --exclude=./.hypothesis \
    --exclude='*.egg-info' --exclude=__pycache__ --exclude=./build --exclude=./dist . |
    tar -xf - -C "$work/src"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$scrapy_spec" -e "$work/src[test,redis]"
cd "$work/src"
"$work/venv/bin/python" -c 'import sys, scrapy; print(f"'"${tests[*]}"' on Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}", flush=True)'
"$work/venv/bin/python" -m pytest "${tests[@]}" -q -x -p no:cacheprovider "$@"
