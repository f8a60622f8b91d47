import cadquery as cq

# dimensions (mm)
OUTER_D = 30.0
INNER_D = 13.0
THICK = 3.0
CHAMFER = 1.0

result = (
    cq.Workplane("XY")
    .circle(OUTER_D / 2)
    .circle(INNER_D / 2)
    .extrude(THICK)
    .edges(">Z")
    .chamfer(CHAMFER)
)
