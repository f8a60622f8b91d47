import cadquery as cq

# dimensions (mm)
LENGTH = 100.0
WIDTH = 50.0
THICK = 8.0
SLOT_L = 30.0
SLOT_W = 10.0
SLOT_PITCH = 60.0
SLOT_COUNT = 2
HOLE_D = 12.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK)
    .faces(">Z")
    .workplane()
    .rarray(SLOT_PITCH, 1, SLOT_COUNT, 1)
    .slot2D(SLOT_L, SLOT_W)
    .cutThruAll()
    .faces(">Z")
    .workplane()
    .hole(HOLE_D)
)
