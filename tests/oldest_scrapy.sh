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
#
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scrapy_spec="${SCRAPY:-scrapy==2.13.*}"
python="${PYTHON:-python}"
work="$(mktemp -d "${TMPDIR:-/tmp}/rfc9309-oldest-scrapy.XXXXXX")"
trap 'rm -rf "$work"' EXIT

mkdir "$work/src"
tar -cf - --exclude='./.*' --exclude='*.egg-info' --exclude=__pycache__ --exclude=./build --exclude=./dist . |
    tar -xf - -C "$work/src"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$scrapy_spec" -e "$work/src[test,redis]"
cd "$work/src"
"$work/venv/bin/python" -c 'import scrapy; print(f"tests/crawl on Scrapy {scrapy.__version__}", flush=True)'
"$work/venv/bin/python" -m pytest tests/crawl -q -x -p no:cacheprovider "$@"
