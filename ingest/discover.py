"""Find version directories under a data root and name them."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
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


# --- file-system accounting: every data-named entry of a version directory -------------

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR,
          "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR,
          "a directory"))


@dataclass(frozen=True)
class RefusedEntry:
    """A data-named entry (``*.csv``, ``op_mapping.yaml``) that cannot be read, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class VersionEntries:
    """A version directory's data entries: the readable files (symlinks followed) and the
    refused ones; ``conflicts`` groups names that differ only by case."""

    readable: list[Path]
    refused: list[RefusedEntry]
    conflicts: list[list[str]]


def scan_entries(version: Path) -> VersionEntries:
    """Classify every data-named entry without opening it (a FIFO would block a read)."""
    readable, refused = [], []
    for entry in sorted(version.iterdir()):
        if not _is_data_file(entry):
            continue
        problem = _entry_problem(entry)
        if problem is None:
            readable.append(entry)
        else:
            refused.append(RefusedEntry(entry.name, problem))
    by_folded: dict[str, list[str]] = {}
    for path in readable:
        by_folded.setdefault(path.name.casefold(), []).append(path.name)
    conflicts = [names for names in by_folded.values() if len(names) > 1]
    return VersionEntries(readable, refused, conflicts)


def _entry_problem(entry: Path) -> str | None:
    try:
        status = os.stat(entry)  # follows a symlink chain; the kernel detects loops
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop: not read"
        if exc.errno == errno.ENOENT and entry.is_symlink():
            return f"dangling symlink to {os.readlink(entry)}: not read"
        return f"cannot be read: {exc.strerror}"
    for test, kind in _KINDS:
        if test(status.st_mode):
            return f"{kind}, not a regular file: not read"
    return None


@dataclass(frozen=True)
class Survey:
    """What a data root holds: distinct version directories, the ones reached a second
    time through a symlink (``(path, same as)``), and version directories without CSVs."""

    sources: list[VersionSource]
    repeats: list[tuple[Path, Path]]
    empty: list[Path]


def survey(root: Path) -> Survey:
    """``discover`` plus the accounting it does not do: a device directory reached twice
    through links is ingested once, empty version directories are named."""
    root = Path(root).resolve()
    found = discover(root)
    winner: dict[Path, VersionSource] = {}
    for source in sorted(found, key=_through_link):  # the path not through a link wins
        winner.setdefault(source.path.resolve(), source)
    sources = [s for s in found if winner[s.path.resolve()] is s]  # discovery order kept
    repeats = [(s.path, winner[s.path.resolve()].path) for s in found
               if winner[s.path.resolve()] is not s]
    empty: dict[Path, list[Path]] = {}
    if not _is_version_dir(root):
        for framework_dir in _framework_dirs(root):
            for version in sorted(framework_dir.iterdir()):
                if version.is_dir() and not _is_version_dir(version):
                    empty.setdefault(version.resolve(), []).append(version)
    named = [min(paths, key=lambda p: p.resolve() != p) for paths in empty.values()]
    return Survey(sources, repeats, named)


def _through_link(source: VersionSource) -> bool:
    return source.path.resolve() != source.path
