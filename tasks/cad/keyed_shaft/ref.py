import cadquery as cq

# dimensions (mm)
SHAFT_D = 20.0
LENGTH = 80.0
KEY_W = 6.0
KEY_DEPTH = 3.5
KEY_L = 30.0

keyway = (
    cq.Workplane("XY")
    .box(KEY_W, SHAFT_D, KEY_L, centered=(True, False, False))
    .translate((0, SHAFT_D / 2 - KEY_DEPTH, 0))
)

result = (
    cq.Workplane("XY")
    .circle(SHAFT_D / 2)
    .extrude(LENGTH)
    .cut(keyway)
)
