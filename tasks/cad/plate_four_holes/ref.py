import cadquery as cq

# dimensions (mm)
LENGTH = 80.0
WIDTH = 60.0
THICK = 10.0
CORNER_R = 6.0
HOLE_D = 8.0
HOLE_PITCH_X = 60.0
HOLE_PITCH_Y = 40.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK)
    .edges("|Z")
    .fillet(CORNER_R)
    .faces(">Z")
    .workplane()
    .rect(HOLE_PITCH_X, HOLE_PITCH_Y, forConstruction=True)
    .vertices()
    .hole(HOLE_D)
)
