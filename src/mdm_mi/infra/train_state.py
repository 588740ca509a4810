"""A training run's full state in one safetensors file, so that a killed run continues where its last
save left it instead of starting again.

    state = TrainState(Path("results/sudoku/model/resume"), every=250, rng=gen, fingerprint={...})
    start, history, minutes, running = state.load(params, opt, average, best)   # zeros when nothing was saved
    ...
    state.save(step, params, opt, average, history, minutes, running, best)   # every ``every`` steps

The file holds the parameters, AdamW's moments and step counts, the weight average (if any), the
global torch RNG and the batch generator (a ``torch.Generator`` or a ``numpy.random.Generator``),
the history so far, the elapsed minutes and, for a run that keeps its best-scoring weights
(:class:`~mdm_mi.infra.train_loop.BestWeights`), those weights, their step, loss and the scores so far.
It is written atomically, so a kill during a save leaves the previous save intact; it loads without
unpickling. The run resumed from it draws the same batches and gives the same weights as one that was
never stopped. ``fingerprint`` (the model and training settings) must match the saved one: resuming
with other settings is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from mdm_mi.infra.checkpoint import save_tensors
from mdm_mi.infra.errors import InputError

STATE_FILE = "train_state.safetensors"
MOMENTS = ("exp_avg", "exp_avg_sq", "step")


class TrainState:
    """Saves and restores one optimisation run (see the module docstring)."""

    def __init__(self, directory: str | Path, every: int, rng, fingerprint: dict):
        self.path = Path(directory) / STATE_FILE
        self.every, self.rng, self.fingerprint = every, rng, json.loads(json.dumps(fingerprint))

    def clear(self) -> None:
        """Remove the saved state (the run finished and its weights are saved)."""
        self.path.unlink(missing_ok=True)

    def due(self, step: int) -> bool:
        """Whether the state is saved after ``step`` steps (1-based count of steps done)."""
        return self.every > 0 and step % self.every == 0

    def save(self, step: int, params: list[torch.Tensor], opt: torch.optim.Optimizer, average,
             history: list[dict], minutes: float, running: float, best=None) -> None:
        """Write the state after ``step`` steps atomically (``best``: a BestWeights or None)."""
        tensors = {f"param.{i}": p.detach().cpu().contiguous() for i, p in enumerate(params)}
        for i, p in enumerate(params):
            for key in MOMENTS:
                if key in opt.state.get(p, {}):
                    tensors[f"{key}.{i}"] = opt.state[p][key].detach().cpu().reshape(-1).contiguous()
        if average is not None:
            tensors |= {f"avg.{i}": a.detach().cpu().contiguous() for i, a in enumerate(average.avg)}
        tensors["torch_rng"] = torch.get_rng_state()
        meta = {"step": step, "history": history, "minutes": minutes, "running": running, "fingerprint": self.fingerprint}
        if best is not None:
            meta["best"] = {"step": best.step, "loss": best.loss, "history": best.history}
            if best.weights is not None:
                tensors |= {f"best.{i}": w.detach().cpu().contiguous() for i, w in enumerate(best.weights)}
        if isinstance(self.rng, torch.Generator):
            tensors["batch_rng"] = self.rng.get_state()
        else:
            meta["numpy_rng"] = self.rng.bit_generator.state
        save_tensors(tensors, self.path, {"state": json.dumps(meta)})

    def load(self, params: list[torch.Tensor], opt: torch.optim.Optimizer, average,
             best=None) -> tuple[int, list[dict], float, float]:
        """Restore a saved state into ``params``, ``opt``, ``average``, ``best`` and the generators →
        ``(steps done, history, minutes, loss sum since the last history row)``; zeros when there is none."""
        if not self.path.is_file():
            return 0, [], 0.0, 0.0
        try:
            tensors = load_file(str(self.path))
            with safe_open(str(self.path), "pt") as fh:
                meta = json.loads(fh.metadata()["state"])
        except (SafetensorError, OSError, KeyError, json.JSONDecodeError) as exc:
            raise InputError(f"training state {self.path} is unreadable ({exc}); delete it to start afresh") from None
        if meta["fingerprint"] != self.fingerprint:
            diff = sorted(k for k in {*meta["fingerprint"], *self.fingerprint}
                          if meta["fingerprint"].get(k) != self.fingerprint.get(k))
            raise InputError(f"training state {self.path} was saved with other settings ({', '.join(diff)}); "
                             "delete it to start afresh")
        with torch.no_grad():
            for i, p in enumerate(params):
                p.copy_(tensors[f"param.{i}"])
                if f"exp_avg.{i}" in tensors:
                    opt.state[p] = {k: tensors[f"{k}.{i}"].reshape(p.shape if k != "step" else ()).clone()
                                    for k in MOMENTS}
            if average is not None:
                for i, a in enumerate(average.avg):
                    a.copy_(tensors[f"avg.{i}"])
        if best is not None:
            _restore_best(best, meta, tensors, params)
        torch.set_rng_state(tensors["torch_rng"])
        if isinstance(self.rng, torch.Generator):
            self.rng.set_state(tensors["batch_rng"])
        else:
            self.rng.bit_generator.state = meta["numpy_rng"]
        return int(meta["step"]), list(meta["history"]), float(meta["minutes"]), float(meta["running"])


def _restore_best(best, meta: dict, tensors: dict, params: list[torch.Tensor]) -> None:
    """Put a saved run's best-scoring weights, step, loss and scores into ``best`` (a BestWeights)."""
    saved = meta.get("best")
    if saved is None:
        raise InputError("the saved training state kept no best weights; delete it to start afresh")
    best.step, best.loss, best.history = int(saved["step"]), float(saved["loss"]), list(saved["history"])
    if "best.0" in tensors:
        best.weights = [tensors[f"best.{i}"].to(p.device).clone() for i, p in enumerate(params)]
