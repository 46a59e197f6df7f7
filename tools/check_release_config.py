"""Check the release configuration, which cannot run here: cibuildwheel must accept
pyproject.toml's [tool.cibuildwheel] and select exactly the wheels README promises, and
the release workflow must be a valid GitHub Actions workflow.

    python tools/check_release_config.py   # needs cibuildwheel and check-jsonschema

cibuildwheel's ``--print-build-identifiers`` parses and validates the configuration
(unknown options are errors) without building; check-jsonschema validates the workflow
against its bundled copy of the GitHub workflow schema, offline.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHONS = ["cp310", "cp311", "cp312", "cp313"]
# platform: (architectures the release workflow's runners provide, expected wheel kinds)
PLATFORMS = {
    "linux": ("x86_64 aarch64", [f"{libc}_{arch}" for libc in ("manylinux", "musllinux")
                                 for arch in ("x86_64", "aarch64")]),
    "macos": ("x86_64 arm64", ["macosx_x86_64", "macosx_arm64"]),
    "windows": ("AMD64", ["win_amd64"]),
}


def build_identifiers(platform, archs):
    env = dict(os.environ, **{f"CIBW_ARCHS_{platform.upper()}": archs})
    result = subprocess.run(["cibuildwheel", "--print-build-identifiers", "--platform",
                             platform, ROOT], env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"cibuildwheel rejected the configuration:\n{result.stderr}")
    return set(result.stdout.split())


def main():
    failed = False
    for platform, (archs, kinds) in PLATFORMS.items():
        found = build_identifiers(platform, archs)
        expected = {f"{python}-{kind}" for python in PYTHONS for kind in kinds}
        status = "ok" if found == expected else "MISMATCH"
        failed |= found != expected
        print(f"cibuildwheel {platform:<8} {len(found):>2} wheels {status}: "
              f"{' '.join(sorted(found))}")
        if found != expected:
            print(f"  missing {sorted(expected - found)}, unexpected {sorted(found - expected)}")
    workflow = os.path.join(ROOT, ".github", "workflows", "wheels.yml")
    result = subprocess.run(["check-jsonschema", "--builtin-schema",
                             "vendor.github-workflows", workflow],
                            capture_output=True, text=True)
    print(f"{os.path.relpath(workflow, ROOT)}: {result.stdout.strip()} {result.stderr.strip()}")
    failed |= result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
