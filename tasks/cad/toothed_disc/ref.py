import cadquery as cq

# dimensions (mm)
DISC_D = 60.0
THICK = 8.0
TOOTH_COUNT = 12
TOOTH_R = 32.0
TOOTH_RADIAL = 8.0
TOOTH_W = 6.0
BORE_D = 12.0

result = (
    cq.Workplane("XY")
    .circle(DISC_D / 2)
    .extrude(THICK)
    .faces(">Z")
    .workplane()
    .polarArray(TOOTH_R, 0, 360, TOOTH_COUNT)
    .rect(TOOTH_RADIAL, TOOTH_W)
    .extrude(-THICK)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
)
