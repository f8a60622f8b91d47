import cadquery as cq

# dimensions (mm)
BASE_L = 60.0
HEIGHT = 50.0
WIDTH = 40.0
THICK = 8.0
HOLE_D = 10.0
BASE_HOLE_X = 36.0
UPRIGHT_HOLE_Z = 32.0

result = (
    cq.Workplane("XY")
    .box(BASE_L, WIDTH, THICK, centered=(False, True, False))
    .union(cq.Workplane("XY").box(THICK, WIDTH, HEIGHT, centered=(False, True, False)))
    .faces(">Z")
    .workplane()
    .pushPoints([(BASE_HOLE_X, 0)])
    .hole(HOLE_D)
    .faces("<X")
    .workplane(origin=(0, 0, 0))
    .pushPoints([(0, UPRIGHT_HOLE_Z)])
    .hole(HOLE_D)
)
