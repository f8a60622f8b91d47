import cadquery as cq

# dimensions (mm)
LENGTH = 100.0
WIDTH = 60.0
THICK = 15.0
CORNER_R = 5.0
HOLE_D = 9.0
CBORE_D = 15.0
CBORE_DEPTH = 6.0
HOLE_PITCH_X = 80.0
HOLE_PITCH_Y = 40.0
HOLE_NX = 2
HOLE_NY = 2

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK, centered=(True, True, False))
    .edges("|Z")
    .fillet(CORNER_R)
    .faces(">Z")
    .workplane()
    .rarray(HOLE_PITCH_X, HOLE_PITCH_Y, HOLE_NX, HOLE_NY)
    .cboreHole(HOLE_D, CBORE_D, CBORE_DEPTH)
)
