"""The compiled control period's source (numba): :mod:`morl_robot.robots.compiled_period` compiles it
to machine code once per machine and loads that without numba.  Only this file is compiled; editing
it invalidates the cached code (its hash is the cache key).

``period(f, ix)``: two C arrays, ``f`` (float64) and ``ix`` (int64), laid out as
:class:`morl_robot.robots.compiled_period.PeriodBlocks` says; returns the period's force peak (N).
"""
from __future__ import annotations

import math

from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

# ix: the addresses and sizes (PeriodBlocks keeps the same numbers)
IX_MODEL, IX_DATA, IX_XMAT, IX_READING, IX_QPOS, IX_CTRL = 0, 1, 2, 3, 4, 5
IX_SUBSTEPS, IX_MOVED, IX_JOINTS, IX_NQ, IX_NU, IX_HAS_FREE = 6, 7, 8, 9, 10, 11
IX_HEADER = 12  # then q_adr (A'), ctrl_adr (A'), joint_of (A')
# f: the scalars, then the arrays
F_DT, F_STIFFNESS, F_DAMPING, F_FORCE_LIMIT, F_DEADBAND, F_MAX_SPEED, F_LEAD, F_PEAK = 0, 1, 2, 3, 4, 5, 6, 7
F_BIAS, F_V_REF, F_OFFSET = 8, 11, 14
F_HEADER = 17  # then qdot_ref (J), velocity_limit (J), pinv_lin (J·3), lower, upper, free_step, moved (A' each), qdot (J)

#: ``void mj_step(const mjModel*, mjData*)``, the pointers as integers (the same calling convention),
#: linked by name to the address compiled_period registers
mj_step = types.ExternalFunction("morl_robot_mj_step", types.void(types.int64, types.int64))


@intrinsic
def _doubles(typingctx, address):
    """An int64 address as a ``double*``."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))
    return types.CPointer(types.float64)(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a·b + c rounded once (LLVM's ``fma``: the FMA instruction, or libm's where there is none)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(inline="always")
def _dot3(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> float:
    """a·b (3,) rounded as numpy's ``a @ b`` (OpenBLAS ``ddot``, x86-64 AVX2 kernels)."""
    return _fma(a2, b2, _fma(a1, b1, a0 * b0))


