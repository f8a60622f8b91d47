import cadquery as cq

# dimensions (mm)
BASE_SIZE = 40.0
TOP_SIZE = 24.0
HEIGHT = 50.0
TWIST = 30.0
HOLE_D = 10.0

result = (
    cq.Workplane("XY")
    .rect(BASE_SIZE, BASE_SIZE)
    .workplane(offset=HEIGHT)
    .transformed(rotate=(0, 0, TWIST))
    .rect(TOP_SIZE, TOP_SIZE)
    .loft(combine=True)
    .faces(">Z")
    .workplane()
    .hole(HOLE_D)
)
