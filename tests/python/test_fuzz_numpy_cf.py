"""Random kernels with loops, ifs, whiles, dots and atomics against numpy
(tests/fuzz/numpy_kernels_cf.py, issue 17): a short run here on the CPU
target, and checks that the comparison catches wrong results of each kind.
Long runs: `python tests/fuzz/numpy_kernels_cf.py --kernels 300 --seed N`
or `bench/reliability.py --numpy-kernels N`."""
import os
import sys

import numpy as np
import pytest

import zetile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))
import lock_kernels  # noqa: E402
import numpy_kernels_cf as cf  # noqa: E402


# Seeds that compile quickly and together cover every dtype, final kind but
# one (cas on tensors of floats), fp32 and int8 dots, loops, whiles, ifs on
# data, and atomics inside loops and ifs (test_the_seeds_cover_the_features).
GROUPS = {"a": [2, 3, 6, 10, 12, 14, 16, 26], "b": [5, 9, 23, 24, 27, 31, 78, 194, 289]}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_random_kernels_match_numpy(cpu_device, group, monkeypatch):
    if group == "b":
        # the programs on 4 pool threads (else a short grid may run on the
        # caller alone, one program after another, and no atomic races)
        monkeypatch.setenv("ZETILE_NUM_THREADS", "4")
    wrong = [m for m in (cf.run_one(s) for s in GROUPS[group]) if m]
    assert not wrong, "\n".join(wrong)


def test_the_seeds_cover_the_features():
    ks = [cf.Kernel(s) for g in GROUPS.values() for s in g]
    assert {k.final for k in ks} >= {"store", "ticket", "ticket_scalar", "atomic_add", "atomic_max",
                                     "atomic_min", "xchg_own", "xchg_shared", "cas_tensor",
                                     "cas_scalar"}
    assert {k.kind for k in ks} == {"int", "dyadic", "random"}
    assert {k.dt for k in ks} == {"int32", "int64", "uint32", "float32", "float64"}
    assert any(k.has_dot for k in ks) and any(k.data_branch for k in ks)
    assert any(k.tree_atomics for k in ks) and any(k.one_d for k in ks)
    # programs that return early, next to programs that do not, before
    # atomics on shared addresses, a scalar cas and plain stores
    mixed = {k.final for k in ks
             if len({st.returned for st in cf.run_reference(k, k.data())}) == 2}
    assert mixed >= {"atomic_max", "cas_scalar", "store"}, mixed
    src = "".join(k.source() for k in ks)
    for what in ("for ", "while ", "if ", "tl.dot(", 'input_precision="ieee"', "tl.static_range"):
        assert what in src, what


def _off_by(delta_fn):
    """A reference that is wrong in program 0's first element."""
    def ref(k, d):
        states = cf.run_reference(k, d)
        states[0].acc[0, 0] = states[0].acc[0, 0] + states[0].acc.dtype.type(delta_fn(states[0]))
        return states
    return ref


def test_a_wrong_int_sum_is_caught(cpu_device):
    # seed 27: uint32 atomic_add of every program's tile into one
    assert cf.Kernel(27).final == "atomic_add" and cf.Kernel(27).kind == "int"
    assert cf.run_one(27) is None
    assert "atomic_add" in cf.run_one(27, reference=_off_by(lambda st: 1))


def test_a_float_error_above_the_tolerance_is_caught(cpu_device):
    # seed 9: fp32 dot of random values, summed by atomic_add over 6
    # programs, compared within the rounding bound
    k = cf.Kernel(9)
    assert k.kind == "random" and k.has_dot and k.final == "atomic_add" and k.dt == "float32"
    assert cf.run_one(9) is None
    msg = cf.run_one(9, reference=_off_by(lambda st: 1e-3 * max(st.mag[0, 0], 1.0)))
    assert msg and "atomic_add result" in msg


def test_broken_atomic_invariants_are_caught(cpu_device):
    def dup_ticket(k, OUT, OLD, LOCK):
        OLD[1] = OLD[0]
    assert cf.Kernel(12).final == "ticket_scalar" and cf.Kernel(12).P > 1
    assert "tickets" in cf.run_one(12, tamper=dup_ticket)

    def two_winners(k, OUT, OLD, LOCK):
        OLD[:k.P] = 0
    assert cf.Kernel(78).final == "cas_scalar" and cf.Kernel(78).P > 2
    assert "cas lock" in cf.run_one(78, tamper=two_winners)

    def lost_value(k, OUT, OLD, LOCK):
        OUT[0] = OUT[0] + 1
    assert cf.Kernel(2).final == "xchg_shared"
    assert "xchg_shared" in cf.run_one(2, tamper=lost_value)

    def guard(k, OUT, OLD, LOCK):
        OUT[k.M * k.N * k.P] = 0
    assert cf.Kernel(10).final == "store"
    assert "guard" in cf.run_one(10, tamper=guard)


def test_a_spin_lock_over_many_programs(cpu_device, monkeypatch):
    # 1000 programs on 4 pool threads take one lock by atomic_cas, add their
    # row under it with a plain load and store, release it by atomic_xchg
    # (tutorial 05's pattern). Without the lock the same read-modify-write
    # loses updates here (2000 programs, a 2000-step window: all 37 columns
    # wrong in one run of three),
    # so the programs do overlap.
    monkeypatch.setenv("ZETILE_NUM_THREADS", "4")
    P, N = 1000, 37
    X = np.random.default_rng(5).integers(-1000, 1000, (P, N)).astype(np.int32)
    OUT = np.zeros(N, np.int32)
    LOCK = np.zeros(1, np.int32)
    CNT = np.array([0, -1, 1 << 30], np.int32)
    lock_kernels.locked_sum[(P,)](X, OUT, LOCK, CNT, np.zeros(1, np.int32), N, 200, BLOCK=64)
    assert (OUT == X.sum(axis=0, dtype=np.int32)).all()
    assert LOCK[0] == 0 and CNT.tolist() == [P, P - 1, 0]
