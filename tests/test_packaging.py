"""What a package index and a maintainer get: checked from the files, and by building the wheel and
the sdist, `twine check`, and installing the wheel in a fresh venv (`benches/check_package.sh`,
built without the release optimizations: about a minute and a half)."""

import os
import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself needs tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CARGO = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def test_the_license_file_is_mit_and_declared_everywhere():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 neardup developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    assert PROJECT["license"] == {"text": "MIT"} and CARGO["package"]["license"] == "MIT"
    assert "License :: OSI Approved :: MIT License" in PROJECT["classifiers"]


def test_metadata_names_authors_keywords_and_supported_pythons():
    assert PROJECT["authors"] == [{"name": "neardup developers"}]
    assert "simhash" in PROJECT["keywords"] and "deduplication" in PROJECT["keywords"]
    classifiers = PROJECT["classifiers"]
    assert any(c.startswith("Operating System :: ") for c in classifiers)
    minimum = re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"])
    assert minimum is not None
    versions = sorted(
        int(c.rsplit(".", 1)[1])
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert versions == list(range(int(minimum.group(1)), 14)) == [10, 11, 12, 13]
    assert "Typing :: Typed" in classifiers and (ROOT / "python" / "neardup" / "py.typed").exists()
    # URLs only where there is a real home to point to; none is invented.
    for url in PROJECT.get("urls", {}).values():
        assert url.startswith("https://"), url


def test_the_package_index_description_is_short_and_renders_without_the_repository():
    readme = PROJECT["readme"]
    assert readme != "README.md"
    text = (ROOT / readme).read_text(encoding="utf-8")
    assert text.startswith("# neardup\n") and len(text) < 5000
    assert "![" not in text and "<img" not in text.lower()
    for target in re.findall(r"\]\(([^)]*)\)", text) + re.findall(r"href=[\"']([^\"']*)", text):
        assert target.startswith("https://"), (
            f"{readme}: {target!r} will not resolve on a package index"
        )
    # Files it refers to are in the sdist (maturin packs the crate's files and the Python source).
    for name in re.findall(r"`([A-Za-z_./-]+\.(?:md|toml))`", text):
        assert (ROOT / name).exists(), name


def test_the_package_index_description_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (ROOT / PROJECT["readme"]).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace: dict = {}
    for index, block in enumerate(blocks):
        exec(compile(block, f"{PROJECT['readme']} python block {index}", "exec"), namespace)
    assert namespace["labels"].tolist() == [0, 1, 0] and [d["id"] for d in namespace["kept"]] == [
        "a"
    ]


def test_release_builds_strip_the_extension_and_the_readme_states_the_toolchain():
    release = CARGO["profile"]["release"]
    assert release["strip"] is True
    rust = CARGO["package"]["rust-version"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert f"rustc >= {rust}" in install and "Rust toolchain" in install
    assert "installs without Rust" in install


def test_the_wheel_and_sdist_build_pass_twine_and_install_in_a_fresh_venv(tmp_path):
    # No shared CARGO_TARGET_DIR: the sdist unpacks with its files' old times, which a reused
    # target folder would take for an up-to-date build of other sources.
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    # What is checked is what the files hold, not how fast the code runs: the build leaves out
    # the release profile's optimization (the whole check took 95 against 190 s on 2 cores).
    # Its other settings, `strip` among them (the wheel is checked for it), stay.
    env |= {
        "CARGO_PROFILE_RELEASE_OPT_LEVEL": "0",
        "CARGO_PROFILE_RELEASE_LTO": "off",
        "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16",
    }
    done = subprocess.run(
        ["bash", str(ROOT / "benches" / "check_package.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "check_package: passed" in done.stdout
    assert re.search(
        r"neardup-[0-9.]+-cp310-abi3-manylinux_\d+_\d+_x86_64\.whl", done.stdout + done.stderr
    )
