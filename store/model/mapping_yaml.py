"""Loading op_mapping YAML: libyaml's C parser when PyYAML has it, duplicate keys recorded,
and two limits checked on the event stream before anything is built.

A billion-laughs file is a few anchors, each an alias list of the one before: its event
stream is short but the document it denotes is exponential. The event scan adds up the
size every alias stands for (its anchor's expanded size) and refuses a document past
``MAX_EXPANDED_NODES``; it also refuses nesting past ``MAX_DEPTH`` (PyYAML's constructor
recurses per level). Both fail fast, as one ``UnusableYaml`` with the reason.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoaderBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser and composer (several times faster), else PyYAML's pure-Python one."""
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 1_000_000
"""The shipped mappings have about 20 thousand nodes and no aliases."""


class UnusableYaml(ValueError):
    """The text is not a YAML document that can be built; the message says why."""


class _DuplicateAwareLoader(SafeLoaderBase):  # type: ignore[misc, valid-type]
    """A safe loader that records duplicate mapping keys (PyYAML silently keeps the last)."""

    duplicates: list[tuple[yaml.Node, str, int]]  # set per instance by load_yaml

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key in seen:
                self.duplicates.append((node, key, key_node.start_mark.line + 1))
            if key is not None:
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def yaml_message(exc: yaml.YAMLError | ValueError, source: str) -> str:
    mark, start = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    context = getattr(exc, "context", None)
    started = f" ({context} started at line {start.line + 1})" if context and start else ""
    return f"{source}: broken YAML{where}: {getattr(exc, 'problem', None) or exc}{started}"


def check_limits(text: str, source: str) -> None:
    """Refuse nesting past ``MAX_DEPTH`` or an alias expansion past ``MAX_EXPANDED_NODES``
    (``yaml.YAMLError`` for broken syntax propagates). ``total`` counts the nodes of the
    expanded document; each open collection's size is kept for its anchor."""
    anchored: dict[str, int] = {}
    stack: list[list[Any]] = []  # [anchor, expanded size so far] per open collection
    total = 0
    for event in yaml.parse(text, Loader=SafeLoaderBase):
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_DEPTH:
                raise UnusableYaml(f"{source}: nesting deeper than {MAX_DEPTH} levels at "
                                   f"line {_line(event)}; refused")
            total += 1
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor:
                anchored[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                anchored[event.anchor] = 1
            total += 1
        elif isinstance(event, yaml.AliasEvent):
            size = anchored.get(event.anchor or "", 1)
            total += size
        else:
            continue
        if stack:
            stack[-1][1] += size
        if total > MAX_EXPANDED_NODES:
            raise UnusableYaml(f"{source}: aliases expand to more than {MAX_EXPANDED_NODES} "
                               f"nodes (line {_line(event)}); refused")


def _line(event: yaml.Event) -> int | str:
    return event.start_mark.line + 1 if event.start_mark else "?"


Duplicate = tuple[yaml.Node, str, int]
"""A repeated key: the mapping node holding it, the key, its line."""


def load_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None, list[Duplicate]]:
    """The document's data, its root node and its duplicate keys ``(mapping node, key, line)``."""
    try:
        check_limits(text, source)
        loader = _DuplicateAwareLoader(text)
    except yaml.YAMLError as exc:
        raise UnusableYaml(yaml_message(exc, source)) from exc
    loader.duplicates = []
    try:
        root = loader.get_single_node()
        data = None if root is None else loader.construct_document(root)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an int() too long to convert
        raise UnusableYaml(yaml_message(exc, source)) from exc
    finally:
        loader.dispose()
    return data, root, loader.duplicates
