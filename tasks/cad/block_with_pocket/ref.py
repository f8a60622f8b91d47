import cadquery as cq

# dimensions (mm)
LENGTH = 60.0
WIDTH = 40.0
HEIGHT = 25.0
CHAMFER = 2.0
POCKET_L = 40.0
POCKET_W = 20.0
POCKET_DEPTH = 10.0
HOLE_D = 8.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT, centered=(True, True, False))
    .edges(">Z")
    .chamfer(CHAMFER)
    .faces(">Z")
    .workplane()
    .rect(POCKET_L, POCKET_W)
    .cutBlind(-POCKET_DEPTH)
    .faces(">Z")
    .workplane()
    .hole(HOLE_D)
)
