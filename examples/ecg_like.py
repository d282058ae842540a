"""A real-world-like recording for the command line: a noisy 5-d delay embedding of a
synthetic ECG.

The ECG comes from the dynamical model of McSharry, Clifford, Tarassenko, Smith (2003), *A
dynamical model for generating synthetic electrocardiogram signals*, IEEE Trans. Biomed.
Eng. 50(3) ("ECGSYN"): a limit cycle (x, y) whose phase θ drives z through five Gaussian
bumps (the P, Q, R, S and T waves), `ż = −Σ a_i Δθ_i exp(−Δθ_i²/2b_i²) − (z − z0(t))`.
What makes it like a recording rather than a clean benchmark:

- heart-rate variability: the RR interval is 1 s modulated by breathing (respiratory sinus
  arrhythmia, 0.25 Hz, ±5 %) plus a slow random walk (Ornstein–Uhlenbeck, sd 0.03 s,
  time constant 10 s) — so the dynamics are partly stochastic;
- baseline wander from breathing (z0 = 0.005 sin(2π 0.25 t), ECGSYN's) and 5 % white
  measurement noise; the ECG is scaled to ECGSYN's −0.4 … 1.2 mV;
- only the ECG is observed, sampled at 250 Hz, and delay-embedded into 5 columns
  `ecg(t), ecg(t−40 ms), …, ecg(t−160 ms)` (τ = 10 samples), as the public 5-d ECG set of
  the GTF authors is.

    python -m examples.ecg_like [--n-steps 100000] [--n-test 20000] [--out results/ecg]

writes `ecg_train.csv` and `ecg_test.csv` (independent noise and heart-rate paths) with a
header row; then e.g. `python -m dsr fit results/ecg/ecg_train.csv --test
results/ecg/ecg_test.csv --runs 4 --out results/ecg/run`.
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

FS = 250.0  # Hz
THETA = np.array([-np.pi / 3, -np.pi / 12, 0.0, np.pi / 12, np.pi / 2])
A = np.array([1.2, -5.0, 30.0, -7.5, 0.75])
B = np.array([0.25, 0.1, 0.1, 0.1, 0.4])
RESP_HZ = 0.25


def _rr_intervals(n: int, dt: float, key) -> np.ndarray:
    """RR interval (s) per sample: breathing modulation plus an Ornstein–Uhlenbeck walk."""
    tau_ou, sd = 10.0, 0.03
    a = np.exp(-dt / tau_ou)
    eps = np.asarray(jax.random.normal(key, (n,)), np.float64) * sd * np.sqrt(1 - a * a)
    ou = np.zeros(n)
    for i in range(1, n):  # a 1-d recursion: plain NumPy is fast enough
        ou[i] = a * ou[i - 1] + eps[i]
    t = np.arange(n) * dt
    return 1.0 + 0.05 * np.sin(2 * np.pi * RESP_HZ * t) + ou


def _field(s, t, omega):
    x, y, z = s
    alpha = 1.0 - jnp.sqrt(x * x + y * y)
    th = jnp.arctan2(y, x)
    theta, a, b = (jnp.asarray(c, x.dtype) for c in (THETA, A, B))  # float32 under x64 too
    d = jnp.mod(th - theta + jnp.pi, 2 * jnp.pi) - jnp.pi
    z0 = 0.005 * jnp.sin(2 * jnp.pi * RESP_HZ * t)
    dz = -jnp.sum(a * d * jnp.exp(-d * d / (2 * b * b))) - (z - z0)
    return jnp.stack([alpha * x - omega * y, alpha * y + omega * x, dz])


@jax.jit
def _integrate(s0, omegas, dt):
    """RK4 with 4 substeps per sample (the QRS complex lasts a few samples)."""
    h = dt / 4

    def sample(carry, inp):
        s, t = carry
        omega = inp
        for _ in range(4):
            k1 = _field(s, t, omega)
            k2 = _field(s + h / 2 * k1, t + h / 2, omega)
            k3 = _field(s + h / 2 * k2, t + h / 2, omega)
            k4 = _field(s + h * k3, t + h, omega)
            s, t = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
        return (s, t), s[2]

    _, z = jax.lax.scan(sample, (s0, jnp.zeros((), s0.dtype)), omegas)
    return z


def ecg_like(n_steps: int, *, seed: int = 0, m: int = 5, tau: int = 10,
             noise: float = 0.05) -> tuple[np.ndarray, list[str]]:
    """`(x (n_steps, m), column names)`: the noisy delay-embedded synthetic ECG."""
    k_rr, k_noise = jax.random.split(jax.random.key(seed))
    dt = 1.0 / FS
    n_raw = n_steps + (m - 1) * tau + int(5 * FS)  # 5 s transient
    omegas = 2 * np.pi / _rr_intervals(n_raw, dt, k_rr)
    z = np.asarray(_integrate(jnp.array([1.0, 0.0, 0.0], jnp.float32),
                              jnp.asarray(omegas, jnp.float32), dt), np.float64)
    z = z[int(5 * FS):]
    z = -0.4 + 1.6 * (z - z.min()) / (z.max() - z.min())  # ECGSYN's scaling to mV
    z = z + noise * z.std() * np.asarray(jax.random.normal(k_noise, z.shape), np.float64)
    cols = [z[(m - 1 - j) * tau:(m - 1 - j) * tau + n_steps] for j in range(m)]
    names = ["ecg(t)"] + [f"ecg(t-{4 * tau * j}ms)" for j in range(1, m)]
    return np.stack(cols, axis=1), names


def write_csv(path: str, x: np.ndarray, names: list[str]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savetxt(path, x, delimiter=",", header=",".join(names), comments="", fmt="%.6g")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m examples.ecg_like",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n-steps", type=int, default=100_000, help="training samples")
    p.add_argument("--n-test", type=int, default=20_000, help="test samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join("results", "ecg"))
    args = p.parse_args(argv)
    for name, n, seed in (("ecg_train.csv", args.n_steps, args.seed),
                          ("ecg_test.csv", args.n_test, args.seed + 1)):
        x, names = ecg_like(n, seed=seed)
        path = os.path.join(args.out, name)
        write_csv(path, x, names)
        print(f"wrote {path}: {x.shape[0]} samples × {x.shape[1]} columns {names} "
              f"({x.shape[0] / FS:.0f} s at {FS:.0f} Hz)")


if __name__ == "__main__":
    main()
