"""The exception tree of shardstream.

Every error we raise on purpose derives from `StreamingError` *and* from the builtin type the
reference raises in the same situation, so code (and tests) written against MosaicML Streaming
that catches `ValueError`, `RuntimeError` or `FileNotFoundError` keeps working::

    StreamingError
    ├── IndexFormatError (ValueError)        index.json malformed, truncated or wrong version
    │   └── UnsafePathError                  a basename that is absolute or climbs out with '..'
    ├── ShardFormatError (ValueError)        a shard file that is truncated or inconsistent (also
    │                                        the decoder's own type, e.g. UnicodeDecodeError)
    │   └── ShardSizeMismatchError (FileNotFoundError) a cached file of another size than indexed
    ├── ShardUnavailableError (FileNotFoundError) a shard neither cached nor at its remote
    ├── HashMismatchError (ValueError)       a file's digest is not the index's ("Checksum failure")
    │   └── SourceChangedError               a Parquet file indexed in place changed since
    ├── UnsafeTypeError (ValueError)         a pickle column without allow_unsafe_types=True
    ├── MissingDependencyError (ImportError) an optional package is needed; says what to install
    ├── CoordinationError (RuntimeError)     a node-local wait (barrier, lock, peer) timed out
    │   └── PublishedFailure (ValueError)    the leader could not plan (also its builtin type)
    ├── RemoteUnreachableError (ConnectionError) a store's server refused or never answered
    ├── ConnectionDroppedError (ConnectionResetError) a transfer's connection was cut mid-way
    ├── TransferStalledError (TimeoutError)  no byte arrived for the stall timeout
    ├── DatasetClosedError (ValueError)      iterating a dataset after its close()
    ├── ReusedLocalError (ValueError)        "Reused local directory": another live dataset has it
    ├── NotAnIntegerError (ValueError, TypeError) a count argument (batch_size...) not an integer
    ├── UnsupportedColumnError (TypeError, AssertionError) a writer's column it cannot write
    └── ReservedCharacterError (ValueError, AssertionError) a CSV/TSV field with the separator

Defined next to the code that raises them (and deriving from `StreamingError` all the same)::

    LevelError (ValueError, AssertionError)          format.compression: a level out of range
    EncodingConfigError (ValueError, AssertionError) format.encodings: a bad encoding string
    UnstorableImageError (ValueError, OSError)       format.encodings: an image PNG cannot hold
    ObjectNotFoundError (FileNotFoundError)          storage: no such object; names the URL
    AccessDeniedError (PermissionError)              storage: the server refused; names the URL
    SinkError                                        storage.sink: a writer's upload failed
    CacheFullError (ValueError)                      cache.eviction: nothing left to evict
    MissingColumnError (KeyError)                    format.sample_checks: a sample lacks a column
    MixedColumnsError (ValueError, KeyError)         batch_columns: a batch of mixed columns
    IncompletePartitionError (FileNotFoundError)     merge: a sub-dataset without its index

Warnings::

    RemoteUnavailableWarning (UserWarning)   no remote index; the cached copy is used
    UnverifiedCacheWarning (UserWarning)     the remote index changed; some cached files are
                                             kept on their unchanged size alone (no digest,
                                             no modification time at the remote)
"""

from __future__ import annotations

import builtins
import json
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeVar


class StreamingError(Exception):
    """Base class of every error shardstream raises deliberately."""


#: What a decoder raises for bytes it cannot decode that each read path turns into a
#: `ShardFormatError` naming the file and sample (and also of the decoder's type: bad UTF-8,
#: bad JSON, a cut header). A decoder's other errors (decimal's `InvalidOperation`, Pillow's
#: `UnidentifiedImageError`, JSON nested past the parser's depth) keep their type, which code
#: written for the reference catches, and get a note saying where (`note_where`).
DECODE_ERRORS: tuple[type[BaseException], ...] = (ValueError, struct.error)


