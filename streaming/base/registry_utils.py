"""Old import path `streaming.base.registry_utils`: aliases of `streaming.plugins`."""

from __future__ import annotations

from streaming.plugins import (
    TypedRegistry,
    construct_from_registry,
    create_registry,
    import_file,
    save_registry,
)

__all__ = [
    "TypedRegistry",
    "construct_from_registry",
    "create_registry",
    "import_file",
    "save_registry",
]
