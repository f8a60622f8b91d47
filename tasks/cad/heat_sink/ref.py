import cadquery as cq

# dimensions (mm)
BASE_L = 60.0
WIDTH = 50.0
BASE_T = 6.0
FIN_T = 2.5
FIN_H = 20.0
FIN_PITCH = 9.0
FIN_COUNT = 7

result = (
    cq.Workplane("XY")
    .box(BASE_L, WIDTH, BASE_T, centered=(True, True, False))
    .faces(">Z")
    .workplane()
    .rarray(FIN_PITCH, 1, FIN_COUNT, 1)
    .rect(FIN_T, WIDTH)
    .extrude(FIN_H)
)
