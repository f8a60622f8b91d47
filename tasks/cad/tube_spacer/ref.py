import cadquery as cq

# dimensions (mm)
OUTER_D = 20.0
LENGTH = 25.0
BORE_D = 10.5
CHAMFER = 1.0

result = (
    cq.Workplane("XY")
    .cylinder(LENGTH, OUTER_D / 2)
    .edges("%CIRCLE")
    .chamfer(CHAMFER)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
)
