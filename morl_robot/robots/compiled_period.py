"""The compliant MuJoCo robot's control period in compiled code (issue 36).

One call runs a whole period: per physics substep the F/T reading rotated into the base frame and
tared, the force-limited admittance (:class:`~morl_robot.robots.compliance.ForceLimitedAdmittance`'s
law), the reference joint velocities plus the DLS pseudo-inverse image of its correction, the lead
and range clamps of the position targets, the ``ctrl`` write, then MuJoCo's C ``mj_step`` from the
wheel's own ``libmujoco`` (the library the bindings loaded: the same plugins and callbacks); no
Python between substeps, the GIL released.  The maths is
:meth:`~morl_robot.robots.kinematics.CartesianController.run_period_reference`'s, which stays the
reference (``tests/test_sawyer_env_fast_path.py`` holds them together); the parameters come from
the same dataclasses, copied into two flat arrays per period (:class:`PeriodBlocks`).

The source is :mod:`morl_robot.robots.compiled_period_kernel`, compiled by numba once per machine
(a few seconds, the first process) into an object file cached under ``$MORL_ROBOT_CACHE_DIR``
(default ``~/.cache/morl_robot/compiled``, :func:`cache_dir`; keyed by the kernel's source,
llvmlite, MuJoCo and the CPU).  Every other process loads that with llvmlite alone (milliseconds;
numba is not imported).  Floating point:
the small dot products are rounded as OpenBLAS's x86-64 AVX2 kernels round numpy's (fused
multiply-adds, in their order), so the period is bit-identical to the Python one there; elsewhere
they differ in the last bits.  See docs/explanation/contact_control.md.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import logging
import os
import tempfile
from pathlib import Path

import mujoco
import numpy as np

from morl_robot.errors import ConfigError

log = logging.getLogger(__name__)

_KERNEL = Path(__file__).with_name("compiled_period_kernel.py")
# the kernel's block layout (compiled_period_kernel keeps the same numbers; a test checks them)
IX_HEADER, F_HEADER = 12, 17
ENTRY = "morl_robot_compliant_period"
_PERIOD: ctypes._CFuncPtr | None = None  # the loaded function: double period(double* f, int64_t* ix)
_ENGINE = None  # llvmlite's MCJIT engine holding its code (kept alive with the process)


def _libmujoco() -> ctypes.CDLL:
    """The MuJoCo shared library of the ``mujoco`` wheel (already loaded by its bindings: the same handle)."""
    folder = os.path.dirname(mujoco.__file__)
    found = sorted(glob.glob(os.path.join(folder, "libmujoco.so*")) + glob.glob(os.path.join(folder, "libmujoco*.dylib"))
                   + glob.glob(os.path.join(folder, "mujoco.dll")))
    if not found:
        raise ConfigError(f"no MuJoCo shared library (libmujoco.so*) next to the mujoco bindings in {folder}")
    return ctypes.CDLL(found[0])


def cache_dir() -> Path | None:
    """Where the compiled period is kept: ``$MORL_ROBOT_CACHE_DIR/compiled``, else the user's cache
    (``$XDG_CACHE_HOME`` or ``~/.cache``) ``/morl_robot/compiled``, else this package's ``__pycache__``
    (numba's own order, reversed); None: nowhere writable, compile in every process."""
    env = os.environ.get("MORL_ROBOT_CACHE_DIR")
    if env:
        candidates = [Path(env) / "compiled"]
    else:
        user = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        candidates = [Path(user) / "morl_robot" / "compiled", _KERNEL.parent / "__pycache__"]
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
        except OSError:
            continue
        return path
    return None


def _cache_key(llvm) -> str:
    h = hashlib.sha256(_KERNEL.read_bytes())
    for part in (llvm.llvm_version_info, mujoco.__version__, llvm.get_process_triple(), llvm.get_host_cpu_name(),
                 llvm.get_host_cpu_features().flatten()):
        h.update(repr(part).encode())
    return h.hexdigest()[:24]


def _compile_or_load(llvm) -> bytes:
    """The period's object code: from the cache, else compiled (numba) and cached, one process at a time."""
    folder = cache_dir()
    if folder is None:
        log.info("compiled period: no writable cache directory (MORL_ROBOT_CACHE_DIR); compiling in this process")
        from morl_robot.robots.compiled_period_kernel import compile_period

        return compile_period()
    path = folder / f"period-{_cache_key(llvm)}.o"
    lock = None
    if not path.exists():
        try:
            import fcntl  # POSIX: the first process compiles, the others wait for its file
        except ImportError:
            fcntl = None
        if fcntl is not None:
            lock = open(folder / ".lock", "w")  # noqa: SIM115 (held until the file is written)
            fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        if path.exists():
            return path.read_bytes()
        from morl_robot.robots.compiled_period_kernel import compile_period

        log.info("compiling the compliant control period (once per machine): %s", path)
        code = compile_period()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(code)
        os.replace(tmp, path)
        return code
    finally:
        if lock is not None:
            lock.close()


def period_function() -> ctypes._CFuncPtr:
    """The compiled period, ``double period(double* f, int64_t* ix)`` (ctypes; loaded once per process)."""
    global _PERIOD, _ENGINE
    if _PERIOD is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.add_symbol("morl_robot_mj_step", ctypes.cast(_libmujoco().mj_step, ctypes.c_void_p).value)
        code = _compile_or_load(llvm)
        target = llvm.Target.from_default_triple().create_target_machine()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target)
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        address = engine.get_function_address(ENTRY)
        if not address:
            raise ConfigError(f"the compiled control period has no symbol {ENTRY!r}")
        _ENGINE = engine
        _PERIOD = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p)(address)
    return _PERIOD


