"""Parallel writing without Spark: one sub-dataset per task, written by a pool of processes,
then one merged index.

`write_parallel(tasks, samples, out, columns=...)` is the public helper (`samples(task)` yields
sample dicts); the converters use `run_tasks`, whose task functions write into the writer
themselves. Each task `i` writes ``<out>/part-<i:05d>/`` (or straight into `out` when there is
a single task); a failed task leaves no index behind, so a later `merge_index` skips it.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from streaming.convert.columns import ConversionError
from streaming.convert.retire import parts_of_index, retire_parts
from streaming.convert.staged_dir import real_target, staged_replacement
from streaming.convert.subsets import existing_index, refuse_replacing
from streaming.coord.orphans import exit_with_parent
from streaming.format.index import get_index_basename
from streaming.format.mds.writer import MDSWriter
from streaming.merge import MergeReport, merge_partitions
from streaming.progress import Progress, make_progress
from streaming.storage.sink import open_sink
from streaming.storage.urls import scheme_of

__all__ = ["ParallelResult", "run_tasks", "write_parallel"]

Report = Callable[[int], None]
WriteTask = Callable[[Any, Any, Report], None]
"""``write(task, writer, report)``: write one task's samples into an `MDSWriter`, calling
``report(n)`` now and then with the number of samples just written."""

logger = logging.getLogger(__name__)

_REPORT_EVERY = 1024
_queue: Any = None  # the pool's progress queue, set in each worker by `_init_worker`


@dataclass
class ParallelResult:
    """Where the dataset went and what it holds."""

    local: str | None  # local root (None once a temporary one was removed)
    remote: str | None
    partitions: list[str] = field(default_factory=list)  # sub-dataset dirs ([] = written flat)
    samples: int = 0
    merge: MergeReport | None = None
    details: dict[str, Any] = field(default_factory=dict)  # converter-specific facts


class _SampleTask:
    """Adapts ``samples(task) -> iterable of dicts`` to the `WriteTask` protocol (picklable)."""

    def __init__(self, samples: Callable[[Any], Iterable[Mapping[str, Any]]]) -> None:
        self.samples = samples

    def __call__(self, task: Any, writer: Any, report: Report) -> None:
        count = 0
        for sample in self.samples(task):
            writer.write(sample)
            count += 1
            if count == _REPORT_EVERY:
                report(count)
                count = 0
        report(count)


def _init_worker(queue: Any) -> None:
    global _queue
    _queue = queue
    # A worker ends with its parent: killed, the parent could not stop it, and it went on
    # writing sub-datasets (each with its index, which `merge-index` then published).
    exit_with_parent()


def _queue_report(count: int) -> None:
    if count and _queue is not None:
        _queue.put(count)


def _write_one(write: WriteTask, task: Any, out: Any, columns: Mapping[str, str],
               writer_kwargs: Mapping[str, Any], report: Report | None = None) -> int:
    """Write one sub-dataset; on failure remove its local side and publish no index."""

    writer = MDSWriter(columns=dict(columns), out=out, **writer_kwargs)
    try:
        write(task, writer, report or _queue_report)
        writer.finish()
    except BaseException:
        writer.cancel_future_jobs()
        shutil.rmtree(writer.local, ignore_errors=True)
        raise
    return sum(shard["samples"] for shard in writer.shards)


def _refuse_inputs_inside(out: Any, inputs: Sequence[str], exist_ok: bool) -> None:
    """Refuse a local output directory that is, or holds, one of the inputs: clearing it
    (`exist_ok`) would delete the inputs before they were read, and writing into it would mix
    the dataset with them. One inside an input folder is refused too: the next conversion of
    that folder would read the dataset's files as input (an image folder's as a class)."""
    local = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(local, (str, os.PathLike)) or scheme_of(os.fspath(local)):
        return
    root = os.path.realpath(local)
    for path in inputs:
        if scheme_of(path):  # a remote input cannot be deleted by clearing a local folder
            continue
        real = os.path.realpath(path)
        if os.path.commonpath([root, real]) == root:
            harm = "delete it before it is read" if exist_ok else "mix the dataset with it"
            raise ConversionError(
                f"The output directory {os.fspath(local)!r} holds the input {path!r}: writing "
                f"the dataset there would {harm}. Choose an output directory outside the inputs.")
        if os.path.isdir(real) and os.path.commonpath([root, real]) == real:
            raise ConversionError(
                f"The output directory {os.fspath(local)!r} is inside the input folder "
                f"{path!r}: converting that folder again would read the dataset's files as "
                f"input. Choose an output directory outside the inputs.")


def _resolve_out(out: Any, exist_ok: bool) -> tuple[str, str | None, bool]:
    """``(local root, remote root or None, local is a temp dir)``, with the writer's checks."""
    local, sink = open_sink(out, keep_local=True, exist_ok=exist_ok)
    sink.finish()
    temporary = isinstance(out, str) and bool(scheme_of(out))
    return local, sink.remote, temporary


