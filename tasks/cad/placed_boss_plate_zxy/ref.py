import cadquery as cq

# dimensions (mm)
LENGTH = 60.0
WIDTH = 30.0
THICK = 8.0
BOSS_D = 16.0
BOSS_H = 12.0
BOSS_X = 18.0
HOLE_D = 7.0

# placement (degrees, applied in the order ZXY)
ANGLE_Z = 35.0
ANGLE_X = 20.0
ANGLE_Y = 50.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK, centered=(True, True, False))
    .faces(">Z")
    .workplane()
    .pushPoints([(BOSS_X, 0)])
    .circle(BOSS_D / 2)
    .extrude(BOSS_H)
    .faces("<Z")
    .workplane()
    .pushPoints([(BOSS_X, 0), (-BOSS_X, 0)])
    .hole(HOLE_D)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
)
