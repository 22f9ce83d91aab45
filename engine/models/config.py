"""The JSON round trip every model config shares (checkpoints store configs as JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any, TypeVar

C = TypeVar("C", bound="JsonConfig")


class JsonConfig:
    """Mixin for frozen dataclass configs: ``to_dict()`` and a strict ``from_dict()``."""

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict (field name → value; tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
        """Build a validated config from a dict such as ``to_dict()`` wrote; missing keys take defaults.

        Raises:
            ValueError: a key that is not a field (the known ones are listed) or an invalid value.
        """
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown key(s) {unknown}; known keys are {known}")
        return cls(**data)
