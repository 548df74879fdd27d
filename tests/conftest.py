from __future__ import annotations

import pytest


@pytest.fixture
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> object:
    # Short paths: a Unix socket path must fit in 108 bytes.
    path = tmp_path_factory.mktemp("lu")
    path.chmod(0o700)
    return path
