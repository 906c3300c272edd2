"""Preference sweeps: train one single-policy learner per preference setting, gather the returns.

MO-MPO is a single-policy method; a Pareto front is traced by running it for many settings of the
per-objective KL bounds ε_k (Abdolmaleki et al., 2020, §5.2 and §8: "producing a Pareto front of
policies requires iterating over a relatively large number of ε's"), and scalarized MPO by
running it over many weight vectors.  :func:`run_sweep` does that in parallel:

* a ``spawn`` multiprocessing pool (safe with torch and MuJoCo), each worker with
  ``torch.set_num_threads(1)`` and single-threaded BLAS, so P processes use P cores;
* a tqdm progress bar;
* every return vector kept with the :class:`Setting` that produced it, failures kept as data
  (the traceback text) instead of aborting the sweep;
* the non-dominated front (with its settings) and its hypervolume;
* optionally the result written atomically to JSON after every finished setting, so a sweep cut
  short by ``time_limit_s`` or a crash leaves a valid partial file;
* with ``keep_finished``, a later sitting keeps that file's finished settings and runs only the rest
  (a sweep whose runs have no checkpoints of their own can still span several sittings); ``meta``
  (the budget every setting was run with) is stored in the file and must match to keep anything.

``train_and_evaluate`` must be picklable (a module-level function or a ``functools.partial`` of
one) because workers are spawned.  It returns the policy's mean return vector (K,), or a pair
``(returns, extras)`` with a JSON-able dict of what else the run measured (e.g. the step at which
it converged), kept in :attr:`SweepRecord.extras`.
"""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from morl_robot.errors import ConfigError
from morl_robot.evaluation.hypervolume import hypervolume
from morl_robot.evaluation.pareto import pareto_mask
from morl_robot.records import write_json_atomic

__all__ = ["Setting", "SweepRecord", "SweepResult", "run_sweep", "settings_grid"]

_SINGLE_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Setting:
    """One preference setting of a sweep.

    ``name`` identifies the setting in reports; ``params`` holds what the training function needs
    (e.g. ``{"algorithm": "mo-mpo", "epsilons": [0.01, 0.012]}``); ``seed`` the run's seed.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params), "seed": self.seed}


@dataclass
class SweepRecord:
    """The outcome of one setting: its return vector (K,) or the error that stopped it."""

    setting: Setting
    returns: NDArray[np.float64] | None
    error: str | None
    seconds: float
    extras: dict[str, Any] = field(default_factory=dict)  # what else the run reported

    @property
    def ok(self) -> bool:
        return self.returns is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "setting": self.setting.to_dict(),
            "returns": None if self.returns is None else self.returns.tolist(),
            "error": self.error,
            "seconds": self.seconds,
            **({"extras": self.extras} if self.extras else {}),
        }


@dataclass
class SweepResult:
    """All records of a sweep plus its non-dominated front and hypervolume.

    ``returns`` (R, K) and ``settings`` cover the successful records in completion order;
    ``front`` (F, K) holds the distinct non-dominated return vectors, ``front_settings[i]`` the
    settings that reached ``front[i]`` (several settings can reach the same point).
    ``ref`` (K,) is the reference point the hypervolume used.
    """

    records: list[SweepRecord]
    ref: NDArray[np.float64] | None
    wall_time_s: float  #: this sitting's
    processes: int
    not_run: list[Setting] = field(default_factory=list)
    #: the wall times of the earlier sittings of a resumed sweep (read from its progress file)
    earlier_sittings_s: list[float] = field(default_factory=list)
    #: what every setting was run with (budget, learner changes), stored to check a resumed sweep
    meta: dict[str, Any] | None = None
    #: how many records an earlier sitting finished (kept, not rerun: ``keep_finished``)
    kept: int = 0
    #: records (as stored) of settings an earlier sitting ran and this one does not (e.g. another
    #: ε_time): carried along in the progress file so a sitting over fewer settings loses none
    other_settings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_wall_time_s(self) -> float:
        """Every sitting's wall time added up: what the whole sweep cost."""
        return float(sum(self.earlier_sittings_s)) + self.wall_time_s

    @property
    def ok_records(self) -> list[SweepRecord]:
        return [r for r in self.records if r.ok]

    @property
    def returns(self) -> NDArray[np.float64]:
        ok = self.ok_records
        if not ok:
            return np.zeros((0, 0 if self.ref is None else len(self.ref)))
        return np.stack([r.returns for r in ok])  # type: ignore[misc]

    @property
    def settings(self) -> list[Setting]:
        return [r.setting for r in self.ok_records]

    @property
    def front(self) -> NDArray[np.float64]:
        rets = self.returns
        return rets[pareto_mask(rets)] if rets.shape[0] else rets

    @property
    def front_settings(self) -> list[list[Setting]]:
        rets, sets = self.returns, self.settings
        return [[s for r, s in zip(rets, sets) if np.array_equal(r, p)] for p in self.front]

    @property
    def hypervolume(self) -> float | None:
        if self.ref is None or self.returns.shape[0] == 0:
            return None
        return hypervolume(self.returns, self.ref)

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "wall_time_s": self.wall_time_s,
            "sittings_wall_time_s": [*self.earlier_sittings_s, self.wall_time_s],
            "total_wall_time_s": self.total_wall_time_s,
            "ref": None if self.ref is None else self.ref.tolist(),
            "hypervolume": self.hypervolume,
            "front": self.front.tolist(),
            "front_settings": [[s.name for s in group] for group in self.front_settings],
            "records": [r.to_dict() for r in self.records],
            "failures": sum(not r.ok for r in self.records),
            "not_run": [s.to_dict() for s in self.not_run],
            **({"meta": self.meta} if self.meta is not None else {}),
            "kept_from_earlier_sittings": self.kept,
            **({"records_of_other_settings": self.other_settings} if self.other_settings else {}),
        }


