import cadquery as cq

# dimensions (mm)
LENGTH = 40.0
WIDTH = 30.0
HEIGHT = 45.0
TOP_R = 8.0
GAP = 14.0
SLOT_DEPTH = 30.0
PIN_D = 10.0
PIN_Z = 33.0
BASE_HOLE_D = 10.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT, centered=(True, True, False))
    .edges("|Y and >Z")
    .fillet(TOP_R)
    .faces(">Z")
    .workplane()
    .rect(2 * LENGTH, GAP)
    .cutBlind(-SLOT_DEPTH)
    .faces(">Y")
    .workplane(origin=(0, 0, 0))
    .pushPoints([(0, PIN_Z)])
    .hole(PIN_D)
    .faces("<Z")
    .workplane(origin=(0, 0, 0))
    .hole(BASE_HOLE_D)
)
