"""The GPU env's lock (envs/gpu/requirements.lock, `make gpu-lock`) still satisfies the project's
own pins: envs/gpu/requirements.in, pyproject.toml's dependencies and the extras the env installs
(test, slurm), the override, pacs.preflight's PINNED and environment.yml's Python; every package is
pinned with a hash, and the flash-attn wheel outside it is a URL with its sha256 for the locked
torch
and Python. Reads files only (no network): CI runs it on every change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from pacs import preflight

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")

REPO = Path(__file__).resolve().parents[1]
GPU = REPO / "envs" / "gpu"
LOCK = GPU / "requirements.lock"
EXTRAS = ("test", "slurm")  # what `make gpu-lock` compiles pyproject.toml with


def requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a requirements file: comments dropped, continuations joined."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def locked() -> dict[str, tuple[Version, list[str]]]:
    """name -> (version, sha256 hashes) of every entry of the lock."""
    out = {}
    for line in requirement_lines(LOCK):
        spec, *options = line.split(" --hash=")
        name, _, version = spec.strip().partition("==")
        assert version, f"{LOCK.name}: {line[:80]!r} is not pinned with =="
        out[canonicalize_name(name)] = (Version(version), [o.strip() for o in options])
    return out


def target_env(extra: str = "") -> dict[str, str]:
    """Marker environment of the GPU env: Linux x86_64, the Python of environment.yml."""
    python = env_python()
    return {
        **default_environment(),
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "python_version": python,
        "python_full_version": f"{python}.0",
        "extra": extra,
    }


def env_python() -> str:
    deps = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    pins = [d for d in deps if isinstance(d, str) and d.startswith("python=")]
    assert pins, "environment.yml pins no python=X.Y"
    return pins[0].split("=", 1)[1]


def project_pins() -> list[tuple[str, Requirement]]:
    """(where, requirement) for every pin the lock must satisfy."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = [("pyproject.toml dependencies", Requirement(r)) for r in project["dependencies"]]
    for extra in EXTRAS:
        pins += [
            (f"pyproject.toml [{extra}]", Requirement(r))
            for r in project["optional-dependencies"][extra]
            if not r.startswith("pacs[")
        ]
    for name in ("requirements.in", "overrides.txt"):
        pins += [(f"envs/gpu/{name}", Requirement(r)) for r in requirement_lines(GPU / name)]
    return pins


def unmet(pins: list[tuple[str, Requirement]], lock: dict, env: dict[str, str]) -> list[str]:
    """The pins (that apply on the target) the lock's versions do not satisfy."""
    broken = []
    for where, req in pins:
        if req.marker and not req.marker.evaluate(env):
            continue
        entry = lock.get(canonicalize_name(req.name))
        if entry is None or not req.specifier.contains(entry[0], prereleases=True):
            found = entry[0] if entry else "absent"
            broken.append(f"{where}: {req} (lock: {found})")
    return broken


def test_the_lock_satisfies_every_pin_of_the_project():
    broken = unmet(project_pins(), locked(), target_env())
    assert not broken, "run `make gpu-lock`; the lock breaks:\n" + "\n".join(broken)


def test_a_pin_the_lock_breaks_is_named():
    pins = [
        ("bumped", Requirement("torch==2.12.0")),
        ("new", Requirement("not-in-the-lock>=1")),
        ("windows only", Requirement("pywin32>=300; sys_platform == 'win32'")),
    ]
    assert unmet(pins, locked(), target_env()) == [
        "bumped: torch==2.12.0 (lock: 2.11.0)",
        "new: not-in-the-lock>=1 (lock: absent)",
    ]


def test_every_locked_package_is_pinned_with_a_sha256():
    lock = locked()
    assert len(lock) > 100  # torch, vllm and verl bring hundreds
    unhashed = [n for n, (_, hashes) in lock.items() if not hashes]
    assert not unhashed
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for _, hs in lock.values() for h in hs)


def test_the_lock_names_its_regeneration_command_and_the_env_python():
    head = LOCK.read_text(encoding="utf-8").splitlines()[:2]
    assert head[1].strip() == "#    make gpu-lock", head
    recipe = (REPO / "Makefile").read_text().split("\ngpu-lock:", 1)[1].split("\n\n", 1)[0]
    assert f"--python-version {env_python()}" in recipe
    assert "--generate-hashes" in recipe and "--override envs/gpu/overrides.txt" in recipe


@pytest.mark.parametrize("dist", sorted(preflight.PINNED))
def test_the_preflight_checks_the_versions_the_lock_installs(dist):
    assert str(locked()[dist][0]) == preflight.PINNED[dist]