def _init_worker() -> None:
    """Pool initializer: one thread per worker (torch and BLAS)."""
    for name in _SINGLE_THREAD_ENV:
        os.environ[name] = "1"
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass


def _run_one(
    job: tuple[int, Setting, Callable[[Setting], Any]],
) -> tuple[int, list[float] | None, str | None, float, dict[str, Any]]:
    """Worker body: run one setting, return (index, returns, error, seconds, extras)."""
    index, setting, fn = job
    start = time.perf_counter()
    try:
        got = fn(setting)
        extras: dict[str, Any] = {}
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict):
            got, extras = got
        out = np.asarray(got, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(out)):
            raise ValueError(f"non-finite return vector {out.tolist()}")
        return index, out.tolist(), None, time.perf_counter() - start, extras
    except Exception:  # noqa: BLE001 - failures are recorded as data
        return index, None, traceback.format_exc(), time.perf_counter() - start, {}


def run_sweep(
    settings: Sequence[Setting],
    train_and_evaluate: Callable[[Setting], NDArray[np.float64]],
    processes: int = 1,
    ref: Sequence[float] | NDArray[np.float64] | None = None,
    out_path: str | os.PathLike[str] | None = None,
    time_limit_s: float | None = None,
    progress: bool = True,
    description: str = "sweep",
    resumes: bool = False,
    keep_finished: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> SweepResult:
    """Run ``train_and_evaluate(setting) -> returns (K,)`` for every setting and gather the front.

    ``processes`` ≤ 1 runs in this process (no pool; torch threads set to 1 for the duration).
    ``ref`` (K,) is the hypervolume reference point; ``None`` leaves the hypervolume unset.
    ``out_path``: a JSON file rewritten atomically after each finished setting.
    ``time_limit_s``: stop after this many seconds; unfinished settings are listed in
    ``SweepResult.not_run`` (workers still running are terminated).
    ``resumes``: the job skips or continues what an earlier sitting did in the same folder, so the
    earlier sittings' wall times recorded in ``out_path`` count too (``total_wall_time_s``); without
    it a rerun starts afresh and so does its timing.
    ``keep_finished`` (implies ``resumes``): the settings ``out_path`` records as finished with a
    return vector are kept and not run again (failed and unfinished ones are); a setting counts as the
    same when its name, params and seed are.  Records of settings not in ``settings`` stay in the file
    (``records_of_other_settings``).  ``meta`` (JSON-able) is stored in ``out_path``; keeping needs the
    file's ``meta`` to equal it, else :class:`ConfigError` names the difference.
    """
    settings = list(settings)
    ref_arr = None if ref is None else np.asarray(ref, dtype=np.float64).reshape(-1)
    meta_json = None if meta is None else json.loads(json.dumps(dict(meta)))  # as the file will hold it
    resumes = resumes or keep_finished
    earlier = earlier_sittings(out_path) if resumes and out_path is not None else []
    done, others = (finished_records(out_path, settings, meta_json) if keep_finished and out_path is not None
                    else ({}, []))
    kept = len(done)
    todo = [i for i in range(len(settings)) if i not in done]
    processes = max(1, min(int(processes), len(todo))) if todo else 1
    start = time.perf_counter()

    def snapshot() -> SweepResult:
        pending = [s for i, s in enumerate(settings) if i not in done]
        return SweepResult(
            records=[done[i] for i in sorted(done)],
            ref=ref_arr,
            wall_time_s=time.perf_counter() - start,
            processes=processes,
            not_run=pending,
            earlier_sittings_s=earlier,
            meta=meta_json,
            kept=kept,
            other_settings=others,
        )

    def record(index: int, rets: list[float] | None, err: str | None, secs: float,
               extras: dict[str, Any] | None = None) -> None:
        done[index] = SweepRecord(
            setting=settings[index],
            returns=None if rets is None else np.asarray(rets, dtype=np.float64),
            error=err,
            seconds=secs,
            extras=dict(extras or {}),
        )
        if out_path is not None:
            write_json_atomic(out_path, snapshot().to_dict())

    bar = _progress_bar(len(todo), description + (f" ({kept} kept)" if kept else ""), progress)
    jobs = [(i, settings[i], train_and_evaluate) for i in todo]
    try:
        if processes == 1:
            _run_inline(jobs, record, bar, start, time_limit_s)
        else:
            _run_pool(jobs, processes, record, bar, start, time_limit_s)
    finally:
        bar.close()
    result = snapshot()
    if out_path is not None:
        write_json_atomic(out_path, result.to_dict())
    return result


def finished_records(out_path: str | os.PathLike[str], settings: Sequence[Setting],
                     meta: Mapping[str, Any] | None) -> tuple[dict[int, SweepRecord], list[dict[str, Any]]]:
    """The records of ``settings`` (by index) that the progress file ``out_path`` holds as finished
    (a return vector, no error), and the file's finished records of other settings (as stored);
    ``({}, [])`` when there is no file.  The file's ``meta`` must equal ``meta``: a sweep is only
    continued with the budget it started with.  An unreadable file is named in the error and left as
    it is."""
    path = Path(out_path)
    data = _read_progress(path)
    if data is None:
        return {}, []
    try:
        rows = list(data["records"]) + list(data.get("records_of_other_settings", []))
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a readable sweep progress file ({exc}); move it aside to start "
                          "the sweep afresh") from exc
    theirs, mine = data.get("meta") or {}, dict(meta or {})
    if theirs != mine:
        diff = [k for k in sorted({*theirs, *mine}) if theirs.get(k) != mine.get(k)]
        raise ConfigError(f"{path} was run with other settings ({', '.join(diff)} differ: "
                          f"{ {k: theirs.get(k) for k in diff} } there, { {k: mine.get(k) for k in diff} } now); "
                          "rerun with the same options to continue it, or give another --out")
    index = {json.dumps(s.to_dict(), sort_keys=True): i for i, s in enumerate(settings)}
    kept: dict[int, SweepRecord] = {}
    others: dict[str, dict[str, Any]] = {}
    for row in rows:
        try:
            key = json.dumps(row["setting"], sort_keys=True)
            if row.get("returns") is None or row.get("error"):
                continue
            if key not in index:
                others[key] = row
                continue
            returns = np.asarray(row["returns"], dtype=np.float64).reshape(-1)
            seconds = float(row["seconds"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: a record is malformed ({exc}); move the file aside to start the sweep "
                              "afresh") from exc
        if not np.all(np.isfinite(returns)):
            continue
        i = index[key]
        kept[i] = SweepRecord(setting=settings[i], returns=returns, error=None, seconds=seconds,
                              extras=dict(row.get("extras") or {}))
    return kept, list(others.values())


def earlier_sittings(out_path: str | os.PathLike[str]) -> list[float]:
    """The wall times (s) of the sittings recorded in a sweep's progress file ``out_path``, so a
    resumed sweep reports what all its sittings cost; ``[]`` when there is none yet.  A file written
    before sittings were recorded counts as one sitting of its ``wall_time_s``; an unreadable one is
    named in the error (nothing is overwritten)."""
    path = Path(out_path)
    data = _read_progress(path)
    if data is None:
        return []
    try:
        sittings = data["sittings_wall_time_s"] if "sittings_wall_time_s" in data else [data["wall_time_s"]]
        out = [float(x) for x in sittings]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a readable sweep progress file ({exc}); move it aside to start "
                          "the sweep's timing afresh") from exc
    if not all(math.isfinite(x) and x >= 0 for x in out):
        raise ConfigError(f"{path}: sittings_wall_time_s must be finite seconds >= 0, got {out}")
    return out


