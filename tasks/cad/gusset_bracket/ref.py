import cadquery as cq

# dimensions (mm)
BASE_L = 80.0
HEIGHT = 60.0
WIDTH = 60.0
THICK = 8.0
GUSSET = 40.0
GUSSET_T = 8.0
SLOT_L = 20.0
SLOT_W = 9.0
SLOT_X = 55.0
SLOT_PITCH = 40.0
SLOT_COUNT = 2
HOLE_D = 9.0
HOLE_Z = 40.0
HOLE_PITCH = 40.0
HOLE_COUNT = 2

upright = (
    cq.Workplane("XY")
    .box(THICK, WIDTH, HEIGHT, centered=(False, True, False))
)

gusset = (
    cq.Workplane("XZ")
    .polyline([(THICK, THICK), (THICK + GUSSET, THICK), (THICK, THICK + GUSSET)])
    .close()
    .extrude(GUSSET_T / 2, both=True)
)

result = (
    cq.Workplane("XY")
    .box(BASE_L, WIDTH, THICK, centered=(False, True, False))
    .union(upright)
    .union(gusset)
    .faces(">Z")
    .workplane()
    .center(SLOT_X, 0)
    .rarray(1, SLOT_PITCH, 1, SLOT_COUNT)
    .slot2D(SLOT_L, SLOT_W)
    .cutThruAll()
    .faces("<X")
    .workplane(origin=(0, 0, 0))
    .center(0, HOLE_Z)
    .rarray(HOLE_PITCH, 1, HOLE_COUNT, 1)
    .hole(HOLE_D)
)
