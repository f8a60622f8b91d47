import asc

BUFFERS = 2


@asc.jit
def fma_kernel(
    x: asc.GlobalAddress,
    y: asc.GlobalAddress,
    z: asc.GlobalAddress,
    w: asc.GlobalAddress,
    block_length: int,
    tile: asc.ConstExpr[int],
):
    base = asc.get_block_idx() * block_length
    x_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + base)
    y_gm = asc.GlobalTensor()
    y_gm.set_global_buffer(y + base)
    z_gm = asc.GlobalTensor()
    z_gm.set_global_buffer(z + base)
    w_gm = asc.GlobalTensor()
    w_gm.set_global_buffer(w + base)
    pipe = asc.TPipe()
    q_x = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    q_y = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    q_z = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    q_w = asc.TQue(asc.TPosition.VECOUT, BUFFERS)
    pipe.init_buffer(q_x, BUFFERS, tile * x.dtype.sizeof())
    pipe.init_buffer(q_y, BUFFERS, tile * y.dtype.sizeof())
    pipe.init_buffer(q_z, BUFFERS, tile * z.dtype.sizeof())
    pipe.init_buffer(q_w, BUFFERS, tile * w.dtype.sizeof())
    for i in range(block_length // tile):
        x_in = q_x.alloc_tensor(x.dtype)
        asc.data_copy(x_in, x_gm[i * tile:], tile)
        q_x.enque(x_in)
        y_in = q_y.alloc_tensor(y.dtype)
        asc.data_copy(y_in, y_gm[i * tile:], tile)
        q_y.enque(y_in)
        z_in = q_z.alloc_tensor(z.dtype)
        asc.data_copy(z_in, z_gm[i * tile:], tile)
        q_z.enque(z_in)
        x_v = q_x.deque(x.dtype)
        y_v = q_y.deque(y.dtype)
        z_v = q_z.deque(z.dtype)
        w_v = q_w.alloc_tensor(w.dtype)
        asc.mul(w_v, x_v, y_v, tile)
        asc.add(w_v, w_v, z_v, tile)
        q_w.enque(w_v)
        q_x.free_tensor(x_v)
        q_y.free_tensor(y_v)
        q_z.free_tensor(z_v)
        w_o = q_w.deque(w.dtype)
        asc.data_copy(w_gm[i * tile:], w_o, tile)
        q_w.free_tensor(w_o)
