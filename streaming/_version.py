"""The package version (the distribution is `shardstream`, the import name `streaming`)."""

__version__ = "0.1.0"
