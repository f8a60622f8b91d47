import cadquery as cq

# dimensions (mm)
BASE_L = 90.0
WIDTH = 30.0
BASE_H = 15.0
BOSS_D = 50.0
AXIS_H = 35.0
BORE_D = 30.0
HOLE_D = 10.0
HOLE_PITCH = 70.0
HOLE_COUNT = 2

body = (
    cq.Workplane("XY")
    .box(BOSS_D, WIDTH, AXIS_H, centered=(True, True, False))
)

boss = (
    cq.Workplane("XZ", origin=(0, 0, AXIS_H))
    .circle(BOSS_D / 2)
    .extrude(WIDTH / 2, both=True)
)

result = (
    cq.Workplane("XY")
    .box(BASE_L, WIDTH, BASE_H, centered=(True, True, False))
    .union(body)
    .union(boss)
    .faces("<Z")
    .workplane()
    .rarray(HOLE_PITCH, 1, HOLE_COUNT, 1)
    .hole(HOLE_D)
    .faces(">Y")
    .workplane(origin=(0, 0, 0))
    .pushPoints([(0, AXIS_H)])
    .hole(BORE_D)
)
