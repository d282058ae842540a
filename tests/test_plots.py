"""The run folder's pictures: the free run's end is shown against the data's range, and a
recording with more than three variables is drawn in its first three principal components."""

import numpy as np

from dsr._cli import _plots


def test_pictures_show_the_end_of_the_free_run_and_pca_for_many_variables(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 5))
    coords, labels = _plots._projection(x, [f"v{i}" for i in range(5)], tau=3)
    assert [s.split()[0] for s in labels] == ["PC1", "PC2", "PC3"]
    p = coords(x)
    assert p.shape == (3000, 3) and np.all(np.isfinite(p))
    np.testing.assert_allclose(p.mean(0), 0, atol=1e-9)  # centred on the reference
    var = p.var(0)
    assert np.all(np.diff(var) <= 1e-9)  # components in decreasing variance
    bad = x.copy()
    bad[5] = np.inf
    assert np.isnan(coords(bad)[5]).all() and np.isfinite(coords(bad)[6]).all()
    _, lab3 = _plots._projection(x[:, :3], ["a", "b", "c"], tau=3)
    _, lab1 = _plots._projection(x[:, :1], ["a"], tau=3)
    assert lab3 == ["a", "b", "c"] and lab1 == ["a(t)", "a(t−3)", "a(t−6)"]
    g = rng.normal(size=(1, 9000, 5)) * 3
    out = _plots.draw(str(tmp_path), history=None, x_ref=x, x_gens=g, names=list("abcde"),
                      dt=None, tau=3, context=100, plot_steps=500, ref_label="test data")
    assert sorted(p.rsplit("/", 1)[1] for p in out) == ["spectra.png", "state_space.png",
                                                          "timeseries.png"]
    import matplotlib.image

    wide = matplotlib.image.imread(str(tmp_path / "timeseries.png")).shape[1]
    short = _plots.draw(str(tmp_path / "s"), history=None, x_ref=x, x_gens=g[:, :500],
                        names=list("abcde"), dt=None, tau=3, context=100, plot_steps=500,
                        ref_label="test data")
    narrow = matplotlib.image.imread(short[0]).shape[1]
    assert wide > 1.3 * narrow  # a second column (the end of the run) only when it is longer
