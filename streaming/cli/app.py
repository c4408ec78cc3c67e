"""The click group behind `streaming`: one line per command, each defined in its own module."""

from __future__ import annotations

import click

from streaming._version import API_VERSION, __version__
from streaming.cli.plan_commands import plan_command, simulate_command
from streaming.cli.read_commands import head_command, inspect_command, validate_command
from streaming.cli.tool_commands import bench_command, clean_command, doctor_command
from streaming.cli.write_commands import convert_command, index_command, merge_index_command

__all__ = ["cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(
    __version__, prog_name="streaming",
    message=f"%(prog)s (shardstream) %(version)s, MosaicML Streaming {API_VERSION} API")
def cli() -> None:
    """shardstream: convert data to MDS shards, look at datasets, diagnose a loader.

    DATASET and OUT arguments are local directories or URLs (s3://, gs://, file://, ...).
    Every command takes --help and --json."""


for command in (convert_command, inspect_command, validate_command, head_command,
                merge_index_command, bench_command, doctor_command, plan_command,
                simulate_command, clean_command, index_command):
    cli.add_command(command)
