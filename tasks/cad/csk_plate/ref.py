import cadquery as cq

# dimensions (mm)
LENGTH = 120.0
WIDTH = 40.0
THICK = 10.0
CORNER_CHAMFER = 6.0
HOLE_D = 8.0
CSK_D = 16.0
CSK_ANGLE = 90.0
HOLE_PITCH = 40.0
HOLE_COUNT = 3

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK)
    .edges("|Z")
    .chamfer(CORNER_CHAMFER)
    .faces(">Z")
    .workplane()
    .rarray(HOLE_PITCH, 1, HOLE_COUNT, 1)
    .cskHole(HOLE_D, CSK_D, CSK_ANGLE)
)
