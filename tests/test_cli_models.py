"""The command line open to a user's model: `--import MODULE --model MODULE:CLASS` with the
constructor protocol (`dsr/_cli/_models.py`), recorded in the run; `evaluate` and `generate`
of that run need the same `--import` (a run folder never makes dsr import code); the AL-RNN
as `--model alrnn --relu-units P`."""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dsr import AbstractGTFModel
from dsr._cli import main
from helpers import CLI_EVAL as EVAL, CLI_FAST as FAST, cli_signal

pytestmark = pytest.mark.filterwarnings("ignore:after .* a free run of the model")


class DendRNN(AbstractGTFModel):
    """A user's model, defined in this test module and trained from the command line:
    `z_t = A ⊙ z_{t-1} + W tanh(V z_{t-1}) + h`, `x̂_t = B z_t` (three-method contract)."""

    A: jax.Array
    W: jax.Array
    V: jax.Array
    h: jax.Array
    B: jax.Array
    obs_dim: int = eqx.field(static=True)
    latent_dim: int = eqx.field(static=True)
    hidden_dim: int = eqx.field(static=True)
    input_dim: int = eqx.field(static=True)

    def __init__(self, obs_dim, latent_dim, hidden_dim, *, key, input_dim=0, dtype=jnp.float32):
        kW, kV = jax.random.split(key)
        self.obs_dim, self.latent_dim, self.hidden_dim = obs_dim, latent_dim, hidden_dim
        self.input_dim = input_dim
        self.A = jnp.full((latent_dim,), 0.9, dtype)
        self.W = 0.1 * jax.random.normal(kW, (latent_dim, hidden_dim), dtype)
        self.V = 0.1 * jax.random.normal(kV, (hidden_dim, latent_dim), dtype)
        self.h = jnp.zeros((latent_dim,), dtype)
        self.B = jnp.eye(obs_dim, latent_dim, dtype=dtype)

    def step(self, z, s=None):
        return self.A * z + self.W @ jnp.tanh(self.V @ z) + self.h

    def jacobian(self, z, s=None):
        return jnp.diag(self.A) + (self.W * (1 - jnp.tanh(self.V @ z) ** 2)) @ self.V


class NeedsDepth(DendRNN):
    def __init__(self, obs_dim, latent_dim, hidden_dim, depth, *, key):
        super().__init__(obs_dim, latent_dim, hidden_dim, key=key)


#: CLI_FAST less `--hidden-dim` (the AL-RNN has no hidden layer)
NO_L = [a for i, a in enumerate(FAST) if "--hidden-dim" not in FAST[max(0, i - 1):i + 1]]
USER = ["--import", "test_cli_models", "--model", "test_cli_models:DendRNN"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_models")
    np.save(d / "train.npy", cli_signal(400))
    np.save(d / "test.npy", cli_signal(400, phase=3.0))
    return d


def test_a_user_model_trains_evaluates_and_generates_with_import(data, capsys):
    run = data / "user"
    assert main(["fit", str(data / "train.npy"), "--out", str(run)] + USER + FAST) == 0
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["options"]["import"] == ["test_cli_models"]
    assert cfg["options"]["model"] == "test_cli_models:DendRNN"
    assert cfg["model"]["class"] == "test_cli_models.DendRNN"
    assert cfg["model"]["hyperparameters"]["hidden_dim"] == 8 and cfg["fit"]["status"] == "done"
    capsys.readouterr()
    # without --import: one line naming the module to import, for every command
    for argv in (["evaluate", str(run), "--test", str(data / "test.npy")] + EVAL,
                 ["generate", str(run), "--steps", "10", "--out", str(data / "g.npy")],
                 ["fit", "--resume", str(run), "--no-progress"]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--import test_cli_models" in err, err
    imp = ["--import", "test_cli_models"]
    assert main(["evaluate", str(run), "--test", str(data / "test.npy"), "--no-plots"]
                + imp + EVAL) == 0
    assert main(["generate", str(run), "--steps", "10", "--out", str(data / "g.npy")] + imp) == 0
    assert np.load(data / "g.npy").shape == (2, 10, 2)


@pytest.mark.parametrize("argv, message", [
    (["--model", "test_cli_models:DendRNN"], "give --import test_cli_models"),
    (["--import", "no_such_module_xyz", "--model", "no_such_module_xyz:M"],
     "--import no_such_module_xyz: cannot import it"),
    (["--import", "test_cli_models", "--model", "test_cli_models:Missing"],
     "has no dsr model class 'Missing'"),
    (["--import", "test_cli_models", "--model", "test_cli_models:NeedsDepth"],
     "constructor needs depth"),
    (USER + ["--relu-units", "2"], "--relu-units: the model test_cli_models:DendRNN"),
    (["--model", "alrnn"], "constructor needs --relu-units"),
    (["--model", "alrnn", "--relu-units", "1", "--hidden-dim", "16"],
     "--hidden-dim: the model alrnn (ALRNN) takes no hidden_dim"),
    (["--model", "lssm", "--rank", "2"], "--rank: the model lssm (LSSM) takes no rank"),
    (["--model", "a-b:C"], "MODULE:CLASS"),
])
def test_model_option_errors_are_one_line(data, capsys, argv, message):
    out = data / "bad"
    base = NO_L if "alrnn" in argv else FAST
    assert main(["fit", str(data / "train.npy"), "--out", str(out)] + argv + base) in (1, 2)
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0, err
    assert not out.exists()


def test_alrnn_on_the_command_line(data):
    run = data / "alrnn"
    assert main(["fit", str(data / "train.npy"), "--out", str(run), "--model", "alrnn",
                 "--latent-dim", "4", "--relu-units", "2"] + NO_L) == 0
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["model"]["class"] == "ALRNN"
    assert cfg["model"]["hyperparameters"]["relu_units"] == 2


@pytest.mark.slow  # 4000 GTF-DEER updates on CPU (≈ 5 min)
def test_alrnn_reconstructs_lorenz63_from_the_command_line(tmp_path):
    """`python -m dsr fit lorenz63.npz --model alrnn --relu-units 6 ...`: the run's
    evaluation on the test part reaches what the Python test demands."""
    import data_gen
    from test_models import RECONSTRUCTED_DSTSP, TRUE_LAMBDA

    data = tmp_path / "lorenz63.npz"
    data_gen.lorenz63().save(data)
    run = tmp_path / "run"
    assert main(["fit", str(data), "--test", str(data), "--out", str(run), "--model", "alrnn",
                 "--latent-dim", "20", "--relu-units", "6", "--steps", "4000", "--seq-len",
                 "200", "--batch-size", "16", "--lr", "3e-3", "--alpha", "0.1", "--solver",
                 "deer", "--n-samples", "10000", "--lyapunov-steps", "10000", "--gen-factor",
                 "1", "--no-plots", "--no-progress"]) == 0
    m = json.loads((run / "metrics.json").read_text())
    s = m["summary"]
    assert s["n_diverged"] == 0
    assert s["D_stsp"]["median"] < RECONSTRUCTED_DSTSP, s["D_stsp"]
    assert abs(s["lambda_max"]["median"] - TRUE_LAMBDA) < 0.15 * TRUE_LAMBDA, s["lambda_max"]
