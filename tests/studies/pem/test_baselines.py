"""Baselines and the batch solvers on an easy problem: independent uniform sources, 40 dB."""

import numpy as np
import pytest

from reprolab.studies.pem.baselines import (
    CorInfoMaxConfig,
    FastICAConfig,
    NSMConfig,
    corinfomax,
    fastica,
    nsm,
    whiten_uncentred,
)
from reprolab.studies.pem.batch import BatchConfig, train_batch
from reprolab.studies.pem.domains import projection
from reprolab.studies.pem.metrics import sinr_db
from reprolab.studies.pem.pem import init_network, objective, outputs
from reprolab.studies.pem.sources import correlated_uniform, mix


@pytest.fixture(scope="module")
def easy():
    rng = np.random.default_rng(0)
    sources = correlated_uniform(1500, 3, 0.0, rng)
    return mix(sources, 6, 40.0, rng)


def test_whitening_keeps_the_mean_and_whitens_the_covariance(easy):
    H = whiten_uncentred(easy.observations, 3)
    np.testing.assert_allclose(np.cov(H.T, bias=True), np.eye(3), atol=1e-10)
    assert np.abs(H.mean(axis=0)).max() > 0.1  # not centred: NSM needs the offset


def test_fastica_separates_independent_sources(easy):
    for fun in ("logcosh", "exp", "cube"):
        for algorithm in ("parallel", "deflation"):
            config = FastICAConfig(max_iter=200, fun=fun, algorithm=algorithm)
            assert sinr_db(easy.sources, fastica(easy.observations, 3, 0, config)) > 20.0


def test_nsm_outputs_are_nonnegative(easy):
    config = NSMConfig(epochs=2, batch_size=20, lr=0.03, lr_decay_epochs=5.0, inner_iterations=20)
    y = nsm(easy.observations, 3, config, np.random.default_rng(1))
    assert y.shape == (1500, 3) and y.min() >= 0.0


def test_corinfomax_outputs_stay_in_the_domain_and_separate(easy):
    config = CorInfoMaxConfig(
        epochs=10,
        batch_size=20,
        lr=1.0,
        lr_decay_epochs=5.0,
        forget=0.99,
        eps=1e-3,
        gamma_e=1.0,
        init_by=5.0,
        init_be=1000.0,
        inner_iterations=10,
        inner_lr=0.5,
    )
    y = corinfomax(easy.observations, 3, "box", config, np.random.default_rng(2))
    assert y.min() >= 0.0 and y.max() <= 1.0
    assert sinr_db(easy.sources, y) > 8.0  # unseparated mixtures score about 3 dB


def test_batch_ascent_raises_the_objective_and_detmax_separates(easy):
    X, box = easy.observations, projection("box")
    pem_batch = BatchConfig(betas=(200.0,), eps=1e-3, lr=0.01, iterations=100, init_scale=0.3)
    rng = np.random.default_rng(3)
    start = init_network(X, 3, "box", 0.3, 1e-3, np.random.default_rng(3))
    net = train_batch(X, 3, "box", pem_batch, rng)
    assert objective(net.W, net.b, X, box, 200.0, 1e-3) > objective(
        start.W, start.b, X, box, 200.0, 1e-3
    )
    detmax = BatchConfig(
        betas=(200.0, 1000.0, 5000.0), eps=1e-3, lr=0.01, iterations=200, init_scale=0.3
    )
    net = train_batch(X, 3, "box", detmax, np.random.default_rng(3))
    assert sinr_db(easy.sources, outputs(net, X, "box")) > 20.0
