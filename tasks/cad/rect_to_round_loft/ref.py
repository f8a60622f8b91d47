import cadquery as cq

# dimensions (mm)
RECT_L = 60.0
RECT_W = 40.0
TOP_D = 30.0
HEIGHT = 50.0
HOLE_D = 12.0

result = (
    cq.Workplane("XY")
    .rect(RECT_L, RECT_W)
    .workplane(offset=HEIGHT)
    .circle(TOP_D / 2)
    .loft(combine=True)
    .faces(">Z")
    .workplane()
    .hole(HOLE_D)
)
