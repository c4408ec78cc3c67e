"""The MDS encoding registry: exact names, lookups, the documented quirks, user extensions."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streaming.base.format.mds.encodings as ref_path
import streaming.format.encodings as enc
from streaming.errors import MissingDependencyError

REFERENCE_NAMES = {
    "bytes", "str", "int", "ndarray", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "int32", "int64", "float16", "float32", "float64", "str_int", "str_float", "str_decimal",
    "pil", "jpeg", "jpeg_array", "jpegarray", "png", "list[pil]", "list[jpeg]", "list[png]",
    "pkl", "json",
}


def test_exactly_the_reference_names() -> None:
    assert enc.get_mds_encodings() == REFERENCE_NAMES


@pytest.mark.parametrize(
    ("name", "expected"),
    [("jpeg", True), ("ndarray:uint8:3,4", True), ("ndarray:", True), ("", False),
     ("pngg", False), ("int:3", False), ("foo:1", False), ("ndarray:foo", False),
     (None, False), (["int"], False)],
)
def test_is_mds_encoding(name: Any, expected: bool) -> None:
    # Reference QUIRK fixed: 'int:3' / 'foo:1' / 'ndarray:foo' raised there; here they are False.
    assert enc.is_mds_encoding(name) is expected


def test_only_pickle_is_unsafe() -> None:
    assert enc._unsafe_encodings == {"pkl"}
    assert [n for n in sorted(REFERENCE_NAMES) if not enc.is_mds_encoding_safe(n)] == ["pkl"]


@pytest.mark.parametrize(
    ("name", "size"),
    [("bytes", None), ("int", 8), ("uint8", 1), ("float16", 2), ("uint64", 8),
     ("ndarray", None), ("ndarray:uint16", None), ("ndarray:uint16:3,4", 24),
     ("ndarray:float64:5", 40), ("str_decimal", None), ("jpegarray", None)],
)
def test_encoded_sizes(name: str, size: int | None) -> None:
    assert enc.get_mds_encoded_size(name) == size


@pytest.mark.parametrize("call", [enc.mds_decode, enc.get_mds_encoded_size, enc.get_encoding])
def test_unknown_encoding(call: Any) -> None:
    args = ("nope", b"") if call is enc.mds_decode else ("nope",)
    with pytest.raises(ValueError, match=r"Unsupported encoding: nope\."):
        call(*args)
    with pytest.raises(ValueError, match="Unsupported encoding: int:3"):
        call("int:3", *args[1:])


def test_mds_encode_passes_bytes_through_for_any_encoding() -> None:
    # Reference QUIRK kept: users pre-encode values and hand the writer bytes.
    for name in ("int", "ndarray:uint8:9", "json", "nope"):
        assert enc.mds_encode(name, b"abc") == b"abc"
    with pytest.raises(ValueError, match="Unsupported encoding: nope"):
        enc.mds_encode("nope", 1)


def test_known_vectors() -> None:
    assert enc.mds_encode("int", 99) == b"c\x00\x00\x00\x00\x00\x00\x00"
    assert enc.mds_encode("float16", 42.0) == b"@Q"
    assert enc.mds_encode("float32", 42.0) == b"\x00\x00(B"
    assert enc.mds_encode("str_float", 42.0) == b"42.0"
    assert enc.mds_encode("str_decimal", __import__("decimal").Decimal("4E15")) == b"4E+15"
    data = enc.mds_encode("ndarray:int16", np.array([[1, 2, 3]], np.int16))
    assert data == bytes.fromhex("08010301000200 0300".replace(" ", ""))


def test_instances_are_cached_per_name() -> None:
    assert enc.get_encoding("ndarray:uint16:2") is enc.get_encoding("ndarray:uint16:2")
    assert enc.get_encoding("int") is enc.get_encoding("int")


class Complex128(enc.Encoding):
    size = 16

    def encode(self, obj: complex) -> bytes:
        return np.complex128(obj).tobytes()

    def decode(self, data: bytes) -> complex:
        return complex(np.frombuffer(data, np.complex128)[0])


@pytest.fixture
def registry() -> Iterator[dict]:
    saved = dict(ref_path._encodings)
    yield ref_path._encodings
    ref_path._encodings.clear()
    ref_path._encodings.update(saved)


def test_the_reference_path_exports_the_live_dict() -> None:
    assert ref_path._encodings is enc._encodings
    assert ref_path._unsafe_encodings is enc._unsafe_encodings


def test_user_encoding_through_the_documented_dict(registry: dict) -> None:
    registry["complex128"] = Complex128
    assert enc.is_mds_encoding("complex128")
    assert enc.get_mds_encoded_size("complex128") == 16
    assert enc.mds_decode("complex128", enc.mds_encode("complex128", 1 + 2j)) == 1 + 2j
    assert ref_path.mds_decode("complex128", ref_path.mds_encode("complex128", 3j)) == 3j
    assert isinstance(enc.get_encoding("complex128"), Complex128)
    del registry["complex128"]
    assert not enc.is_mds_encoding("complex128")  # the cached instance is not served any more


def test_replacing_a_cached_encoding_takes_effect(registry: dict) -> None:
    class LoudStr(enc.Str):
        def decode(self, data: bytes) -> str:
            return super().decode(data).upper()

    assert enc.mds_decode("str", b"hi") == "hi"
    registry["str"] = LoudStr
    assert enc.mds_decode("str", b"hi") == "HI"


def test_register_encoding(registry: dict) -> None:
    enc.register_encoding("complex128", Complex128)
    enc.register_encoding("complex128", Complex128)  # idempotent
    assert enc.mds_encode("complex128", 1j) == np.complex128(1j).tobytes()
    with pytest.raises(ValueError, match="already registered"):
        enc.register_encoding("complex128", enc.Str)
    with pytest.raises(ValueError, match="cannot contain ':'"):
        enc.register_encoding("a:b", Complex128)


def test_user_class_with_from_str_parses_configs(registry: dict) -> None:
    class Padded(enc.Bytes):
        def __init__(self, width: int = 4) -> None:
            self.size = width

        @classmethod
        def from_str(cls, text: str) -> Padded:
            return cls(int(text))

    registry["padded"] = Padded
    assert enc.get_mds_encoded_size("padded:12") == 12
    assert not enc.is_mds_encoding("padded:x")


def test_reference_class_api() -> None:
    array = enc.NDArray.from_str("uint8:2,3")
    assert (array.dtype, array.shape, array.size) == ("uint8", (2, 3), 6)
    assert enc.NDArray().size is None and enc.NDArray.from_str("").dtype is None
    assert enc.NDArray._value_dtype2int["float16"] == 18
    scalar = enc.Scalar(np.uint16)
    assert scalar.dtype is np.uint16 and scalar.size == 2
    assert isinstance(enc.UInt16(), enc.Scalar) and enc.Float64().size == 8
    assert isinstance(enc.PNGList().underlying_encoder(), enc.PNG)
    assert isinstance(enc.JPEGList().underlying_encoder(), enc.JPEG)
    assert isinstance(enc.PILList().underlying_encoder(), enc.PIL)
    assert isinstance(enc.StrInt(), enc.StrEncoding)
    assert enc.Int.size == 8 and enc.Bytes.size is None


def test_every_reference_class_name_is_exported() -> None:
    names = ["Encoding", "Bytes", "Str", "Int", "NDArray", "Scalar", "UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64", "Float16", "Float32", "Float64", "StrEncoding", "StrInt", "StrFloat", "StrDecimal", "PIL", "JPEG", "PNG", "Pickle", "JSON", "List", "PILList", "JPEGList", "PNGList", "JPEGArray", "_encodings", "_unsafe_encodings", "get_mds_encodings", "is_mds_encoding", "is_mds_encoding_safe", "mds_encode", "mds_decode", "get_mds_encoded_size"]
    for name in names:
        assert getattr(ref_path, name) is getattr(enc, name), name
    assert set(ref_path.__all__) == {n for n in names if n[0].islower()}  # the reference's


def test_import_does_not_load_pillow() -> None:
    code = "import sys, streaming.format.encodings; assert 'PIL' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_missing_pillow_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MissingDependencyError, match="pip install pillow"):
        enc.mds_encode("png", object())


@pytest.mark.parametrize("name", sorted(REFERENCE_NAMES | {"ndarray:uint8:2,3", "ndarray:int16"}))
def test_instances_pickle_for_spawned_workers(name: str) -> None:
    import pickle

    coder = pickle.loads(pickle.dumps(enc.get_encoding(name)))
    assert type(coder) is type(enc.get_encoding(name))
    assert coder.size == enc.get_encoding(name).size


def test_an_encoding_without_decode_fails_when_made() -> None:
    """Abstract as the reference's: caught at registration, not at the first sample read."""
    from streaming.format.encodings.base import Encoding

    class EncodeOnly(Encoding):
        def encode(self, obj: object) -> bytes:
            return bytes(obj)  # type: ignore[call-overload]

    with pytest.raises(TypeError, match="abstract"):
        EncodeOnly()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="abstract"):
        Encoding()  # type: ignore[abstract]


