import cadquery as cq

# dimensions (mm)
OUTER_D = 80.0
WIDTH = 20.0
BORE_D = 16.0
GROOVE_D = 60.0
GROOVE_TOP_W = 14.0
GROOVE_BOTTOM_W = 4.0

result = (
    cq.Workplane("XZ")
    .polyline([
        (BORE_D / 2, 0),
        (OUTER_D / 2, 0),
        (OUTER_D / 2, (WIDTH - GROOVE_TOP_W) / 2),
        (GROOVE_D / 2, (WIDTH - GROOVE_BOTTOM_W) / 2),
        (GROOVE_D / 2, (WIDTH + GROOVE_BOTTOM_W) / 2),
        (OUTER_D / 2, (WIDTH + GROOVE_TOP_W) / 2),
        (OUTER_D / 2, WIDTH),
        (BORE_D / 2, WIDTH),
    ])
    .close()
    .revolve(360, (0, 0, 0), (0, 1, 0))
)
