"""Training one run: its config and presets (config, torch-free), the metrics schema (metrics,
torch-free), the corpus and its folds (data), the trainer (trainer), progress bars and what a run
leaves on disk (artifacts). Only data, trainer and artifacts import torch."""