class _OwnInit(enc.List):
    """A user's list encoding whose `__init__` does not call `List.__init__`."""

    def __init__(self) -> None:
        self.dtype = "int16"

    def underlying_encoder(self) -> enc.Encoding:
        return enc.NDArray(self.dtype)


class _ConfigAfterSuper(enc.List):
    """One that sets its configuration after `super().__init__()`."""

    def __init__(self) -> None:
        super().__init__()
        self.dtype = "int16"

    def underlying_encoder(self) -> enc.Encoding:
        return enc.NDArray(self.dtype)


@pytest.mark.parametrize("cls", [_OwnInit, _ConfigAfterSuper])
def test_user_list_subclasses_configure_in_their_own_init(cls: type) -> None:
    coder = cls()
    values = [np.arange(3, dtype=np.int16), np.array([7], np.int16)]
    decoded = coder.decode(coder.encode(values))
    assert [v.tolist() for v in decoded] == [[0, 1, 2], [7]]
    assert all(v.dtype == np.int16 for v in decoded)


class _Upper(enc.Encoding):
    """As the reference's docs write one: `decode` uses the `bytes` API."""

    seen: set[str] = set()

    def encode(self, obj: str) -> bytes:
        return obj.upper().encode()

    def decode(self, data: bytes) -> str:
        _Upper.seen.add(type(data).__name__)
        return data.decode()


