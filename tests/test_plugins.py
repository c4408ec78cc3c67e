"""`streaming.plugins`: typed registries over catalogue, as `streaming.base.registry_utils`."""

from __future__ import annotations

import catalogue
import pytest

from streaming import Stream, StreamingDataset
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


def test_entry_points_are_selected_once_per_installed_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The selection is cached (each dataset construction looks its stream class up), yet a
    replaced table of installed entry points is seen at once."""
    from importlib.metadata import EntryPoint, EntryPoints

    def table(value: str) -> EntryPoints:
        return EntryPoints([EntryPoint(name="plugged", value=value,
                                       group="streaming_test_plugins_ep")])

    with registry_utils.save_registry():
        registry = registry_utils.create_registry("streaming", "test_plugins_ep",
                                                  generic_type=str, entry_points=True)
        monkeypatch.setattr(catalogue, "AVAILABLE_ENTRY_POINTS", table("streaming:Stream"))
        assert registry.get("plugged") is Stream
        scans = []
        original = EntryPoints.select
        monkeypatch.setattr(EntryPoints, "select",
                            lambda self, **kw: scans.append(kw) or original(self, **kw))
        for _ in range(3):
            assert registry.get("plugged") is Stream
        assert not scans  # served from the selection made above
        monkeypatch.setattr(catalogue, "AVAILABLE_ENTRY_POINTS",
                            table("streaming:StreamingDataset"))
        assert registry.get("plugged") is StreamingDataset
        assert [kw for kw in scans if kw.get("group") == "streaming_test_plugins_ep"] == [
            {"group": "streaming_test_plugins_ep"}]
