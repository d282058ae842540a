"""A user's own model, solver and α strategy, defined here, outside dsr: registered with
`dsr.register`, they train, save, load, checkpoint and resume bit-exactly."""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dsr
from dsr import _io

# the tiny user model's free runs diverge after a few updates: not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore:after .* a free run of the model")


@dsr.register
class TinyPLRNN(dsr.AbstractGTFModel, dsr.AbstractMARModel):
    """`z_t = A ⊙ z_{t-1} + W relu(z_{t-1}) + h`, `x̂_t = B z_t`."""

    A: jax.Array
    W: jax.Array
    h: jax.Array
    B: jax.Array
    obs_dim: int = eqx.field(static=True)
    latent_dim: int = eqx.field(static=True)
    input_dim: int = eqx.field(static=True)

    def __init__(self, obs_dim, latent_dim, *, key, dtype=jnp.float32):
        self.obs_dim, self.latent_dim, self.input_dim = obs_dim, latent_dim, 0
        self.A = jnp.full((latent_dim,), 0.9, dtype)
        self.W = 0.1 * jax.random.normal(key, (latent_dim, latent_dim), dtype)
        self.h = jnp.zeros((latent_dim,), dtype)
        self.B = jnp.eye(obs_dim, latent_dim, dtype=dtype)

    def step(self, z, s=None):
        return self.A * z + self.W @ jax.nn.relu(z) + self.h

    def jacobian(self, z, s=None):
        return jnp.diag(self.A) + self.W * (z > 0).astype(z.dtype)

    def mar_terms(self, n_units, p):
        r = slice(self.latent_dim - n_units, None)
        return jnp.abs(1 - self.A[r]) ** p + jnp.mean(jnp.abs(self.W[r]) ** p, 1) \
            + jnp.abs(self.h[r]) ** p


@dsr.register
class Wrapped(dsr.AbstractSolver):
    """A solver holding non-scalar fields: another solver (a module) and an array."""

    inner: dsr.AbstractSolver
    weights: jax.Array
    label: tuple = ("wrapped", 1)

    def initial_guess(self, zbar):
        return self.inner.initial_guess(zbar)

    def solve(self, step, jac, params, z0, us, z_init=None):
        return self.inner.solve(step, jac, params, z0, us, z_init)


@dsr.register
class HalvingAlpha(dsr.AbstractAlpha):
    """α halves every `every` updates, down to `floor`."""

    alpha0: float = eqx.field(static=True)
    every: int = eqx.field(static=True)
    floor: float = eqx.field(default=0.05, static=True)
    failure_step: float = eqx.field(default=0.05, static=True, kw_only=True)

    def initial(self):
        return self.alpha0

    def is_due(self, step):
        return (step > 0) & (step % self.every == 0)

    def updated(self, alpha, model, x, step, steps):
        return jnp.maximum(alpha / 2, self.floor)


@dsr.register
class LinearAlpha(dsr.AbstractAlpha):
    """α falls linearly from `alpha0` to 0 over the fit: it needs the update index and the
    total, which `updated` receives."""

    alpha0: float = eqx.field(static=True)
    failure_step: float = eqx.field(default=0.05, static=True, kw_only=True)

    def initial(self):
        return self.alpha0

    def is_due(self, step):
        return True

    def updated(self, alpha, model, x, step, steps):
        return jnp.asarray(self.alpha0 * (1 - step / steps), alpha.dtype)


class WrongJacobian(TinyPLRNN):
    """TinyPLRNN with the sign of its Jacobian's nonlinear part flipped."""

    def jacobian(self, z, s=None):
        return jnp.diag(self.A) - self.W * (z > 0).astype(z.dtype)


class Unregistered(dsr.AbstractSolver):
    def initial_guess(self, zbar):
        return None

    def solve(self, step, jac, params, z0, us, z_init=None):
        raise NotImplementedError


def _data(n=400):
    t = np.arange(n) * 0.1
    return np.stack([np.sin(t), np.cos(1.3 * t)], 1)


X = _data()
SOLVER = Wrapped(dsr.Sequential(), jnp.arange(3.0))
KW = dict(steps=8, seq_len=12, batch_size=2, progress=False, solver=SOLVER,
          key=jax.random.key(3), learning_rate=1e-2,
          regularization=dsr.Regularization(1, 0.1))


def _model():
    return TinyPLRNN(2, 3, key=jax.random.key(0), dtype=jnp.float64)


def _stop_after(n):
    def cb(step, model):
        if step == n:
            raise KeyboardInterrupt

    return cb


