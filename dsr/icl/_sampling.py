"""Online sampling of random noisy linear dynamical systems, one fresh system per sequence.

The conventions are those of `data_gen.lds` (Vladarean, Zhang, Sra (2026), *On learning
linear dynamical systems in context with attention layers*, ICLR 2026, Sec. 3):

    x_0 ~ N(0, I),   y_t = C x_t + v_t,   x_{t+1} = A x_t + w_t,
    v_t ~ N(0, σ_v²),   w_t ~ N(0, Σ_w),   t = 0 … T−1,

with scalar observations (`C` is `(1, d)`), `T = n_steps` observations per sequence. Every
law of `A` below is *centrosymmetric* (A and −A equally likely), the assumption behind the
paper's Lemma 4.1. `v = (v_1, …, v_d)` are eigenvalues with magnitudes `|v_i| ~ U(rho)`
and independent random signs, so ρ(A) ≤ max(rho) < 1.

Settings (the paper's experiments (a)–(d), and `data_gen.lds`'s own law):

- `"a"`: `A = diag(v)`, `c = 1` (all ones), `Σ_w = σ_w² I` (the paper's main setting).
- `"b"`: `A = Qᵀ diag(v) Q` with `Q` Haar-orthogonal (a general normal matrix), `c = 1`.
- `"c"`: as `"a"` but a non-isotropic process noise `Σ_w = σ_w² R Rᵀ / d`, `R` i.i.d.
  N(0, 1) per sequence (Wishart, mean σ_w² I).
- `"d"`: `A = P⁻¹ diag(v) P` non-normal, `P = U diag(σ) Vᵀ` with `U`, `V` Haar-orthogonal
  and `σ_i ~ U(0.5, 2)` (condition number of `P` at most 4), `c = 1`.
- `"lds"`: `data_gen.lds`'s law: `A = G r / ρ(G)`, `G` i.i.d. N(0, 1/d), `r ~ U(rho)`;
  `C` i.i.d. N(0, 1/d); `Σ_w = σ_w² I`.

The paper specifies (a)–(d) only by these names ("A diagonal, c = 1", "general
orthogonal", "non-isotropic Σ_w", "non-normal"); the exact laws above are this library's
choices.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._checks import check_choice, check_int, check_key, check_real

SETTINGS = ("a", "b", "c", "d", "lds")
LAW_ARGUMENTS = ("n_steps", "state_dim", "setting", "rho", "sigma_w", "sigma_v")


class LDSBatch(NamedTuple):
    """A batch of sequences with the systems that produced them.

    **Attributes:**

    - `y`: observations `(B, T)`; `x`: states `(B, T, d)` (`y_t = C x_t + v_t`).
    - `A`: `(B, d, d)`; `C`: `(B, 1, d)`; `Sigma_w`: process covariance `(B, d, d)`;
      `sigma_v`: observation noise standard deviation (a scalar array).
    """

    y: Float[Array, "B T"]
    x: Float[Array, "B T d"]
    A: Float[Array, "B d d"]
    C: Float[Array, "B 1 d"]
    Sigma_w: Float[Array, "B d d"]
    sigma_v: Float[Array, ""]


class _Pool:
    """Uniforms and standard normals (Box–Muller) cut from one flat uniform draw.

    One draw instead of one per array: on CPU each `jax.random` call adds seconds of
    compilation (docs: Performance, "Design measurements")."""

    def __init__(self, key, n, dtype):
        self.u = jax.random.uniform(key, (n,), dtype, minval=jnp.finfo(dtype).tiny)
        self.pos = 0

    @staticmethod
    def size(kind, shape) -> int:
        n = math.prod(shape)
        return n if kind == "u" else 2 * (-(-n // 2))

    def uniform(self, shape):
        n = math.prod(shape)
        out = self.u[self.pos: self.pos + n].reshape(shape)
        self.pos += n
        return out

    def normal(self, shape):
        n = math.prod(shape)
        m = -(-n // 2)
        r = jnp.sqrt(-2.0 * jnp.log(self.uniform((m,))))
        theta = (2.0 * math.pi) * self.uniform((m,))
        return jnp.concatenate([r * jnp.cos(theta), r * jnp.sin(theta)])[:n].reshape(shape)


def _draws(setting, B, d, T):
    """The random arrays a batch needs, in the order they are taken from the pool."""
    sq = ("n", (B, d, d))
    need = {"a": [("u", (2, B, d))], "b": [("u", (2, B, d)), sq], "c": [("u", (2, B, d)), sq],
            "d": [("u", (2, B, d)), sq, sq, ("u", (B, d))],
            "lds": [sq, ("u", (B,)), ("n", (B, 1, d))]}[setting]
    return need + [("n", (T + 1, B, d + 1))]


def _eigenvalues(pool, B, d, lo, hi):
    u = pool.uniform((2, B, d))
    return (lo + (hi - lo) * u[0]) * jnp.where(u[1] < 0.5, -1.0, 1.0).astype(u.dtype)


def _orthogonal(pool, B, d):
    """Haar-orthogonal matrices: QR of Gaussian ones with the signs of diag(R) fixed."""
    Q, R = jnp.linalg.qr(pool.normal((B, d, d)))
    return Q * jnp.sign(jnp.diagonal(R, axis1=-2, axis2=-1))[:, None, :]


def _systems(pool, B, d, setting, lo, hi, sigma_w, dtype):
    """`(A, C, L_w)` with `Σ_w = L_w L_wᵀ`, for one of `SETTINGS`."""
    eye = jnp.broadcast_to(jnp.eye(d, dtype=dtype), (B, d, d))
    ones = jnp.ones((B, 1, d), dtype)
    L_w = sigma_w * eye
    scale = 1.0 / math.sqrt(d)
    if setting == "lds":
        G = scale * pool.normal((B, d, d))
        radius = jnp.max(jnp.abs(jnp.linalg.eigvals(G)), axis=-1).astype(dtype)
        r = lo + (hi - lo) * pool.uniform((B,))
        return G * (r / radius)[:, None, None], scale * pool.normal((B, 1, d)), L_w
    D = eye * _eigenvalues(pool, B, d, lo, hi)[:, None, :]
    if setting == "b":
        Q = _orthogonal(pool, B, d)
        return jnp.swapaxes(Q, -1, -2) @ D @ Q, ones, L_w
    if setting == "c":
        return D, ones, sigma_w * scale * pool.normal((B, d, d))
    if setting == "d":
        U, V = _orthogonal(pool, B, d), _orthogonal(pool, B, d)
        sig = 0.5 + 1.5 * pool.uniform((B, d))
        P = (U * sig[:, None, :]) @ jnp.swapaxes(V, -1, -2)
        P_inv = (V / sig[:, None, :]) @ jnp.swapaxes(U, -1, -2)
        return P_inv @ D @ P, ones, L_w
    return D, ones, L_w  # "a"


def simulate(z, A, C, L_w, sigma_v):
    """Run the recurrences for a batch of systems from standard normals `z (T + 1, B, d + 1)`
    (`x_0`, then `(w_t, v_t)`): returns `(y (B, T), x (B, T, d))`."""
    d = A.shape[-1]
    x0 = z[0, :, :d]
    w = jnp.einsum("bij,tbj->tbi", L_w, z[1:, :, :d])
    v = sigma_v * z[1:, :, d]

    def step(x, wv):
        wt, vt = wv
        y = jnp.einsum("bd,bd->b", C[:, 0], x) + vt
        return jnp.einsum("bij,bj->bi", A, x) + wt, (y, x)

    _, (y, x) = jax.lax.scan(step, x0, (w, v))
    return y.T, jnp.swapaxes(x, 0, 1)


def _sample_impl(key, lo, hi, sigma_w, sigma_v, *, B, T, d, setting, dtype):
    draws = _draws(setting, B, d, T)
    pool = _Pool(key, sum(_Pool.size(*spec) for spec in draws), dtype)
    A, C, L_w = _systems(pool, B, d, setting, lo, hi, sigma_w, dtype)
    y, x = simulate(pool.normal(draws[-1][1]), A, C, L_w, sigma_v)
    Sigma_w = L_w @ jnp.swapaxes(L_w, -1, -2)
    return LDSBatch(y, x, A, C, Sigma_w, jnp.asarray(sigma_v, dtype))


sample_batch = jax.jit(_sample_impl, static_argnames=("B", "T", "d", "setting", "dtype"))


class SystemLaw(NamedTuple):
    """Validated parameters of the system law (see `sample_lds`)."""

    n_steps: int
    state_dim: int
    setting: str
    rho: tuple[float, float]
    sigma_w: float
    sigma_v: float

    def sample(self, key, batch_size: int, dtype) -> LDSBatch:
        """A batch from this law (jitted; no validation)."""
        lo, hi = self.rho
        return sample_batch(key, lo, hi, self.sigma_w, self.sigma_v, B=batch_size,
                            T=self.n_steps, d=self.state_dim, setting=self.setting,
                            dtype=jnp.dtype(dtype))


def system_law(*, n_steps=30, state_dim=5, setting="a", rho=(0.5, 0.95), sigma_w=0.1,
               sigma_v=0.1, min_steps=3) -> SystemLaw:
    """Validate the law's parameters (messages name the argument; defaults as `sample_lds`)."""
    n_steps = check_int("n_steps", n_steps, min_steps)
    state_dim = check_int("state_dim", state_dim, 1)
    check_choice("setting", setting, SETTINGS)
    try:
        lo, hi = rho
    except (TypeError, ValueError):
        raise ValueError(f"`rho` must be a (low, high) pair; got {rho!r}.") from None
    lo = check_real("rho[0]", lo, 0.0)
    hi = check_real("rho[1]", hi, lo)
    sigma_w = check_real("sigma_w", sigma_w, 0.0)
    sigma_v = check_real("sigma_v", sigma_v, 0.0)
    return SystemLaw(n_steps, state_dim, setting, (lo, hi), sigma_w, sigma_v)


