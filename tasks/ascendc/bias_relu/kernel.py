import asc


@asc.jit
def bias_relu_kernel(
    x: asc.GlobalAddress,
    b: asc.GlobalAddress,
    y: asc.GlobalAddress,
    rows_per_core: int,
    cols: asc.ConstExpr[int],
):
    offset = asc.get_block_idx() * rows_per_core * cols
    x_gm = asc.GlobalTensor()
    b_gm = asc.GlobalTensor()
    y_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + offset)
    b_gm.set_global_buffer(b)
    y_gm.set_global_buffer(y + offset)
    pipe = asc.TPipe()
    q_b = asc.TQue(asc.TPosition.VECIN, 1)
    q_x = asc.TQue(asc.TPosition.VECIN, 2)
    q_y = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(q_b, 1, cols * b.dtype.sizeof())
    pipe.init_buffer(q_x, 2, cols * x.dtype.sizeof())
    pipe.init_buffer(q_y, 2, cols * y.dtype.sizeof())
    # the bias row is loaded once and added to every row of this core
    b_in = q_b.alloc_tensor(b.dtype)
    asc.data_copy(b_in, b_gm, cols)
    q_b.enque(b_in)
    b_v = q_b.deque(b.dtype)
    for r in range(rows_per_core):
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[r * cols:], cols)
        q_x.enque(x_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.alloc_tensor(y.dtype)
        asc.add(y_v, x_v, b_v, cols)
        asc.relu(y_v, y_v, cols)
        q_y.enque(y_v)
        q_x.free_tensor(x_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[r * cols:], y_o, cols)
        q_y.free_tensor(y_o)
    q_b.free_tensor(b_v)