def _read_progress(path: Path) -> dict[str, Any] | None:
    """A sweep's progress file as JSON, ``None`` when there is none; an unreadable one is named in the
    error and left as it is."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise ConfigError(f"{path}: not a readable sweep progress file ({exc}); move it aside to start "
                          "the sweep afresh") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a readable sweep progress file (a JSON object is expected); move it "
                          "aside to start the sweep afresh")
    return data


def _progress_bar(total: int, description: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=description, disable=not enabled, dynamic_ncols=True)


def _run_inline(
    jobs: list[tuple[int, Setting, Callable[[Setting], Any]]],
    record: Callable[..., None],
    bar: Any,
    start: float,
    time_limit_s: float | None,
) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for job in jobs:
            if time_limit_s is not None and time.perf_counter() - start > time_limit_s:
                break
            record(*_run_one(job))
            bar.update(1)
    finally:
        torch.set_num_threads(threads)


def _run_pool(
    jobs: list[tuple[int, Setting, Callable[[Setting], Any]]],
    processes: int,
    record: Callable[..., None],
    bar: Any,
    start: float,
    time_limit_s: float | None,
) -> None:
    ctx = mp.get_context("spawn")
    pool = ctx.Pool(processes=processes, initializer=_init_worker)
    try:
        results = pool.imap_unordered(_run_one, jobs, chunksize=1)
        for _ in range(len(jobs)):
            if time_limit_s is None:
                item = results.next()
            else:
                remaining = time_limit_s - (time.perf_counter() - start)
                if remaining <= 0:
                    break
                try:
                    item = results.next(timeout=remaining)
                except mp.TimeoutError:
                    break
            record(*item)
            bar.update(1)
    finally:
        pool.terminate()
        pool.join()


def settings_grid(name_format: str, seed: int = 0, **axes: Sequence[Any]) -> list[Setting]:
    """Cartesian product of parameter ``axes`` as settings named ``name_format.format(**params)``."""
    import itertools

    keys = list(axes)
    out = []
    for values in itertools.product(*(axes[k] for k in keys)):
        params = dict(zip(keys, values))
        out.append(Setting(name=name_format.format(**params), params=params, seed=seed))
    return out