def sample_lds(
    key: PRNGKeyArray,
    batch_size: int,
    *,
    n_steps: int = 30,
    state_dim: int = 5,
    setting: str = "a",
    rho: tuple[float, float] = (0.5, 0.95),
    sigma_w: float = 0.1,
    sigma_v: float = 0.1,
    dtype=None,
) -> LDSBatch:
    """A fresh batch of random LDS sequences, one system per sequence (JAX, jitted).

    **Arguments:**

    - `key`: PRNG key; `batch_size`: number of sequences B.
    - `n_steps`: observations per sequence T; `state_dim`: d.
    - `setting`: the law of `(A, c, Σ_w)`: `"a"`, `"b"`, `"c"`, `"d"` (the experiments of
      Vladarean et al. (2026)) or `"lds"` (`data_gen.lds`'s law); see the module notes.
    - `rho`: range of the eigenvalue magnitudes (`"lds"`: of the spectral radius).
    - `sigma_w`, `sigma_v`: process and observation noise scales.
    - `dtype`: floating dtype (default: JAX's default float).

    **Returns:** an `LDSBatch` (observations `y (B, T)`, states, `A`, `C`, `Sigma_w`,
    `sigma_v`).
    """
    key = check_key("key", key)
    batch_size = check_int("batch_size", batch_size, 1)
    law = system_law(n_steps=n_steps, state_dim=state_dim, setting=setting, rho=rho,
                     sigma_w=sigma_w, sigma_v=sigma_v, min_steps=1)
    dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
    return law.sample(key, batch_size, dtype)