class PeriodBlocks:
    """The two arrays one compiled period reads and writes, for one controller and one ``MjData``.

    ``ix`` (int64): the model, data, sensor-site rotation (9,), force reading (3,), qpos and ctrl
    addresses; substeps, A' (the targets moved), J (the joints), nq, nu, has-free-motion; then each
    target's qpos address, ctrl index and joint index (A' each).  ``f`` (float64): dt, stiffness,
    damping, force limit, dead band, speed limit, lead, the force peak; bias (3), v_ref (3), the
    admittance offset (3); then q̇_ref (J), velocity limit (J), pinv_lin (J×3), target lower,
    upper, free-motion step, targets (A' each), q̇ scratch (J).  The views must outlive the blocks:
    they keep ``data``.
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, xmat: np.ndarray, reading: np.ndarray,
                 q_adr: np.ndarray, ctrl_adr: np.ndarray, joint_of: np.ndarray, n_joints: int) -> None:
        self.data, self.model = data, model
        self.ctrl = data.ctrl
        self._views = (xmat, reading, data.qpos, self.ctrl)  # numpy views of data's buffers
        a = len(q_adr)
        self.n_moved, self.n_joints = a, n_joints
        self.ix = np.zeros(IX_HEADER + 3 * a, dtype=np.int64)
        self.ix[:IX_HEADER] = [model._address, data._address, xmat.ctypes.data, reading.ctypes.data,
                               data.qpos.ctypes.data, data.ctrl.ctypes.data, 0, a, n_joints, model.nq, model.nu, 0]
        self.ix[IX_HEADER:] = np.concatenate([q_adr, ctrl_adr, joint_of])
        self.f = np.zeros(F_HEADER + 6 * n_joints + 4 * a)
        j, o = n_joints, F_HEADER
        self.qdot_ref, self.velocity_limit = self.f[o:o + j], self.f[o + j:o + 2 * j]
        self.pinv_lin = self.f[o + 2 * j:o + 5 * j].reshape(j, 3)
        o += 5 * j
        self.lower, self.upper = self.f[o:o + a], self.f[o + a:o + 2 * a]
        self.free_step, self.moved = self.f[o + 2 * a:o + 3 * a], self.f[o + 3 * a:o + 4 * a]
        self._args = (self.f.ctypes.data, self.ix.ctypes.data)
        self._run = period_function()

    def run(self, substeps: int, has_free: bool) -> float:
        """The period, with ``f``'s values set; returns the force peak (also in ``f``)."""
        self.ix[6], self.ix[11] = substeps, has_free
        return self._run(*self._args)
