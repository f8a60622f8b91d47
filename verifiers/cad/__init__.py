"""CAD (CadQuery) verification by exact geometry: warm workers, OCC booleans, pictures."""
