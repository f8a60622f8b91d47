import cadquery as cq

# dimensions (mm)
FLANGE_L = 25.0
HEIGHT = 30.0
THICK = 4.0
WIDTH = 20.0
HOLE_D = 6.0
TOP_HOLE_X = 36.0
BOTTOM_HOLE_X = 10.0

# placement (degrees, applied in the order YXZ)
ANGLE_Y = 20.0
ANGLE_X = 35.0
ANGLE_Z = 70.0

result = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (FLANGE_L, 0), (FLANGE_L, HEIGHT - THICK), (2 * FLANGE_L - THICK, HEIGHT - THICK), (2 * FLANGE_L - THICK, HEIGHT), (FLANGE_L - THICK, HEIGHT), (FLANGE_L - THICK, THICK), (0, THICK)])
    .close()
    .extrude(WIDTH / 2, both=True)
    .faces(">Z")
    .workplane()
    .pushPoints([(TOP_HOLE_X, 0)])
    .hole(HOLE_D)
    .faces("<Z")
    .workplane()
    .pushPoints([(BOTTOM_HOLE_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
)
