"""The local model behind a pipe to a child process (`projections.models.embedding_process`): the same
vectors as in process, a fresh child after the old one dies, and no child left after close."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from projections.models.embedding import EmbeddingError
from projections.models.use_embedder import LocalUSEEmbedder
from projections.models.embedding_process import ProcessEmbedder


@pytest.mark.slow  # ~5 s: model child processes started twice
def test_process_embedder_matches_the_model_in_process_and_restarts_after_a_crash() -> None:
    texts = ["the staging database listens on port 8080", "部署脚本运行在主力机上", "用户偏好结论先行"]
    local = LocalUSEEmbedder(threads=1).embed(texts)
    remote = ProcessEmbedder(threads=1)
    try:
        got = remote.embed(texts)
        assert got.dtype == np.float32 and got.shape == (3, 512)
        np.testing.assert_allclose(got, local, rtol=0, atol=1e-6)
        assert remote.embed([]).shape == (0, 512) and remote.starts == 1
        first = remote._proc.pid
        os.kill(first, signal.SIGKILL)
        remote._proc.join(5)
        np.testing.assert_allclose(remote.embed(texts[:1]), local[:1], rtol=0, atol=1e-6)  # started again
        assert remote.starts == 2 and remote._proc.pid != first
    finally:
        remote.close()
    assert remote._proc is None


def test_a_child_that_dies_mid_call_fails_that_call_only() -> None:
    remote = ProcessEmbedder(threads=1)
    try:
        remote.warm_up()
        pid = remote._proc.pid
        killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))
        killer.start()
        with pytest.raises(EmbeddingError, match="embedding process failed"):
            remote.embed([f"sentence number {i} about the GPU server" for i in range(20_000)])  # seconds of work
        killer.join()
        assert remote.embed(["and the next call works"]).shape == (1, 512) and remote._proc.pid != pid
    finally:
        remote.close()
