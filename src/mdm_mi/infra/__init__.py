"""Infrastructure every layer may use: errors, files and checkpoints, config and flags, devices and
GPU slots, the training loop and its resumable state, and MLflow tracking. It imports nothing outside
infra/."""