@njit(inline="always")
def _row3(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> float:
    """One row of a matrix (n, 3) @ (3,) rounded as numpy's (OpenBLAS ``dgemv``, x86-64 AVX2 kernels)."""
    return _fma(a2, b2, _fma(a0, b0, a1 * b1))


def period(f_ptr, ix_ptr):
    """``substeps`` physics steps with a compliance tick before each (CartesianController
    .run_period_reference's arithmetic): the targets ``moved`` and the admittance's ``offset`` in
    place in ``f``; returns the force peak."""
    ix = carray(ix_ptr, (IX_HEADER,))
    n_moved, n_joints = ix[IX_MOVED], ix[IX_JOINTS]
    idx = carray(ix_ptr, (IX_HEADER + 3 * n_moved,))
    f = carray(f_ptr, (F_HEADER + 6 * n_joints + 4 * n_moved,))
    xmat = carray(_doubles(ix[IX_XMAT]), (9,))
    reading = carray(_doubles(ix[IX_READING]), (3,))
    qpos = carray(_doubles(ix[IX_QPOS]), (ix[IX_NQ],))
    ctrl = carray(_doubles(ix[IX_CTRL]), (ix[IX_NU],))
    model_ptr, data_ptr = ix[IX_MODEL], ix[IX_DATA]
    a_q, a_ctrl, a_joint = IX_HEADER, IX_HEADER + n_moved, IX_HEADER + 2 * n_moved
    o_qref, o_vlim, o_pinv = F_HEADER, F_HEADER + n_joints, F_HEADER + 2 * n_joints
    o_lower = F_HEADER + 5 * n_joints
    o_upper, o_free, o_moved = o_lower + n_moved, o_lower + 2 * n_moved, o_lower + 3 * n_moved
    o_qdot = o_lower + 4 * n_moved
    dt, stiffness, damping = f[F_DT], f[F_STIFFNESS], f[F_DAMPING]
    force_limit, deadband, max_speed, lead = f[F_FORCE_LIMIT], f[F_DEADBAND], f[F_MAX_SPEED], f[F_LEAD]
    has_free = ix[IX_HAS_FREE] != 0
    peak = f[F_PEAK]
    b0, b1, b2 = f[F_BIAS], f[F_BIAS + 1], f[F_BIAS + 2]
    vr0, vr1, vr2 = f[F_V_REF], f[F_V_REF + 1], f[F_V_REF + 2]
    for _ in range(ix[IX_SUBSTEPS]):
        # contact force: bias − R·reading (the tared base-frame force on the tool)
        r0, r1, r2 = reading[0], reading[1], reading[2]
        fx = b0 - _row3(xmat[0], xmat[1], xmat[2], r0, r1, r2)
        fy = b1 - _row3(xmat[3], xmat[4], xmat[5], r0, r1, r2)
        fz = b2 - _row3(xmat[6], xmat[7], xmat[8], r0, r1, r2)
        f_norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        peak = max(peak, f_norm)
        if has_free and f_norm <= deadband:
            for i in range(n_moved):
                f[o_moved + i] += f[o_free + i]
        else:
            # ForceLimitedAdmittance.step
            v0, v1, v2 = vr0, vr1, vr2
            contact = f_norm > deadband
            fe0 = fe1 = fe2 = 0.0
            if contact:
                n0, n1, n2 = fx / f_norm, fy / f_norm, fz / f_norm
                inward = -_dot3(v0, v1, v2, n0, n1, n2)
                if inward > 0.0:
                    g = min(max((force_limit - f_norm) / (force_limit - deadband), 0.0), 1.0)
                    push = (1.0 - g) * inward
                    v0 += push * n0
                    v1 += push * n1
                    v2 += push * n2
                excess = f_norm - deadband
                fe0, fe1, fe2 = n0 * excess, n1 * excess, n2 * excess
            if contact or stiffness != 0.0:
                den = damping + dt * stiffness
                e0, e1, e2 = f[F_OFFSET], f[F_OFFSET + 1], f[F_OFFSET + 2]
                if contact:
                    n0e, n1e, n2e = (damping * e0 + dt * fe0) / den, (damping * e1 + dt * fe1) / den, (damping * e2 + dt * fe2) / den
                else:
                    n0e, n1e, n2e = damping * e0 / den, damping * e1 / den, damping * e2 / den
                v0 += (n0e - e0) / dt
                v1 += (n1e - e1) / dt
                v2 += (n2e - e2) / dt
                f[F_OFFSET], f[F_OFFSET + 1], f[F_OFFSET + 2] = n0e, n1e, n2e
            speed = math.sqrt(_dot3(v0, v1, v2, v0, v1, v2))
            if speed > max_speed:
                s = max_speed / speed
                v0 *= s
                v1 *= s
                v2 *= s
            # q̇ = q̇_ref + pinv_lin (v − v_ref), scaled into the joint velocity limits
            d0, d1, d2 = v0 - vr0, v1 - vr1, v2 - vr2
            ratio = 0.0
            for j in range(n_joints):
                p = o_pinv + 3 * j
                qd = f[o_qref + j] + _row3(f[p], f[p + 1], f[p + 2], d0, d1, d2)
                f[o_qdot + j] = qd
                ratio = max(ratio, abs(qd) / f[o_vlim + j])
            if ratio > 1.0:
                for j in range(n_joints):
                    f[o_qdot + j] = f[o_qdot + j] / ratio
            for i in range(n_moved):
                f[o_moved + i] += f[o_qdot + idx[a_joint + i]] * dt
        # integrate_position_targets: never lead the measured joint by more than `lead`, within range
        for i in range(n_moved):
            q = qpos[idx[a_q + i]]
            x = min(max(f[o_moved + i], q - lead), q + lead)
            x = min(max(x, f[o_lower + i]), f[o_upper + i])
            f[o_moved + i] = x
            ctrl[idx[a_ctrl + i]] = x
        mj_step(model_ptr, data_ptr)
    f[F_PEAK] = peak
    return peak


#: numba's signature of :func:`period` (its C-callable wrapper is not used: it links numba's runtime)
SIGNATURE = types.float64(types.CPointer(types.float64), types.CPointer(types.int64))
#: the object file's one entry point, ``double morl_robot_compliant_period(double* f, int64_t* ix)``
ENTRY = "morl_robot_compliant_period"


def compile_period() -> bytes:
    """``period`` compiled by numba (IEEE division: no exception paths) for this CPU → a native object
    file whose only entry point is :data:`ENTRY` and whose only external symbol is ``mj_step``'s."""
    import llvmlite.binding as llvm

    compiled = cfunc(SIGNATURE, error_model="numpy")(period)
    library = compiled._library
    library._ensure_finalized()
    module = llvm.parse_assembly(str(library._final_module))
    inner = [f for f in module.functions  # the compiled function (numba's mangled name), not its C wrapper
             if not f.is_declaration and "compiled_period_kernel6period" in f.name and f.name != compiled.native_name]
    assert len(inner) == 1, [f.name for f in inner]
    # numba's calling convention: i32 status = fn(double* result, ptr exception info, args...)
    entry = llvm.parse_assembly(f"""
        target triple = "{module.triple}"
        declare i32 @"{inner[0].name}"(ptr, ptr, ptr, ptr)
        define double @{ENTRY}(ptr %f, ptr %ix) {{
          %result = alloca double
          %exc = alloca ptr
          %status = call i32 @"{inner[0].name}"(ptr %result, ptr %exc, ptr %f, ptr %ix)
          %value = load double, ptr %result
          ret double %value
        }}""")
    module.link_in(entry)
    for f in module.functions:  # numba's wrapper (with its Python and runtime calls) and the inner: dropped or inlined
        if not f.is_declaration and f.name != ENTRY:
            f.linkage = "internal"
    target = library._codegen._tm
    builder = llvm.create_pass_builder(target, llvm.create_pipeline_tuning_options(speed_level=3))
    passes = llvm.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.add_strip_dead_prototype_pass()
    passes.run(module, builder)
    module.verify()
    external = sorted(f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm."))
    if external != ["morl_robot_mj_step"]:
        raise RuntimeError(f"the compiled period links more than mj_step: {external}")
    return target.emit_object(module)


@njit
def probe_dot3(a, b):
    """Row-wise a·b (n, 3) × (n, 3) → (n,) rounded as the period does (the tests compare numpy's)."""
    out = [0.0] * a.shape[0]
    for i in range(a.shape[0]):
        out[i] = _dot3(a[i, 0], a[i, 1], a[i, 2], b[i, 0], b[i, 1], b[i, 2])
    return out


@njit
def probe_rows3(m, a):
    """m[i] @ a[i] (n, k, 3) × (n, 3) → n·k values rounded as the period does (the tests compare numpy's)."""
    out = [0.0] * (m.shape[0] * m.shape[1])
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i * m.shape[1] + j] = _row3(m[i, j, 0], m[i, j, 1], m[i, j, 2], a[i, 0], a[i, 1], a[i, 2])
    return out
