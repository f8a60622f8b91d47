import cadquery as cq

# dimensions (mm)
D1 = 20.0
D2 = 32.0
D3 = 24.0
Z1 = 30.0
Z2 = 50.0
Z3 = 95.0

result = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (D1 / 2, 0), (D1 / 2, Z1), (D2 / 2, Z1), (D2 / 2, Z2), (D3 / 2, Z2), (D3 / 2, Z3), (0, Z3)])
    .close()
    .revolve(360, (0, 0, 0), (0, 1, 0))
)