def first_line(err: BaseException) -> str:
    """``Type: first line`` of an error, for a message of ours that wraps it (SDK and decoder
    errors append pages of detail); just ``Type`` when it says nothing."""
    text = str(err).strip().split("\n", 1)[0]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def note_where(err: BaseException, where: str) -> None:
    """Add `where` (the file and sample being decoded) to `err` as a note (PEP 678), once:
    its type stays the decoder's, and its traceback says which sample of which shard."""
    notes = getattr(err, "__notes__", ())
    if where not in notes and hasattr(err, "add_note"):
        err.add_note(where)


def decode_failure(err: Exception, fail: Callable[[Exception], Exception]) -> Exception:
    """The exception a read path raises for `err`, raised while it decoded samples, where
    `fail(err)` makes the error naming the file and sample(s): ours pass through as they are,
    `DECODE_ERRORS` become `fail(err)` caused by `err`, and a decoder's other types are kept
    with a note saying where (`note_where`). Every read path's handler is
    `except Exception as err: raise decode_failure(err, fail)`, so the rule is written once."""
    if isinstance(err, StreamingError):
        return err
    if isinstance(err, DECODE_ERRORS):
        failure = fail(err)
        failure.__cause__ = err
        return failure
    note_where(err, str(fail(err)))
    return err


class IndexFormatError(StreamingError, ValueError):
    """An index.json that cannot be trusted: not JSON, wrong version, missing or bad fields."""


class UnsafePathError(IndexFormatError):
    """A file name in an index that would resolve outside the dataset directory."""


class ShardFormatError(StreamingError, ValueError):
    """A shard whose bytes contradict its own header or its index entry."""


class ShardSizeMismatchError(ShardFormatError, FileNotFoundError):
    """A cached shard file whose size is not its index entry's: not the file the index names
    (a truncated copy, another dataset's file). Also a `FileNotFoundError`, so a reader treats
    it as missing and fetches it again where a remote has it."""


class NotARegularFileError(StreamingError, IsADirectoryError):
    """A dataset file (index, shard) that is a FIFO, a device or a directory: opening a FIFO
    blocked forever, a device was read without end. An `IsADirectoryError` (an `OSError`),
    as opening a directory as a file already was."""


class ShardUnavailableError(StreamingError, FileNotFoundError):
    """A shard that is not in the cache and that its remote does not have (or there is none)."""


class HashMismatchError(StreamingError, ValueError):
    """A file whose digest does not match the one recorded in the index."""


class HashAlgorithmError(StreamingError, ValueError):
    """`validate_hash` names a digest the index does not record: a setting to change, not a
    transfer to retry."""


class SourceChangedError(HashMismatchError):
    """A file indexed in place (Parquet) whose footer no longer matches its index entry."""


class UnsafeTypeError(StreamingError, ValueError):
    """A column with an encoding that can execute code when decoded (pickle)."""


