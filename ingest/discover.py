"""Find version directories under a data root and name them."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

VLLM = "vllm_ascend"
HCCL = "hccl"
MAPPING_FILE = "op_mapping.yaml"


@dataclass(frozen=True)
class VersionSource:
    framework: str
    device: str
    directory: str
    path: Path

    @property
    def short_alias(self) -> str:
        """``vllm0.18.0_torch2.9.0_cann8.5`` → ``v0.18``; HCCL ``v8.5`` → ``hccl-v8.5``."""
        if self.framework == HCCL:
            return f"hccl-{self.directory}"
        match = re.match(r"vllm(\d+)\.(\d+)", self.directory)
        return f"v{match.group(1)}.{match.group(2)}" if match else self.directory

    def files(self) -> list[Path]:
        return sorted(p for p in self.path.iterdir() if p.is_file() and _is_data_file(p))


def _is_data_file(path: Path) -> bool:
    return path.suffix.lower() == ".csv" or path.name == MAPPING_FILE


def discover(root: Path) -> list[VersionSource]:
    """Every version directory under ``root``; ``root`` may itself be one version directory.

    Accepted layouts: ``<root>/<DEVICE>/{vllm_ascend,hccl}/<version>/``,
    ``<root>/{vllm_ascend,hccl}/<version>/`` and a version directory itself.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    if _is_version_dir(root):
        return [_source_for(root)]
    found = [
        _source_for(version)
        for framework_dir in _framework_dirs(root)
        for version in sorted(framework_dir.iterdir())
        if version.is_dir() and _is_version_dir(version)
    ]
    if not found:
        raise FileNotFoundError(
            f"no version directories under {root} "
            f"(expected <DEVICE>/{VLLM}/<version>/ or <DEVICE>/{HCCL}/<version>/ with CSV files)"
        )
    return found


def _framework_dirs(root: Path) -> list[Path]:
    candidates = [root / VLLM, root / HCCL]
    for device in sorted(root.iterdir()):
        if device.is_dir():
            candidates += [device / VLLM, device / HCCL]
    return [c for c in candidates if c.is_dir()]


def _is_version_dir(path: Path) -> bool:
    return path.parent.name in (VLLM, HCCL) and any(
        p.suffix.lower() == ".csv" for p in path.iterdir() if p.is_file()
    )


def _source_for(version: Path) -> VersionSource:
    framework = version.parent.name
    device = version.parent.parent.name
    return VersionSource(framework, device, version.name, version)


def content_hash(files: dict[str, bytes]) -> str:
    """Hash of a version's file names and bytes: equal hashes mean an unchanged version."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode())
        digest.update(hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
