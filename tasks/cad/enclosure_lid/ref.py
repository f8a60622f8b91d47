import cadquery as cq

# dimensions (mm)
PLATE_L = 84.0
PLATE_W = 64.0
PLATE_T = 4.0
CORNER_R = 6.0
LIP_L = 78.0
LIP_W = 58.0
LIP_WALL = 2.0
LIP_H = 6.0
HOLE_D = 5.0
HOLE_PITCH_X = 60.0
HOLE_PITCH_Y = 40.0

result = (
    cq.Workplane("XY")
    .box(PLATE_L, PLATE_W, PLATE_T, centered=(True, True, False))
    .edges("|Z")
    .fillet(CORNER_R)
    .faces("<Z")
    .workplane()
    .rect(LIP_L, LIP_W)
    .rect(LIP_L - 2 * LIP_WALL, LIP_W - 2 * LIP_WALL)
    .extrude(LIP_H)
    .faces(">Z")
    .workplane()
    .rect(HOLE_PITCH_X, HOLE_PITCH_Y, forConstruction=True)
    .vertices()
    .hole(HOLE_D)
)
