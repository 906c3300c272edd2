"""Training diagnostics as data: the learner's named statistics to CSV and TensorBoard.

:class:`MetricsLogger` writes ``metrics.csv`` (one row per logged learner update: ``step``,
``env_steps`` and every named statistic, e.g. ``temperature/<objective>``, ``kl_q/<objective>``,
``kl_mean``) and ``eval.csv`` (per-objective evaluation returns), and mirrors both to TensorBoard
(``tb/``) when enabled.  A new statistic key rewrites the CSV with the widened header.  On resume
the rows newer than the checkpoint are dropped, so a killed run's log continues without duplicates.
"""
from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class CsvLog:
    """An append-only CSV with a header that widens when new keys appear."""

    def __init__(self, path: str | os.PathLike[str], truncate_after: int | None = None, step_key: str = "step"):
        self.path = Path(path)
        self.step_key = step_key
        self.fields: list[str] = []
        if self.path.exists():
            with open(self.path, newline="") as f:
                reader = csv.DictReader(f)
                self.fields = list(reader.fieldnames or [])
                rows = list(reader)
            if truncate_after is not None:
                kept = [r for r in rows if _as_int(r.get(step_key)) <= truncate_after]
                if len(kept) != len(rows):
                    self._rewrite(kept)

    def _rewrite(self, rows: list[dict[str, Any]]) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)

    def write(self, row: Mapping[str, Any]) -> None:
        new = [k for k in row if k not in self.fields]
        if new:
            old_rows: list[dict[str, Any]] = []
            if self.path.exists() and self.fields:
                with open(self.path, newline="") as f:
                    old_rows = list(csv.DictReader(f))
            self.fields = self.fields + new
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._rewrite(old_rows)
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=self.fields, extrasaction="ignore").writerow(dict(row))


def _as_int(value: Any) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return -1


class MetricsLogger:
    """CSV (``metrics.csv``, ``eval.csv``, ``episodes.csv``) and optional TensorBoard logging of named statistics.

    Args:
        out_dir: run folder.
        tensorboard: also write TensorBoard event files under ``out_dir/tb``.
        resume_step: drop CSV rows with ``step`` above it (resuming from that checkpoint).
    """

    def __init__(self, out_dir: str | os.PathLike[str], tensorboard: bool = True, resume_step: int | None = None):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.train_csv = CsvLog(self.out_dir / "metrics.csv", truncate_after=resume_step, step_key="env_steps")
        self.eval_csv = CsvLog(self.out_dir / "eval.csv", truncate_after=resume_step, step_key="env_steps")
        self.episode_csv = CsvLog(self.out_dir / "episodes.csv", truncate_after=resume_step, step_key="env_steps")
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.out_dir / "tb"))
            except Exception:  # noqa: BLE001 - tensorboard missing or broken: CSV still works
                self._tb = None

    def log_update(self, update: int, env_steps: int, stats: Mapping[str, float]) -> None:
        self.train_csv.write({"step": update, "env_steps": env_steps, **stats})
        if self._tb is not None:
            for key, value in stats.items():
                if isinstance(value, (int, float)) and math.isfinite(value):
                    self._tb.add_scalar(f"learner/{key}", value, env_steps)

    def log_eval(self, env_steps: int, returns: Mapping[str, float]) -> None:
        self.eval_csv.write({"env_steps": env_steps, **returns})
        if self._tb is not None:
            for key, value in returns.items():
                self._tb.add_scalar(f"eval/{key}", value, env_steps)

    def log_episode(self, env_steps: int, returns: Mapping[str, float], termination: str | None,
                    extra: Mapping[str, Any] | None = None) -> None:
        """One finished training episode of the exploring policy (the behaviour learning curve);
        ``extra`` (e.g. length, actor, policy version) goes to the CSV only."""
        self.episode_csv.write({"env_steps": env_steps, **returns, **(extra or {}), "termination": termination or ""})
        if self._tb is not None:
            for key, value in returns.items():
                self._tb.add_scalar(f"episode/{key}", value, env_steps)

    def flush(self) -> None:
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None
