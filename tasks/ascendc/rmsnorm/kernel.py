import asc


@asc.jit
def rmsnorm_kernel(
    x: asc.GlobalAddress,
    g: asc.GlobalAddress,
    y: asc.GlobalAddress,
    rows_per_core: int,
    cols: asc.ConstExpr[int],
    eps: float,
):
    offset = asc.get_block_idx() * rows_per_core * cols
    x_gm = asc.GlobalTensor()
    g_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + offset)
    g_gm.set_global_buffer(g)
    y_gm.set_global_buffer(y + offset)
    pipe = asc.TPipe()
    q_g = asc.TQue(asc.TPosition.VECIN, 1)
    q_x = asc.TQue(asc.TPosition.VECIN, 2)
    q_y = asc.TQue(asc.TPosition.VECOUT, 2)
    res = asc.TBuf(asc.TPosition.VECCALC)
    work = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(q_g, 1, cols * g.dtype.sizeof())
    pipe.init_buffer(q_x, 2, cols * x.dtype.sizeof())
    pipe.init_buffer(q_y, 2, cols * y.dtype.sizeof())
    pipe.init_buffer(res, 32)
    pipe.init_buffer(work, cols * x.dtype.sizeof())
    # the weight row is loaded once for all of this core's rows
    g_in = q_g.alloc_tensor(g.dtype)
    asc.data_copy(g_in, g_gm, cols)
    q_g.enque(g_in)
    g_v = q_g.deque(g.dtype)
    for r in range(rows_per_core):
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[r * cols:], cols)
        q_x.enque(x_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.alloc_tensor(y.dtype)
        red = res.get(x.dtype)
        asc.mul(y_v, x_v, x_v, cols)
        asc.reduce_sum(red, y_v, work.get(x.dtype), cols)
        # rms = sqrt(mean(x^2) + eps), on the vector unit (one element)
        asc.muls(red, red, 1.0 / cols, 1)
        asc.adds(red, red, eps, 1)
        asc.sqrt(red, red, 1)
        asc.set_flag(asc.HardEvent.V_S, 0)
        asc.wait_flag(asc.HardEvent.V_S, 0)
        rms = red.get_value(0)
        asc.muls(y_v, x_v, 1.0 / rms, cols)
        asc.mul(y_v, y_v, g_v, cols)
        q_y.enque(y_v)
        q_x.free_tensor(x_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[r * cols:], y_o, cols)
        q_y.free_tensor(y_o)
    q_g.free_tensor(g_v)
