import asc


@asc.jit
def layernorm_kernel(
    x: asc.GlobalAddress,
    y: asc.GlobalAddress,
    rows_per_core: int,
    cols: asc.ConstExpr[int],
    eps: float,
):
    offset = asc.get_block_idx() * rows_per_core * cols
    inv_cols = 1.0 / cols
    x_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + offset)
    y_gm.set_global_buffer(y + offset)
    pipe = asc.TPipe()
    q_x = asc.TQue(asc.TPosition.VECIN, 2)
    q_y = asc.TQue(asc.TPosition.VECOUT, 2)
    res = asc.TBuf(asc.TPosition.VECCALC)
    sq = asc.TBuf(asc.TPosition.VECCALC)
    work = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(q_x, 2, cols * x.dtype.sizeof())
    pipe.init_buffer(q_y, 2, cols * y.dtype.sizeof())
    pipe.init_buffer(res, 32)
    pipe.init_buffer(sq, cols * x.dtype.sizeof())
    pipe.init_buffer(work, cols * x.dtype.sizeof())
    for r in range(rows_per_core):
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[r * cols:], cols)
        q_x.enque(x_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.alloc_tensor(y.dtype)
        red = res.get(x.dtype)
        t = sq.get(x.dtype)
        asc.reduce_sum(red, x_v, work.get(x.dtype), cols)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        neg_mean = red.get_value(0) * (0.0 - inv_cols)
        asc.adds(y_v, x_v, neg_mean, cols)
        asc.mul(t, y_v, y_v, cols)
        asc.reduce_sum(red, t, work.get(x.dtype), cols)
        # std = sqrt(sum((x - mean)^2) / cols + eps), on the vector unit (one element)
        asc.muls(red, red, inv_cols, 1)
        asc.adds(red, red, eps, 1)
        asc.sqrt(red, red, 1)
        asc.set_flag(asc.HardEvent.V_S, 1)
        asc.wait_flag(asc.HardEvent.V_S, 1)
        std = red.get_value(0)
        asc.muls(y_v, y_v, 1.0 / std, cols)
        q_y.enque(y_v)
        q_x.free_tensor(x_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[r * cols:], y_o, cols)
        q_y.free_tensor(y_o)
