import asc

GROUP = 8  # rows per output copy: 8 float32 results fill one 32-byte block


@asc.jit
def row_mean_kernel(
    x: asc.GlobalAddress, y: asc.GlobalAddress, rows_per_core: int, cols: asc.ConstExpr[int]
):
    inv_cols = 1.0 / cols
    row0 = asc.get_block_idx() * rows_per_core
    x_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + row0 * cols)
    y_gm.set_global_buffer(y + row0)
    pipe = asc.TPipe()
    q_x = asc.TQue(asc.TPosition.VECIN, 2)
    q_y = asc.TQue(asc.TPosition.VECOUT, 1)
    res = asc.TBuf(asc.TPosition.VECCALC)
    work = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(q_x, 2, cols * x.dtype.sizeof())
    pipe.init_buffer(q_y, 1, GROUP * y.dtype.sizeof())
    pipe.init_buffer(res, 32)
    pipe.init_buffer(work, cols * x.dtype.sizeof())
    for g in range(rows_per_core // GROUP):
        y_v = q_y.alloc_tensor(y.dtype)
        for j in range(GROUP):
            x_in = q_x.alloc_tensor(x.dtype)
            asc.data_copy(x_in, x_gm[(g * GROUP + j) * cols:], cols)
            q_x.enque(x_in)
            x_v = q_x.deque(x.dtype)
            r = res.get(x.dtype)
            asc.reduce_sum(r, x_v, work.get(x.dtype), cols)
            q_x.free_tensor(x_v)
            # the vector unit's result is read by the scalar unit
            asc.set_flag(asc.HardEvent.V_S, 0)
            asc.wait_flag(asc.HardEvent.V_S, 0)
            y_v.set_value(j, r.get_value(0) * inv_cols)
        # the scalar unit's writes are copied out by MTE3
        asc.set_flag(asc.HardEvent.S_MTE3, 0)
        asc.wait_flag(asc.HardEvent.S_MTE3, 0)
        q_y.enque(y_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[g * GROUP:], y_o, GROUP)
        q_y.free_tensor(y_o)
