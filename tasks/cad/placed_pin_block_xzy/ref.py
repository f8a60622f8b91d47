import cadquery as cq

# dimensions (mm)
LENGTH = 30.0
WIDTH = 20.0
HEIGHT = 12.0
PIN_D = 8.0
PIN_L = 20.0
PIN_Y = 4.0
HOLE_D = 6.0
HOLE_X = -8.0
HOLE_Y = -4.0

# placement (degrees, applied in the order XZY)
ANGLE_X = 40.0
ANGLE_Z = 30.0
ANGLE_Y = 15.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT)
    .faces(">X")
    .workplane()
    .pushPoints([(PIN_Y, 0)])
    .circle(PIN_D / 2)
    .extrude(PIN_L)
    .faces(">Z")
    .workplane(origin=(0, 0, 0))
    .pushPoints([(HOLE_X, HOLE_Y)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
)
