import cadquery as cq

# dimensions (mm)
D1 = 30.0
L1 = 40.0
D2 = 40.0
L2 = 15.0
D3 = 25.0
L3 = 45.0
CHAMFER = 3.0

result = (
    cq.Workplane("XY")
    .circle(D1 / 2)
    .extrude(L1)
    .faces(">Z")
    .workplane()
    .circle(D2 / 2)
    .extrude(L2)
    .faces(">Z")
    .workplane()
    .circle(D3 / 2)
    .extrude(L3)
    .faces(">Z")
    .chamfer(CHAMFER)
    .faces("<Z")
    .chamfer(CHAMFER)
)