def _drain(queue: Any, progress: Progress) -> None:
    while (count := queue.get()) is not None:
        progress(count)


def _run_pool(jobs: list[tuple[Any, Any]], write: WriteTask, columns: Mapping[str, str],
              writer_kwargs: Mapping[str, Any], workers: int, mp_context: str | None,
              progress: Progress) -> list[int]:
    ctx = multiprocessing.get_context(mp_context or "spawn")
    queue = ctx.Queue()
    drainer = threading.Thread(target=_drain, args=(queue, progress), daemon=True)
    drainer.start()
    pool = ProcessPoolExecutor(workers, ctx, initializer=_init_worker, initargs=(queue,))
    try:
        futures: list[Future] = [pool.submit(_write_one, write, task, out, columns,
                                             writer_kwargs) for task, out in jobs]
        done, _ = wait_futures(futures, return_when=FIRST_EXCEPTION)
        for index, future in enumerate(futures):
            if future in done and future.exception() is not None:
                raise _task_failed(index, jobs[index][0], future.exception(),
                                   ctx.get_start_method())
        return [future.result() for future in futures]
    except BaseException:
        # Stopped (Ctrl-C, SIGTERM, a task failed): the tasks still running are not waited
        # for; their sub-datasets are removed with the output. (`_processes` is the executor's
        # own table: there is no public way to stop a running task.)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        queue.put(None)
        drainer.join()
        queue.close()


def _task_failed(index: int, task: Any, err: BaseException | None,
                 start_method: str = "spawn") -> Exception:
    if isinstance(err, ConversionError):
        return err
    hint = ""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(err, BrokenProcessPool) and start_method != "fork" and script:
        # The usual cause: a script calling us at its top level. Each spawned worker imports
        # the script, reaches the call again and dies in multiprocessing's bootstrap check.
        hint = (f" A worker process died. If {script} calls this at its top level, put the "
                "call under `if __name__ == \"__main__\":`: each worker process "
                f"({start_method}) imports the script and would run it again.")
    return ConversionError(f"Task {index} ({task!r:.200}) failed: {err!r}.{hint}")


