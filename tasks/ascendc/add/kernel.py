import asc

BUFFERS = 2


@asc.jit
def add_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
               block_length: int, tile: asc.ConstExpr[int]):
    base = asc.get_block_idx() * block_length
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base)
    yg.set_global_buffer(y + base)
    zg.set_global_buffer(z + base)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    qy = asc.TQue(asc.TPosition.VECIN, BUFFERS)
    qz = asc.TQue(asc.TPosition.VECOUT, BUFFERS)
    pipe.init_buffer(qx, BUFFERS, tile * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFERS, tile * y.dtype.sizeof())
    pipe.init_buffer(qz, BUFFERS, tile * z.dtype.sizeof())
    for i in range(block_length // tile):
        xl = qx.alloc_tensor(x.dtype)
        yl = qy.alloc_tensor(y.dtype)
        asc.data_copy(xl, xg[i * tile:], tile)
        asc.data_copy(yl, yg[i * tile:], tile)
        qx.enque(xl)
        qy.enque(yl)
        xv = qx.deque(x.dtype)
        yv = qy.deque(y.dtype)
        zl = qz.alloc_tensor(z.dtype)
        asc.add(zl, xv, yv, tile)
        qz.enque(zl)
        qx.free_tensor(xv)
        qy.free_tensor(yv)
        zv = qz.deque(z.dtype)
        asc.data_copy(zg[i * tile:], zv, tile)
        qz.free_tensor(zv)
