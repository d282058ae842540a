"""The training pipeline: `fit` (`_fit`), its settings (`_setup`), the loop (`_trainer`), one
update (`_step`), windows and teacher signals (`_windows`, `_signals`), free-run
validation (`_validation`), checkpoints and history (`_checkpoint`, `_history`)."""