def run_tasks(tasks: Sequence[Any], write: WriteTask, out: Any, *, columns: Mapping[str, str],
              num_workers: int | None = None, progress: bool | Progress = False,
              total: int | None = None, mp_context: str | None = None, keep_local: bool = False,
              exist_ok: bool = False, inputs: Sequence[str] = (),
              **writer_kwargs: Any) -> ParallelResult:
    """Run `write` once per task, each into its own sub-dataset, then merge the indexes.

    Args:
        tasks: picklable descriptions of the work (file names, row ranges...), in output order.
        write: a picklable `WriteTask` (a module-level function or class instance).
        out: local dir, remote URL or ``(local, remote)``; sub-datasets upload from the workers.
        columns: the MDS columns every sub-dataset gets.
        num_workers: processes (default: CPU count); 0 or 1 runs in this process.
        progress: True for a tqdm bar of samples, or a callable taking sample increments.
        total: expected sample count, for the bar.
        mp_context: multiprocessing start method (default ``spawn``: safe with threads).
        keep_local: with a remote, keep the local files.
        exist_ok: replace what a non-empty local output directory holds instead of refusing
            it (the new dataset is written beside it and swapped in once complete: a failed run
            leaves the directory as it was), and replace a dataset at the remote (its old index
            stays readable, over its own files, until the new one is merged: the new
            sub-datasets get names of their own).
        inputs: local paths (files or folders) the tasks read; an output directory that is or
            holds one of them is refused before anything is cleared.
        **writer_kwargs: `MDSWriter` options (compression, hashes, size_limit...).

    Raises:
        ConversionError: a task failed (nothing is merged), or the output holds an input.
        FileExistsError: ``Directory is not empty: <dir>`` without `exist_ok`, or the remote
            already holds a dataset.
    """
    if not tasks:
        raise ConversionError("Nothing to convert: no input tasks.")
    _refuse_inputs_inside(out, inputs, exist_ok)
    if exist_ok and isinstance(out, str) and not scheme_of(out) and _non_empty_dir(out):
        # The old content stays until the new dataset is complete (`staged_dir`).
        target = real_target(out)
        with staged_replacement(target) as staging:
            result = _run(tasks, write, staging, columns, num_workers, progress, total,
                          mp_context, keep_local, False, writer_kwargs)
        return _moved(result, staging, target)
    return _run(tasks, write, out, columns, num_workers, progress, total, mp_context,
                keep_local, exist_ok, writer_kwargs)


def _non_empty_dir(path: str) -> bool:
    path = os.path.expanduser(path)
    return os.path.isdir(path) and bool(os.listdir(path))


def _moved(result: ParallelResult, staging: str, target: str) -> ParallelResult:
    """`result` with the staging directory's paths named as where they ended up."""
    result.local = target
    if result.merge is not None and result.merge.index_path:
        result.merge.index_path = os.path.join(
            target, os.path.relpath(result.merge.index_path, staging))
    return result


def _run(tasks: Sequence[Any], write: WriteTask, out: Any, columns: Mapping[str, str],
         num_workers: int | None, progress: bool | Progress, total: int | None,
         mp_context: str | None, keep_local: bool, exist_ok: bool,
         writer_kwargs: Mapping[str, Any]) -> ParallelResult:
    local, remote, temporary = _resolve_out(out, exist_ok)
    try:
        result = _write_and_merge(tasks, write, local, remote, columns, num_workers, progress,
                                  total, mp_context, keep_local, exist_ok, writer_kwargs)
    except BaseException:
        if temporary:  # a scratch folder of this call: nothing in it is the user's
            shutil.rmtree(local, ignore_errors=True)
        raise
    if remote and (temporary or not keep_local):
        result.local = None
        shutil.rmtree(local, ignore_errors=True)
    return result


def _write_and_merge(tasks: Sequence[Any], write: WriteTask, local: str, remote: str | None,
                     columns: Mapping[str, str], num_workers: int | None,
                     progress: bool | Progress, total: int | None, mp_context: str | None,
                     keep_local: bool, exist_ok: bool,
                     writer_kwargs: Mapping[str, Any]) -> ParallelResult:
    found = existing_index(None, remote) if remote is not None else None
    refuse_replacing(found, exist_ok)
    replacing = found is not None
    flat = len(tasks) == 1 and not replacing
    replaced = parts_of_index(remote) if replacing and remote else []
    prefix = f"{uuid.uuid4().hex[:8]}-" if replacing else ""
    names = [""] if flat else [f"{prefix}part-{i:05d}" for i in range(len(tasks))]
    kwargs = dict(writer_kwargs, keep_local=keep_local or remote is None)
    jobs = [(task, _sub_out(local, remote, name)) for task, name in zip(tasks, names)]
    workers = min(num_workers if num_workers is not None else os.cpu_count() or 1, len(tasks))
    try:
        with make_progress(progress, total) as bar:
            if workers <= 1:
                counts = [_run_inline(i, write, task, sub, columns, kwargs, bar)
                          for i, (task, sub) in enumerate(jobs)]
            else:
                counts = _run_pool(jobs, write, columns, kwargs, workers, mp_context, bar)
    except BaseException:
        _remove_parts(local, remote, names)
        raise
    result = ParallelResult(local, remote, [] if flat else names, sum(counts))
    if not flat:
        result.merge = merge_partitions(
            [_index_of(local, remote, name) for name in names],
            (local, remote) if remote else local, keep_local=keep_local or remote is None)
        if remote:  # the dataset this run replaced: never merged again
            retire_parts(remote, [old for old in replaced if old not in names],
                         "a later write_parallel run replaced this dataset")
    elif remote and not keep_local:
        shutil.rmtree(local, ignore_errors=True)
    return result


