"""The container image's recipe (container/): the Containerfile and the chroot test run the one
install script, which the shells accept, and docs/container.md's RayCluster names the Ray that
pounder[ray] installs. The recipe itself runs in ``make container-check`` (root, mmdebstrap, a
Debian mirror; about a minute), outside ``make test``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONTAINER = REPO / "container"


@pytest.mark.parametrize(("shell", "script"), [("sh", "install.sh"), ("bash", "rootfs.sh")])
def test_the_scripts_parse(shell: str, script: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    subprocess.run([shell, "-n", str(CONTAINER / script)], check=True, timeout=10)


def test_the_image_and_the_chroot_test_run_the_same_script() -> None:
    containerfile = (CONTAINER / "Containerfile").read_text()
    assert "COPY container/install.sh /tmp/install.sh" in containerfile
    assert re.search(r"^RUN .*sh /tmp/install\.sh ", containerfile, re.MULTILINE)
    assert "COPY dist/pounder-*.whl" in containerfile  # what make dist writes
    rootfs = (CONTAINER / "rootfs.sh").read_text()
    assert '"$here/install.sh"' in rootfs and "in_root sh /tmp/install.sh" in rootfs
    # the same base: the Containerfile's Debian release is the one the chroot is built from
    base = re.search(r"^ARG DEBIAN=(\S+)", containerfile, re.MULTILINE)
    assert base is not None and f"suite=${{DEBIAN:-{base.group(1)}}}" in rootfs


def test_the_rayclusters_ray_is_the_one_the_extra_installs() -> None:
    ray = pytest.importorskip("ray")
    doc = (REPO / "docs" / "container.md").read_text()
    assert f'rayVersion: "{ray.__version__}"' in doc
    pyproject = (REPO / "pyproject.toml").read_text()
    pinned = re.search(r'ray = \["ray>=([\d.]+),<(\d+)"\]', pyproject)
    assert pinned is not None
    low = tuple(int(x) for x in pinned.group(1).split("."))
    assert low <= tuple(int(x) for x in ray.__version__.split(".")[:3]) and int(ray.__version__.split(".")[0]) < int(
        pinned.group(2))