class _Raw(enc.Encoding):
    def encode(self, obj: bytes) -> bytes:
        return obj

    def decode(self, data: bytes) -> bytes:
        return data  # kept by the user: must not be a view of a mapping that goes away


class _Shifted(enc.Int):
    """Overrides `decode` only: the whole-column shortcuts it inherits must not bypass it."""

    def decode(self, data: bytes) -> int:
        return int.from_bytes(data, "little", signed=True) + 1000


class _RawList(enc.List):
    def underlying_encoder(self) -> enc.Encoding:
        return _Raw()


@pytest.mark.parametrize("views", [False, True])
def test_a_user_encoding_decodes_bytes_on_every_read_path(registry: dict, tmp_path: Path,
                                                          views: bool) -> None:
    """The reader hands this package's encodings views of the shard, but a user's `decode` gets
    `bytes` as in the reference, whichever path reads it (`dataset[i]`, iteration, the batched
    loader) and even with `bytes_as_views`."""
    from streaming import MDSWriter, StreamingDataLoader, StreamingDataset

    registry.update(upper=_Upper, raw=_Raw, rawlist=_RawList, shifted=_Shifted)
    out = str(tmp_path / "ds")
    with MDSWriter(out=out, columns={"u": "upper", "r": "raw", "l": "rawlist", "n": "shifted"},
                   size_limit=1 << 10) as writer:
        for i in range(40):
            writer.write({"u": f"abc{i}", "r": b"r%d" % i, "l": [b"x", b"y%d" % i], "n": i})
    _Upper.seen.clear()
    with StreamingDataset(local=out, batch_size=8, bytes_as_views=views) as ds:
        sample = ds[3]
        assert (sample["u"], sample["r"], sample["l"]) == ("ABC3", b"r3", [b"x", b"y3"])
        got = list(ds)
        assert [s["u"] for s in got] == [f"ABC{i}" for i in range(40)]
        assert [s["n"] for s in got] == [1000 + i for i in range(40)]
        assert {type(s["r"]) for s in got} == {bytes}
        assert {type(v) for s in got for v in s["l"]} == {bytes}
        assert len({s["r"] for s in got}) == 40  # hashable: bytes, not views
        batches = list(StreamingDataLoader(ds, batch_size=8, num_workers=0))
    assert [u for b in batches for u in b["u"]] == [f"ABC{i}" for i in range(40)]
    assert {type(r) for b in batches for r in b["r"]} == {bytes}
    assert [int(n) for b in batches for n in b["n"]] == [1000 + i for i in range(40)]
    assert _Upper.seen == {"bytes"}


def test_a_subclass_overriding_decode_is_decoded_by_it_in_whole_blocks(registry: dict,
                                                                       tmp_path: Path) -> None:
    """Samples of fixed-size columns only are decoded a block at a time; a user's subclass of
    `int` that overrides `decode` inherits `int`'s whole-column shortcut, which must not be
    used for it (iteration read 1000, 1, 2, ... where `dataset[i]` read 1000 + i)."""
    from streaming import MDSWriter, StreamingDataset

    registry["shifted"] = _Shifted
    out = str(tmp_path / "ds")
    with MDSWriter(out=out, columns={"n": "shifted", "z": "int"}) as writer:
        for i in range(300):
            writer.write({"n": i, "z": i})
    with StreamingDataset(local=out, batch_size=8) as ds:
        assert [s["n"] for s in ds] == [1000 + i for i in range(300)]
        assert [s["z"] for s in ds] == list(range(300))
        assert ds[3]["n"] == 1003
