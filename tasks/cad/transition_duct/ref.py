import cadquery as cq

# dimensions (mm)
FLANGE_L = 80.0
FLANGE_W = 60.0
FLANGE_T = 6.0
HOLE_D = 8.0
HOLE_PITCH_X = 66.0
HOLE_PITCH_Y = 46.0
DUCT_L = 54.0
DUCT_W = 34.0
DUCT_D = 34.0
DUCT_H = 56.0
WALL = 2.0

outer = (
    cq.Workplane("XY")
    .rect(DUCT_L, DUCT_W)
    .workplane(offset=DUCT_H)
    .circle(DUCT_D / 2)
    .loft(combine=True)
)

inner = (
    cq.Workplane("XY")
    .rect(DUCT_L - 2 * WALL, DUCT_W - 2 * WALL)
    .workplane(offset=DUCT_H)
    .circle(DUCT_D / 2 - WALL)
    .loft(combine=True)
)

result = (
    cq.Workplane("XY")
    .box(FLANGE_L, FLANGE_W, FLANGE_T, centered=(True, True, False))
    .faces(">Z")
    .workplane()
    .rect(HOLE_PITCH_X, HOLE_PITCH_Y, forConstruction=True)
    .vertices()
    .hole(HOLE_D)
    .union(outer)
    .cut(inner)
)
