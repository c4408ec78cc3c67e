"""`streaming.plugins`: typed registries over catalogue, as `streaming.base.registry_utils`."""

from __future__ import annotations

import catalogue
import pytest

from streaming import Stream
from streaming.base import registry_utils
from streaming.base.stream import streams_registry


def test_streams_registry_has_stream_under_a_tuple_namespace() -> None:
    assert isinstance(streams_registry, registry_utils.TypedRegistry)
    assert streams_registry.namespace == ("streaming", "streams_registry")  # a tuple, as catalogue
    assert streams_registry.get("stream") is Stream


def test_create_register_and_get() -> None:
    with registry_utils.save_registry():
        registry = registry_utils.create_registry("streaming", "test_plugins", generic_type=str)
        assert registry.namespace == ("streaming", "test_plugins")
        registry.register("name", func="value")
        assert registry.get("name") == "value" and registry.get_all() == {"name": "value"}
        with pytest.raises(catalogue.RegistryError):
            registry.get("missing")
    assert not catalogue.check_exists("streaming", "test_plugins", "name")  # restored
