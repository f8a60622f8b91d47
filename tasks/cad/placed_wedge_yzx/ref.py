import cadquery as cq

# dimensions (mm)
LENGTH = 40.0
HEIGHT = 25.0
WIDTH = 24.0
HOLE_D = 8.0
HOLE_X = 12.0

# placement (degrees, applied in the order YZX)
ANGLE_Y = 30.0
ANGLE_Z = 60.0
ANGLE_X = 20.0

result = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (LENGTH, 0), (0, HEIGHT)])
    .close()
    .extrude(WIDTH / 2, both=True)
    .faces("<Z")
    .workplane()
    .pushPoints([(HOLE_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
)
