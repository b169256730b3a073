#!/usr/bin/env bash
# A release as a maintainer would publish it: the wheel and the sdist built with
# `maturin build --release --sdist` (maturin builds the wheel from the unpacked sdist, so the sdist
# is known to build), `twine check --strict` on both, then the wheel installed in a fresh venv
# (no system packages) where the README's first command runs. About three minutes on 2 cores
# (tests/test_packaging.py runs it without the release optimizations: half that).
#
#   bash benches/check_package.sh            # needs maturin and twine: pip install maturin twine
#
# Leave CARGO_TARGET_DIR unset: the sdist unpacks with old file times, which a reused target folder
# would take for an up-to-date build. The artefacts go to a temporary folder that is
# removed at the end (KEEP=1 keeps it and prints where).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v maturin >/dev/null || { echo "check_package: maturin is missing: pip install maturin" >&2; exit 2; }
python3 -m twine --version >/dev/null 2>&1 || { echo "check_package: twine is missing: pip install twine" >&2; exit 2; }
work=$(mktemp -d)
if [ "${KEEP:-}" = 1 ]; then echo "check_package: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

start=$(date +%s)
maturin build --release --sdist --out "$work/dist"
echo "check_package: built in $(( $(date +%s) - start )) s"
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)
python3 -m twine check --strict "$wheel" "$sdist"

# What must be inside: the license in both, the package-index description in the sdist, a
# stripped extension in the wheel.
python3 - "$wheel" "$sdist" <<'EOF'
import sys, tarfile, zipfile

wheel, sdist = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    (so,) = [n for n in names if n.endswith(".so") or n.endswith(".pyd")]
    data = z.read(so)
    metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
assert b".symtab" not in data, f"{so} is not stripped"
assert "License :: OSI Approved :: MIT License" in metadata and "Description-Content-Type: text/markdown" in metadata
with tarfile.open(sdist) as t:
    top = t.getnames()[0].split("/")[0]
    members = set(t.getnames())
for needed in ("LICENSE", "README.md", "CHANGELOG.md", "docs/pypi.md", "Cargo.lock", "pyproject.toml"):
    assert f"{top}/{needed}" in members, f"{needed} is not in the sdist"
print(f"check_package: {wheel.rsplit('/', 1)[-1]}: {so} {len(data):,} bytes, stripped; LICENSE in the wheel and the sdist")
EOF

python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel"
cd "$work"
"$work/venv/bin/python" -c "import json, neardup; print('check_package: installed', neardup.__version__, json.dumps({'fp': neardup.simhash('x')}))"
"$work/venv/bin/neardup" dedup --sample -o kept.jsonl.gz --report report.html
test -s kept.jsonl.gz && test -s report.html
cd "$root"
echo "check_package: passed"
