import math

import cadquery as cq

# dimensions (mm)
ACROSS_FLATS = 17.0
THICK = 8.0
BORE_D = 10.0
CHAMFER = 1.0

result = (
    cq.Workplane("XY")
    .polygon(6, ACROSS_FLATS / math.cos(math.radians(30)))
    .extrude(THICK)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
    .edges("%CIRCLE")
    .chamfer(CHAMFER)
)
