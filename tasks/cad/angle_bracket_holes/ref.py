import cadquery as cq

# dimensions (mm)
BASE_LEG = 60.0
UPRIGHT_LEG = 40.0
THICK = 6.0
WIDTH = 60.0
HOLE_D = 7.0
HOLE_PITCH = 30.0
HOLE_COUNT = 2
BASE_HOLE_X = 33.0
UPRIGHT_HOLE_Z = 23.0

result = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (BASE_LEG, 0), (BASE_LEG, THICK), (THICK, THICK), (THICK, UPRIGHT_LEG), (0, UPRIGHT_LEG)])
    .close()
    .extrude(WIDTH / 2, both=True)
    .faces(">Z")
    .workplane()
    .center(BASE_HOLE_X, 0)
    .rarray(1, HOLE_PITCH, 1, HOLE_COUNT)
    .hole(HOLE_D)
    .faces("<X")
    .workplane(origin=(0, 0, 0))
    .center(0, UPRIGHT_HOLE_Z)
    .rarray(HOLE_PITCH, 1, HOLE_COUNT, 1)
    .hole(HOLE_D)
)