def test_flash_attn_is_a_url_with_its_sha256_for_the_locked_torch_and_python():
    (line,) = requirement_lines(GPU / "flash-attn.txt")
    req = Requirement(line.split(" --hash=")[0])
    assert req.name == "flash-attn" and req.url.startswith("https://")
    assert re.search(r" --hash=sha256:[0-9a-f]{64}$", line), line
    torch = locked()["torch"][0]
    cp = "cp" + env_python().replace(".", "")
    wheel = req.url.rsplit("/", 1)[1].replace("%2B", "+")
    assert f"torch{torch.major}.{torch.minor}-{cp}-{cp}-linux_x86_64.whl" in wheel, wheel
    assert "einops" in locked()  # flash-attn's own dependency, installed from the lock


def wheel_cuda_and_abi(wheel: str) -> tuple[str | None, str | None]:
    """(CUDA tag "130", C++ ABI "TRUE"/"FALSE" or None) of a flash-attn wheel's local version:
    Dao-AILab's "+cu12torch2.6cxx11abiFALSE", mjun0812's "+cu130torch2.11"."""
    local = wheel.split("+", 1)[1].split("-", 1)[0] if "+" in wheel else ""
    cuda = re.match(r"cu(\d+)", local)
    abi = re.search(r"cxx11abi(TRUE|FALSE)", local)
    return (cuda.group(1) if cuda else None), (abi.group(1) if abi else None)


def torch_cuda() -> str:
    """CUDA major+minor the locked torch was built for, from the CUDA runtime the lock pins with
    it (PyPI's torch wheel names none: torch 2.11.0's default is CUDA 13.0)."""
    runtime = locked()["nvidia-cuda-runtime"][0]
    return f"{runtime.major}{runtime.minor}"


def test_flash_attn_wheel_matches_torchs_cuda_and_cxx11_abi():
    """A wheel for another CUDA (cu128 beside torch's 13.0) or the pre-cxx11 ABI fails to load
    its extension (undefined symbols) only on the GPU node."""
    (line,) = requirement_lines(GPU / "flash-attn.txt")
    wheel = Requirement(line.split(" --hash=")[0]).url.rsplit("/", 1)[1].replace("%2B", "+")
    cuda, abi = wheel_cuda_and_abi(wheel)
    assert cuda is not None, f"{wheel}: no CUDA tag in its version"
    want = torch_cuda()
    # a two-digit tag is a major only (cu12): any 12.x; else major+minor must be torch's
    assert cuda == want or (len(cuda) == 2 and want.startswith(cuda)), (wheel, want)
    # PyPI's torch is built with the cxx11 ABI since 2.7 (manylinux_2_28); a wheel naming its
    # ABI must say TRUE; one naming none (mjun0812's) is built against that PyPI torch.
    assert locked()["torch"][0] >= Version("2.7") and abi in (None, "TRUE"), wheel


def test_the_wheel_check_refuses_other_cuda_or_abi():
    assert wheel_cuda_and_abi("flash_attn-2.8.3+cu128torch2.11-cp312-cp312-linux_x86_64.whl") == (
        "128",
        None,
    )
    assert wheel_cuda_and_abi(
        "flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl"
    ) == ("12", "FALSE")
    assert torch_cuda() == "130"


def test_docs_state_the_driver_and_glibc_minima_of_the_lock():
    """CUDA 13.0 needs an NVIDIA driver >= 580 (CUDA 13.0 release notes, Linux x86_64); the lock
    is resolved for x86_64-manylinux_2_28 (`make gpu-lock`): wheels needing glibc <= 2.28."""
    docs = (REPO / "docs" / "paper_scale.md").read_text()
    assert torch_cuda() == "130" and "NVIDIA driver ≥ 580" in docs
    recipe = (REPO / "Makefile").read_text().split("\ngpu-lock:", 1)[1].split("\n\n", 1)[0]
    glibc = re.search(r"--python-platform x86_64-manylinux_(\d+)_(\d+)", recipe)
    assert glibc and f"glibc ≥ {glibc.group(1)}.{glibc.group(2)}" in docs


def test_environment_yml_installs_python_and_uv_and_make_gpu_env_installs_the_lock():
    deps = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    assert not [d for d in deps if isinstance(d, dict)], "packages come from the lock, not pip:"
    recipe = (REPO / "Makefile").read_text().split("\ngpu-env:", 1)[1].split("\n\n", 1)[0]
    assert "--require-hashes" in recipe and "-r $(GPU_LOCK) -r envs/gpu/flash-attn.txt" in recipe
    assert "GPU_LOCK   := envs/gpu/requirements.lock" in (REPO / "Makefile").read_text()
