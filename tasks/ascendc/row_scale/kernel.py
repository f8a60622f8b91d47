import asc


@asc.jit
def row_scale_kernel(
    x: asc.GlobalAddress,
    s: asc.GlobalAddress,
    y: asc.GlobalAddress,
    rows_per_core: int,
    cols: asc.ConstExpr[int],
):
    row0 = asc.get_block_idx() * rows_per_core
    x_gm = asc.GlobalTensor()
    s_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + row0 * cols)
    s_gm.set_global_buffer(s + row0)
    y_gm.set_global_buffer(y + row0 * cols)
    pipe = asc.TPipe()
    q_x = asc.TQue(asc.TPosition.VECIN, 2)
    q_y = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(q_x, 2, cols * x.dtype.sizeof())
    pipe.init_buffer(q_y, 2, cols * y.dtype.sizeof())
    for r in range(rows_per_core):
        # one scale per row, read by the scalar unit and broadcast by the vector op
        scale = s_gm.get_value(r)
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[r * cols:], cols)
        q_x.enque(x_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.alloc_tensor(y.dtype)
        asc.muls(y_v, x_v, scale, cols)
        q_y.enque(y_v)
        q_x.free_tensor(x_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[r * cols:], y_o, cols)
        q_y.free_tensor(y_o)