def _remove_parts(local: str, remote: str | None, names: list[str]) -> None:
    """After a failed or interrupted run: delete the sub-datasets that did finish. Each has an
    index of its own, so `merge_index` (or `streaming merge-index`) would otherwise publish
    them as the whole dataset. A remote's copies stay (the storage layer does not delete),
    marked as retired (`streaming.convert.retire`)."""
    for name in filter(None, names):  # "" is a single task written flat: nothing to merge
        shutil.rmtree(os.path.join(local, name), ignore_errors=True)
    if remote and names != [""]:
        logger.warning("The conversion to %s failed: the sub-datasets its tasks uploaded "
                       "(%s/%s...) are not a dataset; they are marked so that merge-index "
                       "ignores them.", remote, remote.rstrip("/"), names[0].rsplit("-", 1)[0])
        retire_parts(remote, names, "the write_parallel run that wrote it failed")


def _run_inline(index: int, write: WriteTask, task: Any, out: Any, columns: Mapping[str, str],
                kwargs: Mapping[str, Any], bar: Progress) -> int:
    try:
        return _write_one(write, task, out, columns, kwargs, bar)
    except ConversionError:
        raise
    except Exception as err:
        raise _task_failed(index, task, err) from err


def _sub_out(local: str, remote: str | None, name: str) -> Any:
    sub_local = os.path.join(local, name) if name else local
    if remote is None:
        return sub_local
    return sub_local, f"{remote.rstrip('/')}/{name}" if name else remote


def _index_of(local: str, remote: str | None, name: str) -> Any:
    path = os.path.join(local, name, get_index_basename())
    return (path, f"{remote.rstrip('/')}/{name}/{get_index_basename()}") if remote else path


def write_parallel(tasks: Sequence[Any], samples: Callable[[Any], Iterable[Mapping[str, Any]]],
                   out: Any, *, columns: Mapping[str, str], num_workers: int | None = None,
                   progress: bool | Progress = False, mp_context: str | None = None,
                   keep_local: bool = False, exist_ok: bool = False,
                   **writer_kwargs: Any) -> ParallelResult:
    """Write one MDS dataset from several processes: a sub-dataset per task, then one index.

    Example::

        def samples(path):  # module level, so spawned workers can import it
            with open(path) as f:
                for line in f:
                    yield {"text": line.rstrip("\\n")}

        write_parallel(paths, samples, "s3://bucket/ds", columns={"text": "str"})

    Args:
        tasks: picklable inputs, one sub-dataset each, in output order.
        samples: picklable ``samples(task)`` yielding sample dicts.
        out: local dir, remote URL or ``(local, remote)``.
        columns: MDS column encodings.
        num_workers: processes (default: CPU count); 0 or 1 writes in this process.
        progress: True for a tqdm bar, or a callable taking sample increments.
        mp_context: multiprocessing start method (default ``spawn``).
        keep_local: with a remote, keep local copies.
        exist_ok: replace what a non-empty local output directory holds, once the new
            dataset is complete (see `run_tasks`).
        **writer_kwargs: more `MDSWriter` options (compression, hashes, size_limit...).

    Raises:
        ConversionError: a task failed; its sub-dataset is left without an index and nothing
            is merged.
    """
    return run_tasks(tasks, _SampleTask(samples), out, columns=columns,
                     num_workers=num_workers, progress=progress, mp_context=mp_context,
                     keep_local=keep_local, exist_ok=exist_ok, **writer_kwargs)
