import cadquery as cq

# dimensions (mm)
LENGTH = 70.0
WIDTH = 40.0
THICK = 8.0
SLOT_L = 24.0
SLOT_W = 8.0
SLOT_X = -15.0
HOLE_D = 10.0
HOLE_X = 20.0
ANGLE_Y = 90.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK, centered=(True, True, False))
    .faces(">Z")
    .workplane()
    .pushPoints([(SLOT_X, 0)])
    .slot2D(SLOT_L, SLOT_W)
    .cutThruAll()
    .faces(">Z")
    .workplane()
    .pushPoints([(HOLE_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
)