class MissingDependencyError(StreamingError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""


class CoordinationError(StreamingError, RuntimeError):
    """A wait on other processes of this node ran past its deadline."""


class RemoteUnreachableError(StreamingError, ConnectionError):
    """A store's server could not be reached (connection refused, no route, DNS)."""


class ConnectionDroppedError(StreamingError, ConnectionResetError):
    """A transfer's connection was reset or closed before the body was complete."""


class TransferStalledError(StreamingError, TimeoutError):
    """A transfer received nothing for the stall timeout (a silently dead connection)."""


class ReusedLocalError(StreamingError, ValueError):
    """'Reused local directory': a live dataset with a remote (of this process, or of another
    job) already caches into one of these local directories."""

    def __init__(self, message: str, same_process: bool = False,
                 namespace: str | None = None) -> None:
        super().__init__(message)
        self.same_process = same_process  # the other dataset is this process's own
        self.namespace = namespace  # the other dataset's namespace, when known


class DatasetClosedError(StreamingError, ValueError):
    """An epoch started on a dataset after its `close()` (as reading a closed file is a
    `ValueError`); random access and sizes still work."""


class NotAnIntegerError(StreamingError, ValueError, TypeError):
    """A count argument (`batch_size`, `num_canonical_nodes`, `replication`) that is not an
    integer: a `TypeError`, as the reference's (it fails on `range(2.0)`), and a `ValueError`,
    as for a count out of range."""


class UnsupportedColumnError(StreamingError, TypeError, AssertionError):
    """A writer's column whose encoding it cannot write. A `TypeError` as the reference's for
    an unknown name, and an `AssertionError` as its bare asserts for a malformed one
    (``ndarray:foo``) or for the text formats' columns."""


class ReservedCharacterError(StreamingError, ValueError, AssertionError):
    """A CSV/TSV column name or value holding the separator or the newline (the reference's
    bare assert, so also an `AssertionError`)."""


_E = TypeVar("_E", bound=StreamingError)

# Exception types of the standard library (beside the builtins) that a decode step raises and
# that user code may catch: `json.loads` of a JSON column or a JSONL line.
_STDLIB_ERRORS: dict[str, type[Exception]] = {"JSONDecodeError": json.JSONDecodeError}


def _known_error(name: str) -> type[Exception] | None:
    found = getattr(builtins, name, None) or _STDLIB_ERRORS.get(name)
    return found if isinstance(found, type) and issubclass(found, Exception) else None


def also_as(base: type[_E], other: type[BaseException]) -> type[_E]:
    """`base` that is also `other` (a builtin or a stdlib error such as `JSONDecodeError`), so
    that an ``except UnicodeDecodeError:`` written for the reference still catches our
    `ShardFormatError` of the same cause. Made once per pair and kept in `base`'s module as
    ``<Base>_<Other>``, so it pickles by name (torch sends a worker's error class to the
    loader's process; that module's `__getattr__`, from `combined_lookup`, makes it there).
    `base` itself when the two cannot be combined (an `ExceptionGroup` needs two arguments).
    Only for a `base` whose module's `__getattr__` is `combined_lookup`'s (else the class
    would not unpickle in a new process)."""
    if _known_error(other.__name__) is not other or issubclass(base, other):
        return base
    module = sys.modules[base.__module__]
    name = f"{base.__name__}_{other.__name__}"
    cls = module.__dict__.get(name)
    if cls is None:
        try:
            # Exception's __init__ and __str__: one message argument (torch re-raises a
            # worker's error as `type(err)(message)`), never the other type's fields.
            cls = type(name, (base, other), {"__init__": Exception.__init__,
                                             "__str__": Exception.__str__,
                                             "__module__": base.__module__})
            cls("probe")
        except TypeError:
            cls = base
        setattr(module, name, cls)
    return cls


def caused_by(base: type[_E], message: str, cause: BaseException) -> _E:
    """A `base` error with `message` that is also the type of `cause` (see `also_as`) and
    carries its attributes (`pos` of a `JSONDecodeError`, `start` of a `UnicodeDecodeError`)."""
    error = also_as(base, type(cause))(message)
    if type(error) is not base:
        for attr in ("encoding", "object", "start", "end", "reason"):  # C-level fields
            if hasattr(cause, attr):
                setattr(error, attr, getattr(cause, attr))
        error.__dict__.update(getattr(cause, "__dict__", {}))
    return error


def combined_lookup(*bases: type[StreamingError]) -> Callable[[str], Any]:
    """A module `__getattr__` that makes the ``<Base>_<Other>`` classes of `also_as` for the
    `bases` defined in that module, on demand (unpickling in a new process)."""
    module = bases[0].__module__

    def __getattr__(name: str) -> Any:
        for base in bases:
            other = _known_error(name[len(base.__name__) + 1:])
            if name.startswith(f"{base.__name__}_") and other is not None:
                return also_as(base, other)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


__getattr__ = combined_lookup(ShardFormatError)


class RemoteUnavailableWarning(UserWarning):
    """A stream's remote index could not be read, so its cached copy is used instead."""


class UnverifiedCacheWarning(UserWarning):
    """The remote index changed, and cached files it lists with the same size and no digest were
    kept: with no modification time at the remote either (a store that cannot list them),
    nothing tells them from the files of a dataset rewritten in place."""
