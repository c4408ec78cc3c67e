"""The shared shard writer: buffering, size-limit arithmetic, shard files, index, output sink.

`Writer` owns what every format shares (argument checks, when to cut a shard, hashing,
compression, atomic files, index.json and that it is sent last); `JointWriter` and `SplitWriter`
(`streaming.format.writer_layouts`) say which files a shard has. Formats only encode samples and
lay out shard bytes. Finished files go to a
`streaming.storage.sink.Sink` (the one place that moves files elsewhere); no torch.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import warnings
from abc import ABC, abstractmethod
from concurrent.futures import Future
from types import TracebackType
from typing import Any

import numpy as np

from streaming.format.compression import compress, get_compression_extension
from streaming.format.fileio import write_atomic
from streaming.format.index import dump_index, get_index_basename
from streaming.format.sample_checks import MissingColumnError, check_columns
from streaming.format.shard_readers import index_table
from streaming.format.shard_table import TABLE_SUFFIX, table_bytes
from streaming.format.writer_args import (
    SIZE_LIMIT,
    parse_compression,
    parse_hashes,
    parse_size_limit,
)
from streaming.format.writer_hooks import (
    BufferedSamples,
    adapt_reference_hooks,
    native,
    own_buffer,
)
from streaming.hashing import get_hash
from streaming.progress import open_bar
from streaming.storage.sink import SinkError, open_sink
from streaming.storage.urls import redact

__all__ = ["MAX_OFFSET", "MissingColumnError", "Writer"]

logger = logging.getLogger(__name__)

_WRITER_KWARGS = ("progress_bar", "max_workers", "retry", "exist_ok")
MAX_OFFSET = 2**32 - 1  # shard byte offsets are uint32


class Writer(ABC):
    """Writes samples into shards of at most `size_limit` bytes plus an index.json.

    Args:
        out: local directory, remote URL, or ``(local, remote)`` pair (see `open_sink`).
        keep_local: with a remote, keep the local files after they are sent. Without it, a
            local directory of the user's is still kept unless the upload completed (after a
            failed transfer or an interrupt it holds what never reached the remote); a temp
            directory of ours is always removed.
        compression: ``algo`` or ``algo:level``; when set only compressed files are written.
        hashes: sorted algorithm names whose digests are recorded for every file.
        size_limit: shard size budget in bytes (or ``"64mb"``); None/0 for a single shard.
        extra_bytes_per_shard: bytes a shard costs before any sample (headers).
        extra_bytes_per_sample: bytes each sample costs besides its encoding (offsets).
        **kwargs: ``progress_bar``, ``max_workers``, ``retry``, ``exist_ok`` only.
    """

    format: str = ""
    # Bytes of a shard's data file that the size accounting does not count (XSV's header line);
    # only used to keep offsets within uint32.
    _uncounted_bytes = 0

    def __init__(self, *, out: str | tuple[str, str], keep_local: bool = False,
                 compression: str | None = None, hashes: list[str] | None = None,
                 size_limit: int | str | None = SIZE_LIMIT, extra_bytes_per_shard: int = 0,
                 extra_bytes_per_sample: int = 0, **kwargs: Any) -> None:
        self.compression = parse_compression(compression)
        self.hashes = parse_hashes(hashes)
        self.size_limit = parse_size_limit(size_limit)
        invalid = [key for key in kwargs if key not in _WRITER_KWARGS]
        if invalid:
            raise ValueError(f"Invalid Writer argument(s): {invalid} ")
        self.keep_local = keep_local
        self.extra_bytes_per_shard = extra_bytes_per_shard
        self.extra_bytes_per_sample = extra_bytes_per_sample
        self.shards: list[dict[str, Any]] = []
        self.event = threading.Event()  # set once the sink reported a failed transfer
        self._finished = False
        self._warned_oversize = False
        # One writer may be fed by several threads: each sample is buffered whole, in the order
        # the writes take the lock (it once failed at `finish` with duplicate shard names).
        self._lock = threading.RLock()
        self.local, self.cloud_writer = open_sink(
            out, keep_local=keep_local, max_workers=kwargs.get("max_workers"),
            retry=kwargs.get("retry", 2), exist_ok=kwargs.get("exist_ok", False),
            published=get_index_basename())
        self.remote = self.cloud_writer.remote
        self._bar = open_bar(bool(kwargs.get("progress_bar")) and self.remote is not None,
                             desc=f"Uploading to {redact(self.remote or '')}")
        if self._bar is not None:
            self.cloud_writer.progress = self._bar.update
        self._reset_cache()

    @property
    def executor(self) -> Any:
        """The sink's transfer thread pool, if it has one (reference attribute)."""
        return getattr(self.cloud_writer, "executor", None)

    def _reset_cache(self) -> None:
        """Start an empty shard buffer."""
        self._parts: list[Any] = []  # every encoded piece of the buffered samples, in order
        self._sizes: list[int] = []  # encoded bytes of each buffered sample
        self.new_shard_size = self.extra_bytes_per_shard
        self._appended: list[Any] = []  # what the writer's own code put in `new_samples`
        if "new_samples" in self.__dict__:  # a list of its own (see `writer_hooks`)
            self.new_samples = []

    new_samples = BufferedSamples()  # the reference's buffer (see `writer_hooks`)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        adapt_reference_hooks(cls)

    def buffered_encodings(self) -> list[bytes]:
        """The buffered samples' encodings (rebuilt on demand; the writer keeps pieces)."""
        data = b"".join(self._parts)
        ends = np.cumsum([0, *self._sizes]).tolist()
        return [data[a:b] for a, b in zip(ends[:-1], ends[1:])]

    @abstractmethod
    def encode_parts(self, sample: dict[str, Any]) -> tuple[list[Any], int]:
        """Encode one sample as pieces to concatenate, and their total size in bytes."""

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Encode one sample to the exact bytes it occupies in the shard."""
        return b"".join(native(type(self), "encode_parts")(self, sample)[0])

    def get_config(self) -> dict[str, Any]:
        """The writer settings recorded in every shard entry (and embedded in MDS shards)."""
        return {"version": 2, "format": self.format, "compression": self.compression,
                "hashes": self.hashes, "size_limit": self.size_limit}

    def write(self, sample: dict[str, Any]) -> None:
        """Encode and buffer one sample, first closing the current shard if it would overflow.

        QUIRK kept for byte compatibility: like the reference, the shard is closed whenever the
        sample does not fit, even if the shard is empty, so a sample larger than `size_limit`
        produces a zero-sample shard followed by an oversize one (we warn once).
        """
        try:
            try:
                parts, size = self.encode_parts(sample)
            except KeyError:
                self._check_columns(sample)  # a column missing: say which, not just its name
                raise
        except Exception as err:
            add_note = getattr(err, "add_note", None)  # Python 3.11+: shown with the traceback
            if add_note is not None:
                add_note(f"(sample {self._samples_so_far()} of this writer, counting from 0)")
            raise
        cost = size + self.extra_bytes_per_sample
        # Encoding is per sample; the buffer and the shards are shared by every writing thread.
        lock = self._lock
        lock.acquire()  # (not `with`: half the cost, on a path of a couple of microseconds)
        try:
            if self._finished:
                raise RuntimeError("Cannot write to a writer that has already finished.")
            total = self.new_shard_size + cost
            limit = self.size_limit
            if (limit and limit < total) or total + self._uncounted_bytes > MAX_OFFSET:
                self._check_fits(cost)
                self.flush_shard()
                self._reset_cache()
                total = self.new_shard_size + cost
            self._parts += parts
            self._sizes.append(size)
            self.new_shard_size = total
        finally:
            lock.release()

    def _samples_so_far(self) -> int:
        """How many samples `write` accepted (the next one's number)."""
        return (sum(int(shard.get("samples", 0)) for shard in self.shards) + len(self._sizes)
                + len(own_buffer(self)))

    def _check_columns(self, sample: Any) -> None:
        """Raise `MissingColumnError` if `sample` lacks a column."""
        check_columns(getattr(self, "columns", None) or {}, sample)

    def _check_fits(self, cost: int) -> None:
        """Warn about (or, past uint32 offsets, refuse) a sample bigger than a whole shard."""
        alone = self.extra_bytes_per_shard + cost
        if alone + self._uncounted_bytes > MAX_OFFSET:
            raise ValueError(
                f"A sample of {cost} bytes cannot be stored: shard offsets are uint32, so a shard "
                "must stay below 4 GiB."
            )
        if self.size_limit and alone > self.size_limit and not self._warned_oversize:
            self._warned_oversize = True
            warnings.warn(
                f"A sample of {cost} bytes does not fit in a shard of size_limit="
                f"{self.size_limit} (shards also spend {self.extra_bytes_per_shard} bytes on "
                "headers); it gets a shard of its own, and, as in MosaicML Streaming, an empty "
                "shard is written before it when nothing is buffered.", stacklevel=3,
            )

    @abstractmethod
    def flush_shard(self) -> None:
        """Write the buffered samples as the next shard and record its index entry."""

    def _name_next_shard(self, extension: str | None = None) -> tuple[str, str | None]:
        """``(raw, zip or None)`` file names of the next shard, e.g. ``shard.00003.mds.zstd``."""
        parts = ["shard", f"{len(self.shards):05}", self.format]
        if extension:
            parts.append(extension)
        raw = ".".join(parts)
        if not self.compression:
            return raw, None
        return raw, f"{raw}.{get_compression_extension(self.compression)}"

    def _file_info(self, data: Any, basename: str, size: int) -> dict[str, Any]:
        hashes = {algo: get_hash(algo, data) for algo in self.hashes}
        return {"basename": basename, "bytes": size, "hashes": hashes}

    def _hash(self, data: bytes, basename: str) -> dict[str, Any]:
        """A file's index entry (reference name, for subclasses that write files of their own)."""
        return self._file_info(data, basename, len(data))

    def _process_file(self, parts: list[Any] | bytes, raw_basename: str,
                      zip_basename: str | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Hash, optionally compress, and atomically write one shard file; return file infos.

        `parts` are pieces to concatenate, or (as the reference's subclasses pass) the whole
        file. Only one form is written: the compressed file when compression is on, else the
        raw one.
        """
        if isinstance(parts, (bytes, bytearray, memoryview)):
            parts = [parts]
        size = sum(map(len, parts))
        whole = None
        if self.hashes or zip_basename:
            whole = parts[0] if len(parts) == 1 else b"".join(parts)
        raw_info = self._file_info(whole, raw_basename, size)
        if zip_basename is None:
            self._put_file(raw_basename, parts)
            return raw_info, None
        assert whole is not None  # joined above whenever a compressed form is written
        packed = compress(self.compression, whole)
        self._put_file(zip_basename, [packed])
        return raw_info, self._file_info(packed, zip_basename, len(packed))

    def _put_file(self, basename: str, parts: list[Any]) -> None:
        path = os.path.join(self.local, basename)
        write_atomic(path, parts)
        self.cloud_writer.put(path, basename)

    def _check_sink(self) -> None:
        if self.cloud_writer.failed:
            self.event.set()
            self.cloud_writer.abort()
            # Nothing more will be written (no index is published after a failed transfer):
            # clean up now, as a writer used without `with` may never reach `finish`.
            self._finished = True
            self._clean_local(complete=False)
            raise SinkError() from self.cloud_writer.error

    def _write_index(self) -> None:
        """Write index.json once every shard file has reached its destination.

        Raises:
            SinkError: a shard failed to reach it (then no index is published at all).
        """
        if self._sizes:
            raise RuntimeError("Internal error: not all samples have been written.")
        text = dump_index(self.shards).encode("utf-8")
        table = index_table(text)  # big indexes: their binary table first (see shard_table)
        if table is not None:
            self._put_file(get_index_basename() + TABLE_SUFFIX, table_bytes(table))
        self.cloud_writer.wait()  # never publish an index that points at a shard in flight
        self._put_file(get_index_basename(), [text])

    def finish(self) -> None:
        """Flush the last shard, write index.json, wait for transfers, clean a temp local dir.

        Raises:
            Exception: ``One of the threads failed. ...`` if a transfer failed.
        """
        with self._lock:  # after any write in progress in another thread
            if self._finished:
                return
            self._finished = True
            self._publish(after_error=False)

    def _finish_after_error(self) -> None:
        """Keep every sample `write` accepted: flush the buffer as a last shard and publish the
        index, as the reference does (a ``^C`` mid-conversion loses nothing written so far).

        `write` buffers a sample only once it is wholly encoded, so the buffer never holds part
        of one. If the last shard cannot be written either, the index names the shards written
        before it; if a transfer failed, no index is published at all. Never raises: the
        caller's exception is the one that matters.
        """
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._publish(after_error=True)

    def _publish(self, after_error: bool) -> None:
        """Flush the buffered samples, publish the index once every transfer is done, and
        clean up either way. `after_error`: log what fails instead of raising it, and publish
        the shards before a last one that cannot be written."""
        complete = False
        try:
            self._check_sink()
            if self._sizes or own_buffer(self):
                try:
                    self.flush_shard()
                except Exception as err:
                    if not after_error:
                        raise
                    logger.error("Could not write the last shard after an error: %s", err)
            self._reset_cache()
            self._write_index()
            self.cloud_writer.finish()
            complete = True
        except BaseException as err:
            self.event.set()
            self.cloud_writer.abort()
            if not after_error:
                raise
            logger.error("Could not write the index after an error: %s", err)
        finally:
            self._clean_local(complete)

    def _clean_local(self, complete: bool) -> None:
        """Close the progress bar; without `keep_local`, remove the local side of a remote
        write. The user's own directory goes only after a `complete` upload (the index
        published): after a failed transfer or an interrupt (^C while uploads were in flight)
        it holds the only copy of what never reached the remote."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if not self.remote or self.keep_local:
            return
        if not complete and not self.cloud_writer.temporary:
            logger.warning("Not every file reached %s; %s keeps the shards written (it is "
                           "removed only after a complete upload).", redact(self.remote),
                           self.local)
            return
        shutil.rmtree(self.local, ignore_errors=True)

    def cancel_future_jobs(self) -> None:
        """Cancel pending transfers (reference name)."""
        self.cloud_writer.abort()

    def exception_callback(self, future: Future) -> None:
        """The reference's done-callback for transfer futures, kept for subclasses that hook
        their own futures to it: a failed one sets `event` and re-raises its exception."""
        err = future.exception()
        if err is not None:
            self.event.set()
            raise err

    def __enter__(self) -> Writer:
        return self

    def __del__(self) -> None:
        """Say so when a writer is dropped with samples it never wrote (as an unclosed file
        does): without `finish()` or a `with` block, its buffered samples and the index are
        never written, silently in the reference."""
        state = self.__dict__
        if state.get("_finished", True) or not (state.get("_sizes") or state.get("_appended")
                                                or state.get("shards")):
            return
        warnings.warn(
            f"{type(self).__name__} writing to {state.get('remote') or state.get('local')!r} was "
            f"dropped without finish(): {len(state.get('_sizes') or ())} buffered sample(s) and "
            f"the index.json were never written. Call finish() or use it in a `with` block.",
            ResourceWarning, stacklevel=2, source=self)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.finish()
        else:
            self._finish_after_error()
