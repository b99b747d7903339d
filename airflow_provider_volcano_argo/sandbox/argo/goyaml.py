r"""Manifests read as ``sigs.k8s.io/yaml`` reads them (its go-yaml v2 fork), with PyYAML.

Argo v3.7.10 reads a resource template's manifest with ``sigs.k8s.io/yaml``: ``workflow/validate/validate.go``
(``templates.X.resource.manifest must be a valid yaml``), ``workflow/controller/operator.go`` ``executeResource``
(``setOwnerReference``) and ``kubectl`` in ``argoexec``. Where PyYAML is laxer or differs, this loader follows
go-yaml v2: a ``\/`` escape and a ``\u`` escape of a surrogate are refused (``scannerc.go``
``yaml_parser_scan_flow_scalar``), and a merge key ``<<`` overrides the keys written before it in its mapping
while the keys after it win (``decode.go`` ``mapping``/``merge``; in a list of merged maps the earlier ones win).
Raw DEL and C1 characters (but NEL) are refused by both (``readerc.go``).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode


class GoYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with go-yaml v2's escapes and merge-key order."""

    ESCAPE_REPLACEMENTS = {k: v for k, v in yaml.SafeLoader.ESCAPE_REPLACEMENTS.items() if k != "/"}

    def flatten_mapping(self, node: MappingNode) -> None:
        """Order ``node``'s pairs so that the last one of a key wins, as go-yaml v2 decodes a mapping."""
        pairs = []
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                pairs.append((key_node, value_node))
                continue
            if isinstance(value_node, MappingNode):
                self.flatten_mapping(value_node)
                pairs.extend(value_node.value)
            elif isinstance(value_node, SequenceNode):
                for sub in reversed(value_node.value):  # earlier maps take precedence: applied last
                    if not isinstance(sub, MappingNode):
                        raise ConstructorError(
                            "while constructing a mapping",
                            node.start_mark,
                            f"expected a mapping for merging, but found {sub.id}",
                            sub.start_mark,
                        )
                    self.flatten_mapping(sub)
                    pairs.extend(sub.value)
            else:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"expected a mapping or list of mappings for merging, but found {value_node.id}",
                    value_node.start_mark,
                )
        node.value = pairs


def _check_surrogates(value: Any) -> None:
    if isinstance(value, str):
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise yaml.YAMLError("found invalid Unicode character escape code")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_surrogates(key)
            _check_surrogates(item)
    elif isinstance(value, list):
        for item in value:
            _check_surrogates(item)


def load_manifest(text: str) -> Any:
    """Load one YAML document as ``sigs.k8s.io/yaml.Unmarshal`` would; raise ``yaml.YAMLError`` where it fails."""
    value = yaml.load(text, Loader=GoYamlLoader)
    _check_surrogates(value)
    return value
