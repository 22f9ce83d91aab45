"""``engine.limit_numpy_threads``: the server bounds numpy's BLAS pool to one thread (docs/BENCHMARKS.md, "Threads")."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import engine


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture()
def restore_blas():
    original = threadpool_limits(limits=None)  # remembers every pool's size now
    yield
    original.restore_original_limits()


def test_numpy_blas_pool_is_bounded_to_one_thread(restore_blas):
    assert _blas_threads(), "numpy's BLAS library was not found: the server could not bound it"
    threadpool_limits(2, user_api="blas")
    assert engine.limit_numpy_threads(1) is True
    assert _blas_threads() == [1] * len(_blas_threads())
    a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) / 1e4
    assert np.allclose(a @ a.T, np.einsum("ik,jk->ij", a, a))  # products still right with one thread


def test_the_server_bounds_it_before_its_first_trace(restore_blas):
    from app.runtime import models

    threadpool_limits(2, user_api="blas")
    models.bound_threads.cache_clear()  # as a fresh server process
    models.bound_threads()
    assert _blas_threads() == [1] * len(_blas_threads())
