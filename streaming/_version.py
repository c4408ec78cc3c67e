"""The package version (the distribution is `shardstream`, the import name `streaming`)."""

__version__ = "0.1.0"  # shardstream's own release (the distribution's version)

# The MosaicML Streaming release whose API and files this one reproduces. `streaming.__version__`
# reports it, because code written against the reference gates features on that number.
API_VERSION = "0.13.0"
