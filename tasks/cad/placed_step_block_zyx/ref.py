import cadquery as cq

# dimensions (mm)
LENGTH = 40.0
WIDTH = 30.0
HEIGHT = 20.0
STEP_L = 20.0
STEP_H = 10.0
HOLE_D = 8.0
HOLE_X = -10.0

# placement (degrees, applied in the order ZYX)
ANGLE_Z = 25.0
ANGLE_Y = 40.0
ANGLE_X = 15.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT, centered=(True, True, False))
    .faces(">Z")
    .workplane()
    .center(LENGTH / 2 - STEP_L / 2, 0)
    .rect(STEP_L, WIDTH)
    .cutBlind(-STEP_H)
    .faces(">Z")
    .workplane(origin=(0, 0, 0))
    .pushPoints([(HOLE_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
)
