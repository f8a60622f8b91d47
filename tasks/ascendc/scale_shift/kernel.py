import asc

BUFFERS = 2


@asc.jit
def scale_shift_kernel(
    x: asc.GlobalAddress,
    y: asc.GlobalAddress,
    block_length: int,
    tile: asc.ConstExpr[int],
    scale: float,
    shift: float,
):
    base = asc.get_block_idx() * block_length
    x_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + base)
    y_gm = asc.GlobalTensor()
    y_gm.set_global_buffer(y + base)
    pipe = asc.TPipe()
    q_x = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    q_y = asc.TQue(asc.TPosition.VECOUT, BUFFERS)
    pipe.init_buffer(q_x, BUFFERS, tile * x.dtype.sizeof())
    pipe.init_buffer(q_y, BUFFERS, tile * y.dtype.sizeof())
    for i in range(block_length // tile):
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[i * tile:], tile)
        q_x.enque(x_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.alloc_tensor(y.dtype)
        asc.muls(y_v, x_v, scale, tile)
        asc.adds(y_v, y_v, shift, tile)
        q_y.enque(y_v)
        q_x.free_tensor(x_v)
        y_o = q_y.deque(y.dtype)
        asc.data_copy(y_gm[i * tile:], y_o, tile)
        q_y.free_tensor(y_o)
