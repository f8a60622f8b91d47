import cadquery as cq

# dimensions (mm)
FLANGE_D = 100.0
FLANGE_T = 12.0
HUB_D = 50.0
HUB_H = 20.0
BORE_D = 30.0
BOLT_D = 10.0
BOLT_CIRCLE_D = 76.0
BOLT_COUNT = 6

result = (
    cq.Workplane("XY")
    .circle(FLANGE_D / 2)
    .extrude(FLANGE_T)
    .faces(">Z")
    .workplane()
    .polarArray(BOLT_CIRCLE_D / 2, 0, 360, BOLT_COUNT)
    .hole(BOLT_D)
    .faces(">Z")
    .workplane()
    .circle(HUB_D / 2)
    .extrude(HUB_H)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
)