def _assert_same(a, b):
    assert type(a) is type(b)
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(u, v)


def test_a_three_method_model_trains_with_deer_as_sequentially():
    """TinyPLRNN gives `step`, `jacobian` and `B` only (the diagonal and the projection
    products are the family's defaults): DEER and the sequential solver give the same fit."""
    kw = dict(KW, solver=dsr.DEER(), regularization=None)
    deer = dsr.fit(_model(), X, 0.3, **kw)
    seq = dsr.fit(_model(), X, 0.3, **dict(kw, solver=dsr.Sequential()))
    np.testing.assert_allclose(deer.history["loss"], seq.history["loss"], rtol=1e-10)
    assert deer.history["converged"].all()
    for u, v in zip(jax.tree_util.tree_leaves(deer.model), jax.tree_util.tree_leaves(seq.model)):
        np.testing.assert_allclose(u, v, rtol=1e-8, atol=1e-12)
    quasi = dsr.fit(_model(), X, 0.3, **dict(kw, solver=dsr.DEER(jacobian="diag")))
    np.testing.assert_allclose(quasi.history["loss"][0], seq.history["loss"][0], rtol=1e-8)


def test_a_wrong_jacobian_is_refused_by_fit_naming_the_method():
    wrong = WrongJacobian(2, 3, key=jax.random.key(0), dtype=jnp.float64)
    with pytest.raises(ValueError) as e:
        dsr.fit(wrong, X, 0.3, **KW)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("WrongJacobian.jacobian disagrees")
    with pytest.raises(ValueError, match="WrongJacobian.jacobian "):
        dsr.check_model(dsr.ensemble(lambda k: WrongJacobian(2, 3, key=k), 2,
                                     key=jax.random.key(0)))
    # a wrong product only: the check names that method
    bad_product = type("BadProduct", (TinyPLRNN,), {
        "jacobian_product": lambda self, z, P, s=None: self.jacobian(z, s) @ P.T})
    with pytest.raises(ValueError, match=r"^BadProduct\.jacobian_product disagrees"):
        dsr.check_model(bad_product(2, 3, key=jax.random.key(0)))
    dsr.check_model(_model())  # the right one passes, in float64 and float32
    dsr.check_model(TinyPLRNN(2, 3, key=jax.random.key(0)))
    res = dsr.fit(wrong, X, 0.3, **dict(KW, steps=2), check_model=False)  # the check is off
    assert res.history["loss"].shape == (2,)


def test_alpha_strategies_see_the_update_index_and_the_total():
    res = dsr.fit(_model(), X, LinearAlpha(0.8), **dict(KW, steps=4))
    np.testing.assert_allclose(res.history["alpha"], [0.8, 0.6, 0.4, 0.2])


def test_the_alpha_rise_warning_names_the_strategys_failure_step():
    with pytest.warns(UserWarning, match="alpha was raised by 0.2 "):
        res = dsr.fit(_model(), X, dsr.ConstantAlpha(0.1, failure_step=0.2),
                      **dict(KW, steps=2, regularization=None, max_failures=1,
                             solver=dsr.DEER(max_iter=1, tol=1e-30)))
    assert res.alpha > 0.25


def test_register_rejects_what_files_cannot_name():
    with pytest.raises(TypeError, match="not a subclass"):
        dsr.register(int)
    with pytest.raises(TypeError, match="abstract"):
        dsr.register(dsr.AbstractSolver)


def test_user_classes_fit_checkpoint_and_resume_bit_exactly(tmp_path):
    alpha = HalvingAlpha(0.5, 3)
    full = dsr.fit(_model(), X, alpha, **KW)
    assert np.all(np.isfinite(full.history["loss"])) and np.all(full.history["applied"])
    np.testing.assert_array_equal(full.history["alpha"][[0, 3, 6]], [0.5, 0.25, 0.125])
    assert not eqx.tree_equal(full.model, _model())  # it trained
    ck = tmp_path / "run.ckpt"
    part = dsr.fit(_model(), X, alpha, **KW, checkpoint=ck, checkpoint_every=2,
                   callback=_stop_after(5), eval_every=1)
    assert part.interrupted and os.path.exists(ck)
    resumed = dsr.fit(_model(), X, alpha, **KW, resume=ck)
    _assert_same(resumed.model, full.model)
    np.testing.assert_array_equal(resumed.history["loss"], full.history["loss"])
    # the stored settings: the user α by value, the solver's module and array by fingerprint
    header, _ = _io.read_container(os.fspath(ck), ("checkpoint",))
    settings = header["settings"]
    assert settings["alpha"] == {"class": "test_extension.HalvingAlpha", "alpha0": 0.5,
                                 "every": 3, "floor": 0.05, "failure_step": 0.05}
    assert settings["solver"]["class"] == "test_extension.Wrapped"
    assert set(settings["solver"]["weights"]) == {"sha256"}
    assert settings["solver"]["label"] == ["wrapped", 1]
    # another array in the solver is another setting
    other = Wrapped(dsr.Sequential(), jnp.arange(3.0) + 1)
    with pytest.raises(ValueError, match="solver"):
        dsr.fit(_model(), X, alpha, **dict(KW, solver=other), resume=ck)
    # resume_settings="checkpoint" rebuilds the user α from the registry (the call's differs)
    again = dsr.fit(_model(), X, 0.3, **KW, resume=ck, resume_settings="checkpoint")
    _assert_same(again.model, full.model)


