import cadquery as cq

# dimensions (mm)
FLANGE_D = 40.0
FLANGE_T = 6.0
SLEEVE_D = 24.0
SLEEVE_L = 24.0
BORE_D = 16.0

result = (
    cq.Workplane("XY")
    .circle(FLANGE_D / 2)
    .extrude(FLANGE_T)
    .faces(">Z")
    .workplane()
    .circle(SLEEVE_D / 2)
    .extrude(SLEEVE_L)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
)
