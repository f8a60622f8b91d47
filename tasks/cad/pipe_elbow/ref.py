import math

import cadquery as cq

# dimensions (mm)
OUTER_D = 20.0
INNER_D = 14.0
BEND_R = 40.0
LEG_1 = 20.0
LEG_2 = 20.0

path = (
    cq.Workplane("XZ")
    .lineTo(0, LEG_1)
    .threePointArc((BEND_R - BEND_R * math.cos(math.radians(45)), LEG_1 + BEND_R * math.sin(math.radians(45))), (BEND_R, LEG_1 + BEND_R))
    .lineTo(BEND_R + LEG_2, LEG_1 + BEND_R)
)

result = (
    cq.Workplane("XY")
    .circle(OUTER_D / 2)
    .circle(INNER_D / 2)
    .sweep(path)
)
