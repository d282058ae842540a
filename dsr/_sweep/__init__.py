"""Hyper-parameter sweeps: a grid of training settings times seeds, trained by `dsr.fit` as
one vmapped ensemble and selected on free-run validation."""
