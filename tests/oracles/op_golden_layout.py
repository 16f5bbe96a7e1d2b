"""Goldens for the layout ops (concat, slice, pad, transpose, reshape, roll, where) and the
attention ops.

Oracles: numpy slicing/pad/concatenate/transpose/reshape, torch.roll, torch.where; attention
as explicit float64 math (q k^T * scale + masks, softmax, @ v) with fully masked rows set to
zeros; sparse_attention as an explicit numpy gather over the index lists; axial_attention as
torch float64 over [direct | column] logits with one softmax (checked against a per-query loop),
and with has_direct_state as an explicit merge of the given (y0, lse0) with the column softmax
(checked against a per-query loop and, for a state computed from the row's keys, against the
joint softmax).
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


def _axial_column_logits(Q, KS, scale, causal, kpm):
    """The column logits scale * q . ks[(r, t)] of the torch oracles, Q and KS [b, h, n, s, hd]:
    [b, h, n(row u), s(col t), n(slot r)], -inf at slots r >= u (causal) and at padded slots."""
    b, _, n, s, _ = Q.shape
    column = torch.einsum("bhutd,bhrtd->bhutr", Q, KS) * scale
    neg = torch.tensor(-float("inf"), dtype=torch.float64)
    if causal:
        u = torch.arange(n)
        column = torch.where((u[None, :] >= u[:, None])[None, None, :, None, :], neg, column)  # slot r >= row u
    if kpm is not None:
        pad = torch.from_numpy(np.asarray(kpm) == 0).reshape(b, n, s)  # [b, row, col]
        column = torch.where(pad.transpose(1, 2)[:, None, None, :, :], neg, column)  # slot (r, t) padded
    return column


def _axial_oracle(q, k, v, ks, vs, segment, scale, causal, kpm):
    """axial_attention in torch float64, vectorised over rows (not the C++ per-query loop).

    Positions i = u * segment + t are viewed as [n, segment]. Per query (u, t) the logits are
    [direct keys k[(u, j)], j < segment | column slots ks[(r, t)], r < n], -inf where causal or
    padding masks them; ONE softmax over the concatenation; rows with every slot masked give
    NaN from torch.softmax and are set to 0; then the direct weights take v[(u, j)] and the
    column weights vs[(r, t)]."""
    b, h, npos, hd = q.shape
    s = segment
    n = npos // s
    hv = v.shape[-1]
    Q, K, KS = (torch.from_numpy(x).to(torch.float64).reshape(b, h, n, s, hd) for x in (q, k, ks))
    V, VS = (torch.from_numpy(x).to(torch.float64).reshape(b, h, n, s, hv) for x in (v, vs))
    direct = torch.einsum("bhutd,bhujd->bhutj", Q, K) * scale  # [b, h, n, s(query t), s(key j)]
    column = _axial_column_logits(Q, KS, scale, causal, kpm)  # [b, h, n, s(query t), n(slot r)]
    neg = torch.tensor(-float("inf"), dtype=torch.float64)
    if causal:
        t = torch.arange(s)
        direct = torch.where((t[None, :] > t[:, None])[None, None, None], neg, direct)  # key j > query t
    if kpm is not None:
        pad = torch.from_numpy(np.asarray(kpm) == 0).reshape(b, n, s)  # [b, row, col]
        direct = torch.where(pad[:, None, :, None, :], neg, direct)  # key (u, j) padded
    p = torch.nan_to_num(torch.softmax(torch.cat([direct, column], dim=-1), dim=-1), nan=0.0)
    pd, pc = p[..., :s], p[..., s:]
    y = torch.einsum("bhutj,bhuje->bhute", pd, V) + torch.einsum("bhutr,bhrte->bhute", pc, VS)
    return y.reshape(b, h, npos, hv).numpy()


def _axial_per_query(q, ks, vs, segment, scale, causal, kpm, first_slots):
    """The literal per-query oracles' walk (numpy lists of slots): per query i = u * segment + t
    of (bi, hi), the slots first_slots(bi, hi, i, real) gives as (logits, values) (real: the
    batch's unpadded positions), then the visible column slots ks / vs[(r, t)] (causal: r < u);
    one softmax (_attend) over the list, zeros where it is empty."""
    b, h, npos, _ = q.shape
    s = segment
    n = npos // s
    out = np.zeros((b, h, npos, vs.shape[-1]))
    for bi in range(b):
        real = np.ones(npos, dtype=bool) if kpm is None else np.asarray(kpm[bi]) != 0
        for hi in range(h):
            for i in range(npos):
                u, t = divmod(i, s)
                logits, vals = first_slots(bi, hi, i, real)
                for r in range(n):
                    pos = r * s + t
                    if real[pos] and not (causal and r >= u):
                        logits.append(scale * float(np.dot(q[bi, hi, i], ks[bi, hi, pos])))
                        vals.append(vs[bi, hi, pos])
                if logits:
                    out[bi, hi, i] = _attend(np.array(logits)[None, :], np.array(vals))[0]
    return out


def _axial_loop(q, k, v, ks, vs, segment, scale, causal, kpm):
    """A second, literal per-query oracle (numpy lists of slots): checks _axial_oracle."""
    s = segment

    def direct_keys(bi, hi, i, real):  # the own row's keys j (causal: j <= t)
        u, t = divmod(i, s)
        logits, vals = [], []
        for j in range(s):
            pos = u * s + j
            if real[pos] and not (causal and j > t):
                logits.append(scale * float(np.dot(q[bi, hi, i], k[bi, hi, pos])))
                vals.append(v[bi, hi, pos])
        return logits, vals

    return _axial_per_query(q, ks, vs, segment, scale, causal, kpm, direct_keys)


def _axial_direct_state_oracle(q, y0, lse0, ks, vs, segment, scale, causal, kpm):
    """axial_attention with has_direct_state, in torch float64, as an explicit merge of two
    softmaxes (not the C++ "one extra slot" form): per query (u, t), with the column logits
    c_r = scale * q . ks[(r, t)] over the visible slots r (causal: r < u; the mask drops padded
    slots) and m = max(lse0, max_r c_r),
        y = (y0 * exp(lse0 - m) + sum_r exp(c_r - m) vs[(r, t)]) / (exp(lse0 - m) + sum_r exp(c_r - m)),
    and y = 0 where m = -inf (no direct key and no visible slot)."""
    b, h, npos, hd = q.shape
    s = segment
    n = npos // s
    hv = vs.shape[-1]
    Q, KS = (torch.from_numpy(x).to(torch.float64).reshape(b, h, n, s, hd) for x in (q, ks))
    VS = torch.from_numpy(vs).to(torch.float64).reshape(b, h, n, s, hv)
    Y0 = torch.from_numpy(y0).to(torch.float64).reshape(b, h, n, s, hv)
    L0 = torch.from_numpy(lse0).to(torch.float64).reshape(b, h, n, s)
    column = _axial_column_logits(Q, KS, scale, causal, kpm)  # [b, h, n(row u), s(col t), n(slot r)]
    m = torch.maximum(L0, column.max(dim=-1).values)  # [b, h, n, s]
    dead = m == -float("inf")
    shift = torch.where(dead, torch.zeros_like(m), m)
    w0 = torch.exp(L0 - shift)  # 0 where lse0 = -inf
    wc = torch.exp(column - shift[..., None])  # 0 where masked
    num = w0[..., None] * Y0 + torch.einsum("bhutr,bhrte->bhute", wc, VS)
    den = w0 + wc.sum(dim=-1)
    y = torch.where(dead[..., None], torch.zeros_like(num), num / torch.where(dead, torch.ones_like(den),
                                                                              den)[..., None])
    return y.reshape(b, h, npos, hv).numpy()


def _axial_direct_state_loop(q, y0, lse0, ks, vs, segment, scale, causal, kpm):
    """A second, literal per-query oracle of has_direct_state: the slot list [lse0 (when
    finite) | visible column slots], one softmax, values [y0 | vs]."""

    def direct_state(bi, hi, i, real):  # lse0 as one slot of value y0, when finite
        if lse0[bi, hi, i] != -np.inf:
            return [float(lse0[bi, hi, i])], [y0[bi, hi, i]]
        return [], []

    return _axial_per_query(q, ks, vs, segment, scale, causal, kpm, direct_state)


def _row_attention_state(q, k, v, segment, scale, causal, kpm):
    """The direct keys' softmax of every query in float64: (y0, lse0) of attention on the rows
    (own row's keys, causal j <= t, padded keys dropped); lse0 = -inf with no visible key."""
    b, h, npos, hd = q.shape
    s = segment
    n = npos // s
    Q, K = (x.reshape(b, h, n, s, hd) for x in (q, k))
    V = v.reshape(b, h, n, s, v.shape[-1])
    logits = np.einsum("bhutd,bhujd->bhutj", Q, K) * scale
    if causal:
        logits = np.where(np.arange(s)[None, :] > np.arange(s)[:, None], -np.inf, logits)
    if kpm is not None:
        logits = np.where((np.asarray(kpm) == 0).reshape(b, 1, n, 1, s), -np.inf, logits)
    m = np.max(logits, axis=-1, keepdims=True)
    dead = m == -np.inf
    e = np.exp(logits - np.where(dead, 0.0, m))
    tot = np.sum(e, axis=-1, keepdims=True)
    lse = np.where(dead, -np.inf, np.where(dead, 0.0, m) + np.log(np.where(dead, 1.0, tot)))[..., 0]
    y = np.einsum("bhutj,bhuje->bhute", np.where(dead, 0.0, e / np.where(dead, 1.0, tot)), V)
    return y.reshape(b, h, npos, -1), lse.reshape(b, h, npos)


def gen_axial_attention():
    g = OpGoldens("axial_attention")

    # Draws ks and vs after `first` (the first three inputs), runs `oracle` and the per-query
    # `loop` (`what`: the oracle's name in the error) on them and adds the case; returns y.
    def add(name, r, dims, first, oracle, loop, what, *, segment, scale, causal, kpm, **attrs):
        b, h, npos, hd, hv = dims
        scale = 1.0 / np.sqrt(hd) if scale is None else scale
        ks = f32(randn(r, (b, h, npos, hd)))
        vs = f32(randn(r, (b, h, npos, hv)))
        ins = first + [ks, vs]
        if kpm is not None:
            ins.append(u8(kpm))
        args = tuple(x.f64() for x in ins[:5]) + (segment, f32v(scale), causal, kpm)
        y = oracle(*args)
        ref = loop(*args)
        if not np.allclose(y, ref, rtol=1e-12, atol=1e-12):
            raise AssertionError("axial_attention/%s: %s and per-query oracles differ by %g"
                                 % (name, what, np.max(np.abs(y - ref))))
        g.add(name, ins, f32(y), scale=scale, segment=segment, causal=causal,
              has_key_padding_mask=kpm is not None, **attrs)
        return y

    def case(name, b, h, segment, n, hd, hv, *, scale=None, causal=False, kpm=None, qs=1.0):
        r = g.rng(name)
        npos = segment * n
        q = f32(randn(r, (b, h, npos, hd), qs))
        k = f32(randn(r, (b, h, npos, hd)))
        v = f32(randn(r, (b, h, npos, hv)))
        add(name, r, (b, h, npos, hd, hv), [q, k, v], _axial_oracle, _axial_loop, "vectorised",
            segment=segment, scale=scale, causal=causal, kpm=kpm)

    # segment = N = 1: the query's own position twice (direct key and column slot): (v + vs) / 2
    # weighted by exp(q.k) : exp(q.ks); causal keeps only the direct key.
    case("all_ones_dims", 1, 1, 1, 1, 1, 1)
    case("all_ones_dims_causal", 1, 1, 1, 1, 1, 1, causal=True)
    # segment 1: one direct key (the query itself) plus every position as a column slot.
    case("s1_n9", 2, 2, 1, 9, 8, 8)
    case("s1_n9_causal", 2, 2, 1, 9, 8, 8, causal=True)
    # segment 4 / 5 with odd head dims, hv != hd.
    case("s4_n3_hd7_hv5", 2, 2, 4, 3, 7, 5)
    case("s4_n3_hd7_hv5_causal", 2, 2, 4, 3, 7, 5, causal=True)
    case("s5_n4_hd16_hv3", 2, 2, 5, 4, 16, 3)
    case("s5_n4_hd16_hv3_causal", 2, 2, 5, 4, 16, 3, causal=True)
    # segment = N (n = 1): one row; causal has no column slot (plain causal attention).
    case("s5_n1", 2, 2, 5, 1, 8, 4)
    case("s5_n1_causal", 2, 2, 5, 1, 8, 4, causal=True)
    case("s5_n2_hd64", 1, 1, 5, 2, 64, 64)
    case("s4_n2_scale_one_big_logits", 1, 1, 4, 2, 4, 4, scale=1.0, qs=30.0)
    # Larger N: 96 = 24 rows of 4 (causal), 95 = 19 rows of 5.
    case("s4_n24_causal", 1, 2, 4, 24, 16, 8, causal=True)
    case("s5_n19", 1, 1, 5, 19, 16, 8)
    # Key padding: batch 0 tail-padded (also whole rows), batch 1 fully padded (zeros).
    kpm = np.ones((2, 12), dtype=np.int64)
    kpm[0, 7:] = 0
    kpm[1, :] = 0
    case("key_padding_s4_n3", 2, 2, 4, 3, 8, 8, kpm=kpm)
    case("key_padding_s4_n3_causal", 2, 2, 4, 3, 8, 8, causal=True, kpm=kpm)
    # Causal + padding of the head: query 0 (and 1's direct key 0) masked; query 0 sees nothing.
    kpm2 = np.ones((2, 15), dtype=np.int64)
    kpm2[0, :1] = 0
    kpm2[0, 12:] = 0
    kpm2[1, 1::3] = 0
    case("padding_holes_s5_n3_causal", 2, 1, 5, 3, 4, 4, causal=True, kpm=kpm2)
    case("padding_holes_s5_n3", 2, 1, 5, 3, 4, 4, kpm=kpm2)

    # has_direct_state: inputs (q, y0, lse0, ks, vs [, mask]). lse0 (unscaled log-sum-exp of
    # the direct keys) is drawn from [lo, hi] with the listed -inf entries; y0 is random.
    def direct(name, b, h, segment, n, hd, hv, *, scale=None, causal=False, kpm=None, lse=(-3.0, 6.0),
               dead=0.25, dead_at=()):
        r = g.rng(name)
        npos = segment * n
        q = f32(randn(r, (b, h, npos, hd)))
        y0 = f32(randn(r, (b, h, npos, hv)))
        lse0 = r.uniform(lse[0], lse[1], size=(b, h, npos))
        lse0[r.uniform(size=lse0.shape) < dead] = -np.inf
        for idx in dead_at:
            lse0[idx] = -np.inf
        return add(name, r, (b, h, npos, hd, hv), [q, y0, f32(lse0)], _axial_direct_state_oracle,
                   _axial_direct_state_loop, "merge", segment=segment, scale=scale, causal=causal, kpm=kpm,
                   has_direct_state=True)

    # N = 1: one direct state and (bidirectional) the own position as the one column slot;
    # causal: no column slot, y = y0 (lse0 finite) or zeros (lse0 = -inf).
    direct("direct_all_ones_dims", 1, 1, 1, 1, 1, 1, dead=0.0)
    direct("direct_all_ones_dims_causal", 1, 1, 1, 1, 1, 1, causal=True, dead=0.0)
    direct("direct_all_ones_dims_dead", 1, 1, 1, 1, 1, 1, dead=1.0)
    # segment 1 (every position a column slot), odd head dims, hv != hd, scale != 1.
    direct("direct_s1_n9_hd7_hv5", 2, 2, 1, 9, 7, 5)
    direct("direct_s1_n9_causal", 2, 2, 1, 9, 8, 8, causal=True)
    direct("direct_s4_n3_hd7_hv5", 2, 2, 4, 3, 7, 5, scale=2.0)
    # Causal: row 0 sees no column slot. Its queries with lse0 = -inf get zeros, the others y0.
    y = direct("direct_s4_n3_hd16_hv3_causal", 2, 2, 4, 3, 16, 3, causal=True, dead_at=[(0, 0, 0), (1, 1, 2)])
    if np.any(y[0, 0, 0] != 0) or np.any(y[1, 1, 2] != 0):
        raise AssertionError("axial_attention/direct causal: a dead row-0 query must give zeros")
    # segment = N (n = 1): bidirectional sees only its own position as a slot; causal nothing.
    direct("direct_s5_n1", 2, 1, 5, 1, 8, 4)
    direct("direct_s5_n1_causal", 2, 1, 5, 1, 8, 4, causal=True)
    direct("direct_s5_n19_hd16_hv8", 1, 2, 5, 19, 16, 8)
    direct("direct_s4_n24_causal", 1, 1, 4, 24, 16, 8, causal=True)
    # lse0 far above / below the column logits: y ~ y0 / y ~ the column softmax.
    direct("direct_lse0_dominates", 1, 1, 4, 3, 8, 8, lse=(20.0, 30.0), dead=0.0)
    direct("direct_lse0_negligible", 1, 1, 4, 3, 8, 8, lse=(-40.0, -30.0), dead=0.0)
    direct("direct_all_dead", 1, 2, 4, 3, 8, 8, dead=1.0)  # = the column slots alone
    # Key padding applies to the column slots only: batch 0 tail-padded (whole rows), batch 1
    # fully padded (y = y0, or zeros where lse0 = -inf).
    direct("direct_key_padding_s4_n3", 2, 2, 4, 3, 8, 8, kpm=kpm)
    direct("direct_key_padding_s4_n3_causal", 2, 2, 4, 3, 8, 8, causal=True, kpm=kpm)
    direct("direct_padding_holes_s5_n3_causal", 2, 1, 5, 3, 4, 4, causal=True, kpm=kpm2)

    # The identity behind has_direct_state: a direct state that IS the softmax over the row's
    # keys (float64) merged with the column slots equals the joint softmax (_axial_oracle).
    for name, (b, h, s, n, hd, hv, causal, mask) in {
            "consistent_s4_n3": (2, 2, 4, 3, 8, 5, False, kpm),
            "consistent_s4_n3_causal": (2, 2, 4, 3, 8, 5, True, kpm),
            "consistent_s5_n3_causal": (2, 1, 5, 3, 4, 4, True, kpm2)}.items():
        r = g.rng(name)
        npos = s * n
        scale = f32v(1.0 / np.sqrt(hd))
        q, k, ks = (f32(randn(r, (b, h, npos, hd))).f64() for _ in range(3))
        v, vs = (f32(randn(r, (b, h, npos, hv))).f64() for _ in range(2))
        y0, lse0 = _row_attention_state(q, k, v, s, scale, causal, mask)
        joint = _axial_oracle(q, k, v, ks, vs, s, scale, causal, mask)
        merged = _axial_direct_state_oracle(q, y0, lse0, ks, vs, s, scale, causal, mask)
        if not np.allclose(joint, merged, rtol=1e-12, atol=1e-12):
            raise AssertionError("axial_attention/%s: direct state + columns != joint softmax (%g)"
                                 % (name, np.max(np.abs(joint - merged))))
    return g


GENERATORS = {
    "concat": gen_concat, "slice": gen_slice, "pad": gen_pad, "transpose": gen_transpose, "reshape": gen_reshape,
    "roll": gen_roll, "where": gen_where, "attention": gen_attention, "sparse_attention": gen_sparse_attention,
    "axial_attention": gen_axial_attention,
}
