import cadquery as cq

# dimensions (mm)
LENGTH = 100.0
WIDTH = 70.0
HEIGHT = 40.0
CORNER_R = 6.0
WALL = 3.0
VENT_D = 10.0
VENT_PITCH = 18.0
VENT_NX = 4
VENT_NY = 3
CUTOUT_W = 24.0
CUTOUT_H = 12.0
CUTOUT_Z = 20.0
CUTOUT_DEPTH = 10.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT, centered=(True, True, False))
    .edges("|Z")
    .fillet(CORNER_R)
    .faces("<Z")
    .shell(-WALL)
    .faces(">Z")
    .workplane()
    .rarray(VENT_PITCH, VENT_PITCH, VENT_NX, VENT_NY)
    .hole(VENT_D)
    .faces(">X")
    .workplane(origin=(0, 0, 0))
    .center(0, CUTOUT_Z)
    .rect(CUTOUT_W, CUTOUT_H)
    .cutBlind(-CUTOUT_DEPTH)
)
