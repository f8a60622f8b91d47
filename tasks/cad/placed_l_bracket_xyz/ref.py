import cadquery as cq

# dimensions (mm)
BASE_L = 50.0
HEIGHT = 40.0
WIDTH = 30.0
THICK = 6.0
HOLE_D = 8.0
HOLE_X = 30.0

# placement (degrees, applied in the order XYZ)
ANGLE_X = 30.0
ANGLE_Y = 45.0
ANGLE_Z = 60.0

result = (
    cq.Workplane("XY")
    .box(BASE_L, WIDTH, THICK, centered=(False, True, False))
    .union(cq.Workplane("XY").box(THICK, WIDTH, HEIGHT, centered=(False, True, False)))
    .faces(">Z")
    .workplane()
    .pushPoints([(HOLE_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
)
