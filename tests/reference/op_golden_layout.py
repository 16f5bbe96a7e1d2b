"""Goldens for the layout ops (concat, slice, pad, transpose, reshape, roll, where) and the
attention ops.

Oracles: numpy slicing/pad/concatenate/transpose/reshape, torch.roll, torch.where; attention
as explicit float64 math (q k^T * scale + masks, softmax, @ v) with fully masked rows set to
zeros; sparse_attention as an explicit numpy gather over the index lists.
"""

import numpy as np
import torch

from op_golden_common import OpGoldens, as_dtype, f32, f32v, i32, randn, u8

INF = float("inf")
NAN = float("nan")


def _data(g, name, shape, dtype="f32"):
    r = g.rng(name)
    if dtype == "f32":
        x = randn(r, shape)
        if x.size >= 3:  # signed zeros and a NaN must travel bit-exactly through layout ops
            x.flat[0] = -0.0
            x.flat[1] = 0.0
            x.flat[2] = NAN
        return f32(x)
    if dtype == "u8":
        return u8(r.integers(0, 256, size=shape))
    if dtype in ("f16", "bf16"):
        return as_dtype(dtype, randn(r, shape))
    return as_dtype(dtype, r.integers(-(2**31), 2**31, size=shape))


def gen_concat():
    g = OpGoldens("concat")

    def case(name, shapes, axis, dtype="f32"):
        xs = [_data(g, "%s_%d" % (name, j), s, dtype) for j, s in enumerate(shapes)]
        g.add(name, xs, as_dtype(dtype, np.concatenate([x.vals for x in xs], axis=axis)), axis=axis)

    case("one_input", [(3, 4)], 0)
    case("two_axis0", [(2, 3), (5, 3)], 0)
    case("three_axis_last", [(2, 1), (2, 7), (2, 3)], -1)
    case("rank3_axis1", [(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1)
    case("rank4_axis_neg3", [(2, 2, 3, 2), (2, 3, 3, 2)], -3)
    case("n1_pieces", [(1,), (1,), (1,)], 0)
    case("i32", [(3, 2), (3, 5)], 1, "i32")
    case("i64", [(2, 2), (1, 2)], 0, "i64")
    case("u8", [(4, 3), (4, 1)], -1, "u8")
    case("f16", [(2, 3), (2, 2)], 1, "f16")
    return g


def gen_slice():
    g = OpGoldens("slice")
    big = 2**63 - 1

    def case(name, shape, axis, start, end, step, dtype="f32"):
        x = _data(g, name, shape, dtype)
        sl = [slice(None)] * len(shape)
        sl[axis] = slice(start, end, step)
        g.add(name, [x], as_dtype(dtype, x.vals[tuple(sl)]), axis=axis, start=start, end=end, step=step)

    case("all", (4, 3), 0, 0, big, 1)
    case("n1", (1, 3), 0, 0, 1, 1)
    case("middle", (7, 3), 0, 2, 5, 1)
    case("step2", (13, 2), 0, 1, big, 2)
    case("step3_odd", (13, 2), 0, 0, 13, 3)
    case("negative_start", (7, 3), 0, -3, big, 1)
    case("negative_end", (7, 3), 0, 1, -2, 1)
    case("clamp_start", (5, 2), 0, -100, 3, 1)
    case("clamp_end", (5, 2), 0, 2, 100, 1)
    case("axis_last", (3, 9), -1, 2, 8, 2)
    case("rank3_axis1", (2, 7, 3), 1, 4, big, 1)
    case("step_gt_n", (5, 2), 0, 1, big, 10)
    case("i64", (6, 2), 0, 1, 5, 2, "i64")
    case("u8", (3, 8), 1, -5, -1, 1, "u8")
    return g


def gen_pad():
    g = OpGoldens("pad")

    def case(name, shape, axis, before, after, value=0.0):
        x = _data(g, name, shape)
        widths = [(0, 0)] * len(shape)
        widths[axis] = (before, after)
        y = np.pad(x.vals.astype(np.float64), widths, mode="constant", constant_values=f32v(value))
        g.add(name, [x], f32(y), axis=axis, before=before, after=after, value=value)

    case("none", (3, 4), 0, 0, 0)
    case("before", (3, 4), 0, 2, 0)
    case("after", (3, 4), 0, 0, 3)
    case("both_axis_last", (3, 4), -1, 1, 5, 1.5)
    case("n1", (1,), 0, 3, 4, -2.0)
    case("neg_inf_value", (5, 2), 0, 0, 3, -INF)
    case("rank3_axis1", (2, 7, 3), 1, 4, 2)
    case("big_pad", (2, 3), -1, 97, 13)
    return g


def gen_transpose():
    g = OpGoldens("transpose")

    def case(name, shape, perm, dtype="f32"):
        x = _data(g, name, shape, dtype)
        g.add(name, [x], as_dtype(dtype, np.transpose(x.vals, perm)), rank=len(perm), perm=list(perm))

    case("rank1_identity", (7,), [0])
    case("rank2", (3, 5), [1, 0])
    case("rank2_n1", (1, 5), [1, 0])
    case("rank3_cycle", (2, 3, 4), [2, 0, 1])
    case("rank3_identity", (2, 3, 4), [0, 1, 2])
    case("rank4_heads", (2, 5, 3, 4), [0, 2, 1, 3])
    case("rank4_last_two", (2, 3, 13, 7), [0, 1, 3, 2])
    case("rank6_reverse", (2, 1, 3, 2, 1, 2), [5, 4, 3, 2, 1, 0])
    case("i64", (3, 4), [1, 0], "i64")
    case("u8_rank3", (4, 3, 5), [1, 2, 0], "u8")
    return g


def gen_reshape():
    g = OpGoldens("reshape")

    def case(name, shape, dims, dtype="f32"):
        x = _data(g, name, shape, dtype)
        g.add(name, [x], as_dtype(dtype, np.reshape(x.vals, dims)), rank=len(dims), dims=list(dims))

    case("flat_to_2d", (6,), [2, 3])
    case("infer_dim", (2, 3, 4), [-1, 4])
    case("flatten", (2, 3, 4), [24])
    case("to_rank6", (12,), [1, 2, 1, 3, 1, 2])
    case("split_heads", (2, 5, 12), [2, 5, 3, 4])
    case("n1", (1,), [1, 1])
    case("u8_infer", (4, 6), [3, -1], "u8")
    case("i32", (3, 4), [4, 3], "i32")
    return g


def gen_roll():
    g = OpGoldens("roll")

    def case(name, shape, axis, shift, dtype="f32"):
        x = _data(g, name, shape, dtype)
        y = torch.roll(torch.from_numpy(x.vals.astype(np.float64) if dtype == "f32" else x.vals.astype(np.int64)),
                       shifts=shift, dims=axis).numpy()
        g.add(name, [x], as_dtype(dtype, y), axis=axis, shift=shift)

    case("n1", (1, 3), 0, 5)
    case("shift1", (7, 2), 0, 1)
    case("shift_neg", (7, 2), 0, -3)
    case("shift_zero", (5, 2), 0, 0)
    case("shift_n", (5, 2), 0, 5)
    case("shift_gt_n", (5, 2), 0, 13)
    case("shift_neg_gt_n", (5, 2), 0, -12)
    case("axis_last", (3, 13), -1, 4)
    case("rank3_axis1", (2, 6, 3), 1, -1)
    case("i32", (4, 5), 1, 2, "i32")
    return g


def gen_where():
    g = OpGoldens("where")

    def case(name, sc, sa, sb, dtype="f32", cond_values=(0, 1)):
        r = g.rng(name)
        c = u8(r.choice(np.array(cond_values), size=sc))
        a = _data(g, name + "_a", sa, dtype)
        b = _data(g, name + "_b", sb, dtype)
        y = torch.where(torch.from_numpy(c.vals != 0), torch.from_numpy(a.vals), torch.from_numpy(b.vals)).numpy()
        g.add(name, [c, a, b], as_dtype(dtype, y))

    case("same_shape", (3, 5), (3, 5), (3, 5))
    case("n1", (1,), (1,), (1,))
    case("cond_broadcast", (5,), (3, 5), (3, 5))
    case("all_broadcast", (3, 1), (1, 5), (3, 5))
    case("scalar_b", (2, 3), (2, 3), ())
    case("rank4_broadcast", (2, 1, 3, 1), (1, 4, 1, 5), (2, 4, 3, 5))
    case("cond_nonzero_bytes", (4, 6), (4, 6), (4, 6), cond_values=(0, 1, 2, 128, 255))
    case("i32", (3, 4), (3, 4), (4,), "i32")
    case("u8", (2, 5), (2, 5), (2, 5), "u8")
    return g


def _attend(logits, v):
    """softmax over the last axis with fully masked rows -> zeros, then @ v (float64)."""
    m = np.max(logits, axis=-1, keepdims=True)
    dead = m == -np.inf
    e = np.exp(logits - np.where(dead, 0.0, m))
    s = np.sum(e, axis=-1, keepdims=True)
    p = np.where(dead, 0.0, e / np.where(dead, 1.0, s))
    return p @ v


def gen_attention():
    g = OpGoldens("attention")

    def case(name, b, h, nq, nk, hd, hv, *, scale=None, causal=False, kpm=None, qs=1.0):
        r = g.rng(name)
        scale = 1.0 / np.sqrt(hd) if scale is None else scale
        q = f32(randn(r, (b, h, nq, hd), qs))
        k = f32(randn(r, (b, h, nk, hd)))
        v = f32(randn(r, (b, h, nk, hv)))
        logits = np.einsum("bhid,bhjd->bhij", q.f64(), k.f64()) * f32v(scale)
        ins = [q, k, v]
        if causal:
            i = np.arange(nq)[:, None]
            j = np.arange(nk)[None, :]
            logits = np.where(j > i + (nk - nq), -np.inf, logits)
        if kpm is not None:
            m = u8(kpm)
            ins.append(m)
            logits = np.where(m.vals[:, None, None, :] == 0, -np.inf, logits)
        g.add(name, ins, f32(_attend(logits, v.f64())), scale=scale, causal=causal,
              has_key_padding_mask=kpm is not None)

    case("all_ones_dims", 1, 1, 1, 1, 1, 1)
    case("b2_h3_nq5_nk7", 2, 3, 5, 7, 8, 4)
    case("hv_ne_hd", 1, 2, 4, 4, 16, 3)
    case("scale_one_big_logits", 1, 1, 3, 9, 4, 4, scale=1.0, qs=30.0)
    case("n97_d16", 1, 2, 97, 97, 16, 16)
    case("nq1_nk257", 1, 1, 1, 257, 32, 8)
    case("nk200_d64", 1, 1, 33, 200, 64, 64)
    case("causal_square", 1, 2, 13, 13, 8, 8, causal=True)
    case("causal_wide", 2, 1, 3, 7, 4, 4, causal=True)
    case("causal_tall_dead_queries", 1, 1, 7, 3, 4, 4, causal=True)  # queries 0..3 see nothing
    kpm = np.ones((2, 7), dtype=np.int64)
    kpm[0, 4:] = 0
    kpm[1, :] = 0  # batch 1: everything padded -> zeros
    case("key_padding", 2, 2, 5, 7, 8, 8, kpm=kpm)
    kpm2 = np.ones((2, 9), dtype=np.int64)
    kpm2[0, :2] = 0
    kpm2[1, 7:] = 0
    case("causal_and_padding", 2, 1, 9, 9, 4, 4, causal=True, kpm=kpm2)
    return g


def gen_sparse_attention():
    g = OpGoldens("sparse_attention")

    def case(name, b, h, nq, nk, hd, hv, kk, *, ib=None, ih=None, idx=None, scale=None, holes=0.0):
        r = g.rng(name)
        ib = b if ib is None else ib
        ih = h if ih is None else ih
        scale = 1.0 / np.sqrt(hd) if scale is None else scale
        q = f32(randn(r, (b, h, nq, hd)))
        k = f32(randn(r, (b, h, nk, hd)))
        v = f32(randn(r, (b, h, nk, hv)))
        if idx is None:
            idx = r.integers(0, nk, size=(ib, ih, nq, kk))
            idx = np.where(r.random(idx.shape) < holes, -1, idx)
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros((b, h, nq, hv))
        Q, K, V = q.f64(), k.f64(), v.f64()
        for bi in range(b):
            for hi in range(h):
                for qi in range(nq):
                    sel = [j for j in idx[bi if ib > 1 else 0, hi if ih > 1 else 0, qi] if j >= 0]
                    if not sel:
                        continue  # no valid index -> zeros
                    logits = (K[bi, hi, sel] @ Q[bi, hi, qi]) * f32v(scale)
                    out[bi, hi, qi] = _attend(logits[None, :], V[bi, hi, sel])[0]
        g.add(name, [q, k, v, i32(idx)], f32(out), scale=scale)

    case("minimal", 1, 1, 1, 1, 1, 1, 1)
    case("basic", 1, 1, 4, 7, 8, 8, 3)
    case("kk1", 1, 2, 5, 9, 4, 4, 1)
    case("hv_ne_hd", 2, 2, 3, 6, 8, 5, 4)
    case("broadcast_batch_heads", 2, 3, 5, 11, 8, 8, 4, ib=1, ih=1)
    case("broadcast_heads", 2, 2, 4, 7, 4, 4, 3, ih=1)
    case("broadcast_batch", 2, 2, 4, 7, 4, 4, 3, ib=1)
    case("unused_slots", 1, 2, 6, 13, 8, 8, 5, holes=0.4)
    idx = np.array([[[[-1, -1, -1], [2, 2, 0], [0, -1, 2], [1, 1, 1]]]])
    case("empty_row_and_repeats", 1, 1, 4, 3, 4, 4, 3, idx=idx)
    full = np.tile(np.arange(7), (1, 1, 5, 1))
    case("dense_equivalent", 1, 1, 5, 7, 8, 8, 7, idx=full)
    case("nq_ne_nk_kk16", 1, 2, 3, 97, 16, 16, 16)
    case("scale_one", 1, 1, 4, 9, 4, 4, 4, scale=1.0)
    return g


GENERATORS = {
    "concat": gen_concat, "slice": gen_slice, "pad": gen_pad, "transpose": gen_transpose, "reshape": gen_reshape,
    "roll": gen_roll, "where": gen_where, "attention": gen_attention, "sparse_attention": gen_sparse_attention,
}
