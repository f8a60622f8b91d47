import cadquery as cq

# dimensions (mm)
LENGTH = 80.0
WIDTH = 60.0
HEIGHT = 40.0
CORNER_R = 8.0
WALL = 3.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT, centered=(True, True, False))
    .edges("|Z")
    .fillet(CORNER_R)
    .faces(">Z")
    .shell(-WALL)
)
