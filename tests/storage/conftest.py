"""Session-scoped storage servers on 127.0.0.1 (one per backend) and a clean environment.

A fixture skips with the reason when its server cannot run here; CI installs all of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.storage import servers
from tests.storage.servers import Server, Unavailable

_SCRUBBED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "S3_ENDPOINT_URL", "S3_CANNED_ACL", "GCS_KEY",
             "GCS_SECRET", "STORAGE_EMULATOR_HOST", "AZURE_ACCOUNT_NAME",
             "AZURE_ACCOUNT_ACCESS_KEY", "AZURE_STORAGE_ENDPOINT", "GOOGLE_APPLICATION_CREDENTIALS",
             "MOSAICML_STREAMING_AWS_REQUESTER_PAYS",
             "COMPOSER_SFTP_KEY_FILE", "COMPOSER_SFTP_KNOWN_HOSTS_FILE", "SSL_CERT_FILE",
             "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture(scope="session", autouse=True)
def storage_env() -> Iterator[None]:
    """Test credentials only, and nothing that could send a request off this machine."""
    with pytest.MonkeyPatch.context() as mp:
        for name in _SCRUBBED:
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)  # never this machine's profiles
        mp.setenv("AWS_CONFIG_FILE", os.devnull)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")  # never the real IMDS address
        mp.setenv("NO_GCE_CHECK", "True")
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        yield


def _started(start: Callable[..., Server], *args: object) -> Iterator[Server]:
    try:
        server = start(*args)
    except Unavailable as err:
        pytest.skip(str(err))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _started(servers.start_local, str(tmp_path_factory.mktemp("local-store")))


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Server]:
    yield from _started(servers.start_moto)


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _started(servers.start_seaweed, str(tmp_path_factory.mktemp("seaweed")))


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[Server]:
    yield from _started(servers.start_fake_gcs)


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[Server]:
    yield from _started(servers.start_azurite)


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _started(servers.start_http, str(tmp_path_factory.mktemp("http-root")))


@pytest.fixture(scope="session")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _started(servers.start_http, str(tmp_path_factory.mktemp("https-root")), True)


@pytest.fixture(scope="session")
def sftp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("sftp-root")
    known_hosts = str(tmp_path_factory.mktemp("sftp-keys") / "known_hosts")
    yield from _started(servers.start_sftp, str(root), known_hosts)
