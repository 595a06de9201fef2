"""A version's ``op_mapping.yaml``: parsed, or refused with the reason its row records."""

from __future__ import annotations

from dataclasses import dataclass

from profstore.ingest.csvfile import LFS_MARKER, RejectCode
from profstore.ingest.discover import MAPPING_FILE
from profstore.model.mapping import MappingError, VersionMapping, load_mapping

EMPTY_MAPPING = VersionMapping(header={}, entries={}, policies={})


@dataclass(frozen=True)
class MappingOutcome:
    """The parsed mapping, the rejected-row records for the file, and ``fatal`` when the
    file as a whole is unusable (a Git LFS pointer, not UTF-8, broken YAML, a bomb)."""

    mapping: VersionMapping
    rejects: list[tuple[RejectCode, str]]
    fatal: str | None = None


def parse_mapping(files: dict[str, bytes]) -> MappingOutcome:
    """The version's mapping. A file that cannot be used at all is ``fatal`` (the caller
    refuses the version unless allowed) and becomes a rejected row of op_mapping.yaml;
    the CSVs then ingest under the default policy."""
    if MAPPING_FILE not in files:
        return MappingOutcome(EMPTY_MAPPING, [])
    raw = files[MAPPING_FILE]
    if raw.startswith(LFS_MARKER.encode()):
        reason = "op_mapping.yaml is a Git LFS pointer, not its content; run git lfs pull"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.LFS_POINTER, reason)], reason)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        reason = f"op_mapping.yaml is not UTF-8: {exc}"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.UNREADABLE_FILE, reason)], reason)
    try:
        mapping = load_mapping(text, is_text=True)
    except MappingError as exc:
        reason = f"op_mapping.yaml refused: {exc}"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.MAPPING_PROBLEM, reason)], reason)
    return MappingOutcome(mapping, [(RejectCode.MAPPING_PROBLEM, p) for p in mapping.problems])
