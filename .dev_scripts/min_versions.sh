#!/usr/bin/env bash
# The lowest supported versions: a fresh venv with the floors that
# setup.py and requirements/ allow for the core stack (PACKAGES below:
# each `name>=X` becomes `name==X`), the other requirements as pip
# resolves them, then the suite, or the pytest arguments given.
#
#   bash .dev_scripts/min_versions.sh                          # whole suite
#   bash .dev_scripts/min_versions.sh tests/test_checkpoint -m 'not slow'
#
# MMSSL_MIN_VENV puts the venv elsewhere (default /tmp/mmssl-min-venv).
# The floors come from the requirement files, so raising one there moves
# this script too. About 3 GB of downloads (torch 2.6 with its CUDA
# libraries); docs/en/get_started.md says what this script last passed.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES='torch torchvision mmengine mmcv-lite mmpretrain pytest'
venv="${MMSSL_MIN_VENV:-/tmp/mmssl-min-venv}"
rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
floors="$venv/floors.txt"
for name in $PACKAGES; do
    # exactly one `name>=X` line across the files setup.py reads
    line=$(grep -hE "^${name}>=" requirements/runtime.txt \
        requirements/mminstall.txt requirements/tests.txt)
    sed -E 's/^([A-Za-z0-9_.-]+)>=([^,;# ]+).*/\1==\2/' <<<"$line"
done >"$floors"
echo "floors: $(tr '\n' ' ' <"$floors")"
pip install -c "$floors" -e . -r requirements/tests.txt
[ $# -gt 0 ] || set -- tests
python -m pytest "$@"