def test_user_model_save_load_round_trip(tmp_path):
    model = eqx.tree_at(lambda m: m.h, _model(), jnp.array([0.1, -0.2, 0.3]))
    dsr.save(tmp_path / "m.dsr", model, extra={"note": 1})
    back = dsr.load(tmp_path / "m.dsr")
    _assert_same(back, model)
    ens = dsr.ensemble(lambda k: TinyPLRNN(2, 3, key=k), 2, key=jax.random.key(1))
    dsr.save(tmp_path / "e.dsr", ens)
    _assert_same(dsr.load(tmp_path / "e.dsr").stacked, ens.stacked)


def test_unregistered_class_in_a_file_is_a_one_line_error(tmp_path):
    model = _model()
    dsr.save(tmp_path / "m.dsr", model)
    header, payload = _io.read_container(os.fspath(tmp_path / "m.dsr"), ("model",))
    header["class"] = "someone.else.Model"
    _io.write_container(tmp_path / "x.dsr", "model", header, payload)
    with pytest.raises(dsr.FileFormatError) as e:
        dsr.load(tmp_path / "x.dsr")
    msg = str(e.value)
    assert "\n" not in msg and "someone.else.Model" in msg and "dsr.register(cls)" in msg
    with pytest.raises(TypeError, match="register"):
        dsr.save(tmp_path / "u.dsr", dsr.TTTModel(2, 4, key=jax.random.key(0)))


def test_unregistered_solver_fits_but_is_not_rebuilt(tmp_path):
    from dsr._config import from_config, to_config

    config = to_config(Unregistered())
    assert config == {"class": "test_extension.Unregistered"}
    with pytest.raises(dsr.FileFormatError, match="dsr.register"):
        from_config(config, "solver")


def test_no_concrete_method_of_a_dsr_module_is_overridden():
    """Equinox's abstract-or-final rule: a subclass implements abstract methods only, or
    overrides one of the concrete defaults a family declares overridable (the GTF family's
    Jacobian diagonal and forcing-projection products, `dsr.models._base.OVERRIDABLE`)."""
    from dsr.models._base import OVERRIDABLE
    import importlib
    import inspect
    import pkgutil

    classes = set()
    for info in pkgutil.walk_packages(dsr.__path__, "dsr."):
        if "._cli" not in info.name:
            mod = importlib.import_module(info.name)
            classes |= {c for c in vars(mod).values() if isinstance(c, type)
                        and issubclass(c, eqx.Module) and c.__module__.startswith("dsr")}
    found = []
    for cls in classes:
        for attr in vars(cls):
            base = next((b for b in cls.__mro__[1:] if attr in vars(b)), None)
            if attr.startswith("__") or base is None or base in (eqx.Module, object):
                continue
            if base is dsr.AbstractGTFModel and attr in OVERRIDABLE:
                continue
            old = vars(base)[attr]
            if (inspect.isfunction(old) or isinstance(old, property)) \
                    and not getattr(old, "__isabstractmethod__", False):
                found.append(f"{cls.__qualname__}.{attr} overrides {base.__qualname__}.{attr}")
    assert not found


class NoDtype(TinyPLRNN):
    """A constructor without `dtype=`: it always builds float32 arrays."""

    def __init__(self, obs_dim, latent_dim, *, key):
        super().__init__(obs_dim, latent_dim, key=key)


def test_saving_a_model_whose_constructor_ignores_its_dtype_names_the_dtype(tmp_path):
    dsr.register(NoDtype)
    model = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64),
                                   NoDtype(2, 3, key=jax.random.key(0)))
    with pytest.raises(TypeError, match="takes no `dtype` argument and builds float32 arrays; "
                                        "the model's are float64"):
        dsr.save(tmp_path / "m.dsr", model)
